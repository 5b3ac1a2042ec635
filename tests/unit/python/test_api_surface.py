"""The paddle package's importable names: none disappears, and functions live
in the module where Paddle 3.x defines them.

api_surface.txt lists `module name` for every public name of every public
paddle module and of paddle.Tensor, recorded before the package was split into
Paddle's module layout (issue 13). A name may be added; removing one breaks
`import paddle` code that worked. After adding names, record them with
    PYTHONPATH=<build>/framework/python /usr/bin/python3 test_api_surface.py --write
(which keeps every name already listed).
"""
import importlib
import importlib.machinery
import os
import pkgutil
import sys
import types
import unittest

import paddle

HERE = os.path.dirname(os.path.abspath(__file__))
LIST = os.path.join(HERE, 'api_surface.txt')

# Where Paddle 3.x defines each function (paddle/tensor/*.py,
# paddle/nn/functional/*.py): module -> names defined there.
PLACES = {
    'paddle.tensor.creation': 'to_tensor zeros ones empty full zeros_like ones_like full_like '
                              'empty_like arange linspace eye assign clone tril triu meshgrid '
                              'diag',
    'paddle.tensor.random': 'rand randn uniform normal randint randperm bernoulli multinomial',
    'paddle.tensor.math': 'add subtract multiply divide pow maximum minimum floor_divide '
                          'remainder exp log log2 log10 log1p expm1 sqrt rsqrt square abs neg '
                          'tanh sigmoid sin cos reciprocal sign floor ceil round trunc scale '
                          'clip erf isnan isinf isfinite nan_to_num any all sum max min prod '
                          'logsumexp cumsum count_nonzero increment kron outer mm',
    'paddle.tensor.logic': 'equal not_equal less_than less_equal greater_than greater_equal '
                           'logical_and logical_or logical_xor logical_not equal_all allclose '
                           'isclose is_tensor',
    'paddle.tensor.attribute': 'shape rank is_floating_point is_integer',
    'paddle.tensor.stat': 'mean var std numel',
    'paddle.tensor.search': 'argmax argmin argsort sort topk where nonzero masked_select '
                            'index_select',
    'paddle.tensor.manipulation': 'reshape reshape_ flatten squeeze unsqueeze moveaxis swapaxes '
                                  'concat stack split chunk unbind tile expand expand_as '
                                  'broadcast_to broadcast_tensors cast flip roll gather '
                                  'gather_nd take_along_axis put_along_axis scatter index_add '
                                  'unique masked_fill',
    'paddle.tensor.linalg': 'matmul bmm dot t transpose norm',
    'paddle.nn.functional.activation': 'relu relu_ relu6 sigmoid tanh tanh_ softmax softmax_ '
                                       'log_softmax gelu leaky_relu elu selu celu silu swish '
                                       'mish softplus softsign softshrink hardshrink '
                                       'hardswish hardsigmoid hardtanh tanhshrink log_sigmoid '
                                       'prelu glu',
    'paddle.nn.functional.common': 'linear dropout dropout2d alpha_dropout label_smooth pad '
                                   'cosine_similarity interpolate upsample',
    'paddle.nn.functional.conv': 'conv1d conv2d',
    'paddle.nn.functional.distance': 'pairwise_distance',
    'paddle.nn.functional.input': 'one_hot embedding',
    'paddle.nn.functional.loss': 'cross_entropy softmax_with_cross_entropy mse_loss l1_loss '
                                 'nll_loss binary_cross_entropy '
                                 'binary_cross_entropy_with_logits smooth_l1_loss kl_div '
                                 'margin_ranking_loss sigmoid_focal_loss square_error_cost',
    'paddle.nn.functional.norm': 'batch_norm layer_norm normalize',
    'paddle.nn.functional.pooling': 'max_pool1d max_pool2d avg_pool1d avg_pool2d '
                                    'adaptive_avg_pool1d adaptive_avg_pool2d '
                                    'adaptive_max_pool2d',
}


