"""paddle.vision: datasets (MNIST, FashionMNIST, Cifar10/100), transforms,
models (LeNet) and the image backend switch."""
from . import datasets, models, transforms  # noqa: F401
from .image import get_image_backend, image_load, set_image_backend  # noqa: F401
from .models import (LeNet, ResNet, VGG, resnet18, resnet34, resnet50,  # noqa: F401
                     resnet101, resnet152, vgg11, vgg13, vgg16, vgg19)

__all__ = ['datasets', 'models', 'transforms', 'LeNet', 'ResNet', 'VGG', 'resnet18',
           'resnet34', 'resnet50', 'resnet101', 'resnet152', 'vgg11', 'vgg13', 'vgg16',
           'vgg19', 'get_image_backend',
           'set_image_backend', 'image_load']
