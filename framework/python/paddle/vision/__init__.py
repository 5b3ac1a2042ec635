"""paddle.vision: datasets, transforms, models and the image backend switch;
like Paddle, every model, dataset and transform is also a name here."""
from . import datasets, models, transforms  # noqa: F401
from .image import get_image_backend, image_load, set_image_backend  # noqa: F401
from .models import *  # noqa: F401,F403  (every model and its builder, as Paddle)
from .datasets import *  # noqa: F401,F403
from .transforms import *  # noqa: F401,F403

__all__ = (['datasets', 'models', 'transforms', 'get_image_backend', 'set_image_backend',
            'image_load'] + list(models.__all__) + list(datasets.__all__)
           + list(transforms.__all__))
