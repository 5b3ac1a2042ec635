"""paddle.summary: run one forward pass with hooks and print Paddle's table
(Layer (type) / Input Shape / Output Shape / Param #, totals and sizes)."""
import collections
import numbers

import numpy as np

from paddle._lazy import paddle as _paddle

__all__ = ['summary']


def _is_shape(shape):
    return all(not isinstance(i, (list, tuple)) for i in shape)


def _check_shape(shape):
    num_unknown = 0
    out = []
    for item in shape:
        if item is None or item == -1:
            num_unknown += 1
            if num_unknown > 1:
                raise ValueError('Option input_size only the dim of batch_size can be None '
                                 'or -1.')
            item = 1
        elif isinstance(item, numbers.Number):
            if item <= 0:
                raise ValueError("Expected element in input size greater than zero, but got "
                                 "{}".format(item))
        out.append(int(item))
    return tuple(out)


def _check_input(input_size):
    if isinstance(input_size, (list, tuple)) and _is_shape(input_size):
        return _check_shape(input_size)
    return [_check_input(i) for i in input_size]


def summary(net, input_size=None, dtypes=None, input=None):
    """Print the table and return {'total_params': n, 'trainable_params': m}."""
    from ..static import InputSpec
    paddle = _paddle()
    if input_size is None and input is None:
        raise ValueError("input_size and input cannot be None at the same time")
    if input_size is None:
        if isinstance(input, paddle.Tensor):
            input_size = tuple(input.shape)
        elif isinstance(input, (list, tuple)):
            input_size = [tuple(x.shape) for x in input]
        elif isinstance(input, dict):
            input_size = [tuple(v.shape) for v in input.values()]
        else:
            raise ValueError("Input is not tensor, list, tuple and dict, unable to determine "
                             "input_size, please input input_size.")
    if isinstance(input_size, InputSpec):
        _input_size = tuple(input_size.shape)
    elif isinstance(input_size, list):
        _input_size = []
        for item in input_size:
            if isinstance(item, int):
                item = (item,)
            if not isinstance(item, (tuple, InputSpec)):
                raise TypeError("When input_size is list, expect item in input_size is a tuple "
                                "or InputSpec, but got {}".format(type(item)))
            _input_size.append(tuple(item.shape) if isinstance(item, InputSpec) else item)
    elif isinstance(input_size, int):
        _input_size = (input_size,)
    else:
        _input_size = input_size
    in_train_mode = net.training
    if in_train_mode:
        net.eval()
    _input_size = _check_input(_input_size)
    try:
        result, params_info = summary_string(net, _input_size, dtypes, input)
    finally:
        if in_train_mode:
            net.train()
    print(result)
    return params_info


def _all_is_number(items):
    return all(isinstance(i, numbers.Number) for i in items)


