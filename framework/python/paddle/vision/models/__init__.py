from .lenet import LeNet  # noqa: F401
from .resnet import (BasicBlock, BottleneckBlock, ResNet, resnet18, resnet34,  # noqa: F401
                     resnet50, resnet101, resnet152, wide_resnet50_2, wide_resnet101_2)
from .vgg import VGG, vgg11, vgg13, vgg16, vgg19  # noqa: F401

__all__ = ['LeNet', 'ResNet', 'BasicBlock', 'BottleneckBlock', 'resnet18', 'resnet34',
           'resnet50', 'resnet101', 'resnet152', 'wide_resnet50_2', 'wide_resnet101_2', 'VGG',
           'vgg11', 'vgg13', 'vgg16', 'vgg19']
