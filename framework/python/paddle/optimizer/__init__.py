"""paddle.optimizer: SGD, Momentum, Adam, AdamW (fused C kernels), RMSProp,
Adagrad, Adadelta, Adamax, Lamb, NAdam, RAdam, ASGD, Rprop, LBFGS and lr
schedulers."""
from . import lr  # noqa: F401
from .optimizer import SGD, Adam, AdamW, Momentum, Optimizer  # noqa: F401
from .py_optimizers import Adagrad, RMSProp  # noqa: F401
from .adaptive import Adadelta, Adamax, Lamb, NAdam, RAdam, ASGD, Rprop  # noqa: F401
from .lbfgs import LBFGS  # noqa: F401

__all__ = ['Optimizer', 'SGD', 'Momentum', 'Adam', 'AdamW', 'RMSProp', 'Adagrad', 'Adadelta',
           'Adamax', 'Lamb', 'NAdam', 'RAdam', 'ASGD', 'Rprop', 'LBFGS', 'lr']