def summary_string(model, input_size=None, dtypes=None, input=None):
    paddle = _paddle()
    from ..nn import LayerList, Sequential

    def _build_dtypes(size, dtype):
        if dtype is None:
            dtype = 'float32'
        if isinstance(size, (list, tuple)) and _all_is_number(size):
            return [dtype]
        return [_build_dtypes(i, dtype) for i in size]

    if not isinstance(dtypes, (list, tuple)):
        dtypes = _build_dtypes(input_size, dtypes)
    depth = len(list(model.sublayers()))

    def _shape_of(x):
        if isinstance(x, paddle.Tensor):
            return list(x.shape)
        if isinstance(x, (list, tuple)):
            return [_shape_of(xx) for xx in x]
        return []

    def _output_shape(output):
        if isinstance(output, (list, tuple)):
            return [_output_shape(o) for o in output]
        if hasattr(output, 'shape'):
            return list(output.shape)
        return []

    summary = collections.OrderedDict()
    hooks = []

    def register_hook(layer):
        def hook(layer, inp, output):
            class_name = type(layer).__name__
            try:
                layer_idx = int(layer._full_name.split('_')[-1])
            except (ValueError, AttributeError):
                layer_idx = len(summary)
            m_key = "%s-%i" % (class_name, layer_idx + 1)
            summary[m_key] = collections.OrderedDict()
            summary[m_key]["input_shape"] = _shape_of(inp)
            summary[m_key]["output_shape"] = _output_shape(output)
            params = 0
            summary[m_key]["trainable_params"] = 0
            trainable_flag = False
            for k, v in layer._parameters.items():
                if v is None:
                    continue
                n = int(np.prod(v.shape))
                params += n
                if getattr(v, 'trainable', not v.stop_gradient) and not v.stop_gradient:
                    summary[m_key]["trainable_params"] += n
                    summary[m_key]["trainable"] = True
                    trainable_flag = True
                elif not trainable_flag:
                    summary[m_key]["trainable"] = False
            summary[m_key]["nb_params"] = params

        if not isinstance(layer, (Sequential, LayerList)) and \
                (layer is not model or depth < 1):
            hooks.append(layer.register_forward_post_hook(hook))

    if isinstance(input_size, tuple):
        input_size = [input_size]

    def build_input(size, dt):
        if isinstance(size, (list, tuple)) and _all_is_number(size):
            d = dt[0] if isinstance(dt, (list, tuple)) else dt
            return paddle.cast(paddle.rand(list(size)), d)
        return [build_input(i, d) for i, d in zip(size, dt)]

    model.apply(register_hook)
    try:
        with paddle.no_grad():
            if input is not None:
                model(input)
            else:
                x = build_input(input_size, dtypes)
                model(*x)
    finally:
        for h in hooks:
            h.remove()

    head = {'layer_width': 15, 'input_shape_width': 20, 'output_shape_width': 20,
            'params_width': 15, 'table_width': 75}
    for layer in summary:
        head['output_shape_width'] = max(head['output_shape_width'],
                                         len(str(summary[layer]["output_shape"])))
        head['input_shape_width'] = max(head['input_shape_width'],
                                        len(str(summary[layer]["input_shape"])))
        head['layer_width'] = max(head['layer_width'], len(str(layer)))
        head['params_width'] = max(head['params_width'], len(str(summary[layer]["nb_params"])))
    tw = sum(v for k, v in head.items() if k != 'table_width')
    if head['table_width'] < tw + 5:
        head['table_width'] = tw + 5

    s = "-" * head['table_width'] + "\n"
    s += "{:^{}} {:^{}} {:^{}} {:^{}}".format(
        "Layer (type)", head['layer_width'], "Input Shape", head['input_shape_width'],
        "Output Shape", head['output_shape_width'], "Param #", head['params_width']) + "\n"
    s += "=" * head['table_width'] + "\n"
    total_params = 0
    total_output = 0
    trainable_params = 0
    for layer in summary:
        s += "{:^{}} {:^{}} {:^{}} {:^{}}".format(
            layer, head['layer_width'], str(summary[layer]["input_shape"]),
            head['input_shape_width'], str(summary[layer]["output_shape"]),
            head['output_shape_width'], "{:,}".format(summary[layer]["nb_params"]),
            head['params_width']) + "\n"
        total_params += summary[layer]["nb_params"]
        oshape = summary[layer]["output_shape"]
        try:
            total_output += int(np.sum(np.prod(oshape, axis=-1)))
        except (ValueError, TypeError):
            for o in oshape:
                try:
                    total_output += int(np.sum(np.prod(o, axis=-1)))
                except (ValueError, TypeError):
                    pass
        if summary[layer].get("trainable"):
            trainable_params += summary[layer]["trainable_params"]

    def _input_bytes(size):
        if isinstance(size, (list, tuple)) and _all_is_number(size):
            return abs(np.prod(size) * 4.0 / (1024 ** 2.0))
        return sum(_input_bytes(i) for i in size)

    total_input_size = _input_bytes(input_size)
    total_output_size = abs(2.0 * total_output * 4.0 / (1024 ** 2.0))
    total_params_size = abs(total_params * 4.0 / (1024 ** 2.0))
    total_size = total_params_size + total_output_size + total_input_size
    s += "=" * head['table_width'] + "\n"
    s += "Total params: {:,}".format(total_params) + "\n"
    s += "Trainable params: {:,}".format(trainable_params) + "\n"
    s += "Non-trainable params: {:,}".format(total_params - trainable_params) + "\n"
    s += "-" * head['table_width'] + "\n"
    s += "Input size (MB): %0.2f" % total_input_size + "\n"
    s += "Forward/backward pass size (MB): %0.2f" % total_output_size + "\n"
    s += "Params size (MB): %0.2f" % total_params_size + "\n"
    s += "Estimated Total Size (MB): %0.2f" % total_size + "\n"
    s += "-" * head['table_width'] + "\n"
    return s, {'total_params': total_params, 'trainable_params': trainable_params}
