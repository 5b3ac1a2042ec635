"""paddle.flops: count multiply-accumulates of one forward pass (Paddle's
counting rules for Linear, Conv, norms and pooling; activations count 0)."""
import numpy as np

__all__ = ['flops']


def _numel(t):
    return int(np.prod(t.shape)) if t is not None and hasattr(t, 'shape') else 0


def _count(layer, inputs, output):
    from .. import nn
    out = output[0] if isinstance(output, (list, tuple)) else output
    n = _numel(out)
    if isinstance(layer, nn.Linear):
        return layer.weight.shape[0] * n
    if isinstance(layer, (nn.Conv2D, nn.Conv1D)):
        k = int(np.prod(layer.weight.shape[2:])) * layer.weight.shape[1]
        return n * (k + (1 if layer.bias is not None else 0))
    if isinstance(layer, (nn.BatchNorm1D, nn.BatchNorm2D, nn.BatchNorm3D, nn.LayerNorm)):
        return 2 * _numel(inputs[0])
    if isinstance(layer, (nn.AvgPool2D, nn.AdaptiveAvgPool2D, nn.AvgPool1D,
                          nn.AdaptiveAvgPool1D)):
        return _numel(inputs[0])
    return 0


def flops(net, input_size, custom_ops=None, print_detail=False):
    """Total FLOPs (as Paddle counts them) of net on a random input of
    input_size; prints 'Total Flops: N     Total Params: M'."""
    import paddle
    custom_ops = custom_ops or {}
    rows = []
    hooks = []

    def hook(layer, inputs, output):
        fn = custom_ops.get(type(layer))
        ops = int(fn(layer, inputs, output)) if fn else _count(layer, inputs, output)
        params = sum(_numel(p) for p in layer._parameters.values() if p is not None)
        rows.append((layer.full_name(), ops, params))

    def register(layer):
        if not layer._sub_layers:
            hooks.append(layer.register_forward_post_hook(hook))

    was_training = net.training
    net.eval()
    net.apply(register)
    try:
        with paddle.no_grad():
            net(paddle.rand(list(input_size)))
    finally:
        for h in hooks:
            h.remove()
        if was_training:
            net.train()
    total_ops = sum(r[1] for r in rows)
    total_params = sum(_numel(p) for p in net.parameters())
    if print_detail:
        print('{:<24} {:>14} {:>12}'.format('Layer Name', 'FLOPs', 'Params'))
        for name, ops, params in rows:
            print('{:<24} {:>14} {:>12}'.format(name, ops, params))
    print('Total Flops: {}     Total Params: {}'.format(total_ops, total_params))
    return total_ops
