"""Late binding shared by the paddle package (private).

paddle/__init__.py imports paddle.framework and paddle.tensor while it runs
and the other subpackages on first use; a module imported while paddle is
still initialising cannot take names from it at its top, so it calls
paddle() when it runs instead.
"""
import importlib


def paddle():
    """The paddle package (in sys.modules before any of its modules runs)."""
    import paddle as pkg
    return pkg


def forward_to(module_name, package_name):
    """A module __getattr__ (PEP 562) for a module that held a whole package's
    functions before they moved into Paddle's submodules: the public names of
    package_name stay importable from module_name, as they were, without
    being defined there (dir() lists only the module's own names).
    Example: paddle.tensor.math.reshape is paddle.tensor.reshape, defined in
    paddle.tensor.manipulation."""
    def __getattr__(name):
        if not name.startswith('_'):
            ns = vars(importlib.import_module(package_name))
            if name in ns:
                return ns[name]
        raise AttributeError("module '{}' has no attribute '{}'".format(module_name, name))
    return __getattr__
