"""paddle.optimizer: SGD, Momentum, Adam, AdamW and lr schedulers."""
from . import lr  # noqa: F401
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer  # noqa: F401
from .py_optimizers import Adagrad, RMSProp  # noqa: F401

__all__ = ['Optimizer', 'SGD', 'Momentum', 'Adam', 'AdamW', 'RMSProp', 'Adagrad', 'lr']
