"""Paddle keeps functional ops in submodules; ours live in the package
__init__ and are re-exported here for `from paddle.nn.functional.X import y`."""
from paddle.nn.functional import *  # noqa: F401,F403
