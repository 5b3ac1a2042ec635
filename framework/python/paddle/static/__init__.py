"""paddle.static: only InputSpec for now (used by paddle.Model and summary)."""
from .input import InputSpec  # noqa: F401

__all__ = ['InputSpec']
