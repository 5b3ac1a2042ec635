"""paddle.utils: run_check and small helpers."""
from .install_check import run_check  # noqa: F401

__all__ = ['run_check', 'try_import', 'unique_name']


def try_import(module_name, err_msg=None):
    import importlib
    try:
        return importlib.import_module(module_name)
    except ImportError:
        raise ImportError(err_msg or "Failed importing {}. This likely means that some paddle "
                          "modules require additional dependencies that have to be manually "
                          "installed (usually with `pip install {}`). ".format(
                              module_name, module_name))


class _UniqueName:
    def __init__(self):
        self._ids = {}

    def generate(self, key):
        n = self._ids.get(key, 0)
        self._ids[key] = n + 1
        return '{}_{}'.format(key, n)


unique_name = _UniqueName()
