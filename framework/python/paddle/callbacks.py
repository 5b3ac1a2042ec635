"""paddle.callbacks: callbacks for paddle.Model."""
from .hapi.callbacks import (Callback, EarlyStopping, LRScheduler,  # noqa: F401
                             ModelCheckpoint, ProgBarLogger, ReduceLROnPlateau, VisualDL)

__all__ = ['Callback', 'ProgBarLogger', 'ModelCheckpoint', 'VisualDL', 'LRScheduler',
           'EarlyStopping', 'ReduceLROnPlateau']
