"""paddle.tensor: the tensor-level functions and Tensor methods."""
from .creation import *  # noqa: F401,F403
from .creation import (to_tensor, zeros, ones, empty, full, zeros_like, ones_like,  # noqa: F401
                       full_like, empty_like, arange, linspace, eye, assign, clone, tril, triu,
                       meshgrid, rand, randn, standard_normal, uniform, normal, randint,
                       randperm, bernoulli, multinomial)
from .math import *  # noqa: F401,F403
from .to_string import set_printoptions  # noqa: F401
from . import methods as _methods

_methods.install()