def _python_module(m):
    """Whether a module pkgutil found is Python code: packages and .py files,
    not shared libraries that sit in the package (libeddy_dist.so, which
    pkgutil offers as an extension module but is a plain C library)."""
    if m.ispkg:
        return True
    spec = m.module_finder.find_spec(m.name)
    return spec is not None and (spec.origin or '').endswith(
        tuple(importlib.machinery.SOURCE_SUFFIXES))


def current_surface():
    """`module name` lines for the public names of every paddle module."""
    names = ['paddle'] + [m.name for m in pkgutil.walk_packages(paddle.__path__, 'paddle.')
                          if not any(p.startswith('_') for p in m.name.split('.')) and
                          _python_module(m)]
    out = []
    missing = object()
    for mname in sorted(set(names)):
        mod = importlib.import_module(mname)
        for n in dir(mod):
            if n.startswith('_'):
                continue
            v = getattr(mod, n, missing)   # paddle's __dir__ names lazy subpackages
            if v is missing or (isinstance(v, types.ModuleType) and
                                not v.__name__.startswith('paddle')):
                continue
            out.append('{} {}'.format(mname, n))
    out += ['paddle.Tensor {}'.format(n) for n in dir(paddle.Tensor) if not n.startswith('__')]
    return out


def recorded():
    with open(LIST) as f:
        return [tuple(line.split()) for line in f if line.strip()]


class ApiSurfaceTest(unittest.TestCase):
    def test_every_recorded_name_still_imports(self):
        missing = []
        for mname, name in recorded():
            obj = paddle.Tensor if mname == 'paddle.Tensor' else importlib.import_module(mname)
            if not hasattr(obj, name):
                missing.append('{}.{}'.format(mname, name))
        self.assertEqual(missing, [], 'names that no longer import')

    def test_functions_live_where_paddle_defines_them(self):
        wrong = []
        for mname, names in PLACES.items():
            mod = importlib.import_module(mname)
            for n in names.split():
                fn = vars(mod).get(n)
                if fn is None or getattr(fn, '__module__', None) != mname:
                    wrong.append('{}.{} (defined in {})'.format(
                        mname, n, getattr(fn, '__module__', None) if fn else 'nowhere'))
        self.assertEqual(wrong, [])

    def test_tutorial_imports_from_submodules(self):
        from paddle.nn.functional.common import interpolate
        from paddle.nn.functional.activation import relu
        from paddle.tensor.manipulation import reshape
        x = paddle.to_tensor([[[[1.0, 2.0], [3.0, 4.0]]]])
        self.assertEqual(interpolate(x, scale_factor=2).shape, [1, 1, 4, 4])
        self.assertEqual(relu(paddle.to_tensor([-1.0, 2.0])).tolist(), [0.0, 2.0])
        self.assertEqual(reshape(x, [4]).shape, [4])
        self.assertIs(paddle.nn.functional.interpolate, interpolate)

    def test_names_moved_out_still_import_from_their_old_module(self):
        # paddle.tensor.math and the functional submodules held every function
        # before the split; they still answer for them (not listed by dir()).
        from paddle.tensor.math import reshape, argmax  # noqa: F401
        from paddle.tensor.creation import rand  # noqa: F401
        from paddle.nn.functional.activation import conv2d  # noqa: F401
        self.assertIs(paddle.tensor.math.reshape, paddle.tensor.manipulation.reshape)
        self.assertNotIn('reshape', dir(paddle.tensor.math))
        with self.assertRaises(AttributeError):
            paddle.tensor.math.no_such_function  # noqa: B018
        with self.assertRaises(ImportError):
            from paddle.nn.functional.conv import _paddle  # noqa: F401


if __name__ == '__main__':
    if sys.argv[1:] == ['--write']:
        lines = sorted(set(' '.join(t) for t in recorded()) | set(current_surface()))
        with open(LIST, 'w') as f:
            f.write('\n'.join(lines) + '\n')
        print('{}: {} names'.format(LIST, len(lines)))
    else:
        unittest.main()
