"""paddle.tensor: the tensor-level functions and Tensor methods, one module per
group as in Paddle (paddle/tensor/*.py): creation, random, math, logic,
attribute, stat, search, manipulation, linalg, einsum."""
from .attribute import *  # noqa: F401,F403
from .creation import *  # noqa: F401,F403
from .einsum import *  # noqa: F401,F403
from .linalg import *  # noqa: F401,F403
from .logic import *  # noqa: F401,F403
from .manipulation import *  # noqa: F401,F403
from .math import *  # noqa: F401,F403
from .random import *  # noqa: F401,F403
from .search import *  # noqa: F401,F403
from .stat import *  # noqa: F401,F403
from .to_string import set_printoptions  # noqa: F401
from . import methods as _methods

_methods.install()
