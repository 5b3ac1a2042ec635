"""python -m paddle.distributed.launch: see main.py."""
from .main import launch  # noqa: F401
