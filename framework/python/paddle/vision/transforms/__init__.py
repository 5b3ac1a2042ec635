"""paddle.vision.transforms: Compose, ToTensor, Normalize, Resize, Transpose
and a few augmentations, on PIL images, HWC numpy arrays or CHW Tensors."""
import numbers
import random

import numpy as np

from . import functional  # noqa: F401
from . import functional as F
from .functional import (center_crop, crop, hflip, normalize, pad, resize,  # noqa: F401
                         to_grayscale, to_tensor, transpose, vflip)

__all__ = ['BaseTransform', 'Compose', 'ToTensor', 'Normalize', 'Resize', 'Transpose',
           'CenterCrop', 'RandomCrop', 'RandomHorizontalFlip', 'RandomVerticalFlip', 'Pad',
           'Grayscale', 'RandomResizedCrop']


class Compose:
    """Apply transforms in order."""

    def __init__(self, transforms):
        self.transforms = list(transforms)

    def __call__(self, data):
        for f in self.transforms:
            try:
                data = f(data)
            except Exception as e:
                raise type(e)("fail to perform transform [{}] with error: {}".format(f, e)) \
                    from e
        return data

    def __repr__(self):
        s = self.__class__.__name__ + '('
        for t in self.transforms:
            s += '\n    {0}'.format(t)
        return s + '\n)'


class BaseTransform:
    """Subclasses implement _apply_image(img); keys selects which items of a
    tuple input are images (default: the first)."""

    def __init__(self, keys=None):
        if keys is None:
            keys = ("image",)
        elif not isinstance(keys, (list, tuple)):
            raise ValueError("keys should be a sequence, but got keys={}".format(keys))
        self.keys = keys
        self.params = None

    def _get_params(self, inputs):
        pass

    def __call__(self, inputs):
        if isinstance(inputs, tuple):
            self.params = self._get_params(inputs)
            out = []
            for i in range(min(len(inputs), len(self.keys))):
                fn = getattr(self, '_apply_{}'.format(self.keys[i]), None)
                out.append(inputs[i] if fn is None or inputs[i] is None else fn(inputs[i]))
            if len(inputs) > len(self.keys):
                out.extend(inputs[len(self.keys):])
            return tuple(out)
        self.params = self._get_params((inputs,))
        return self._apply_image(inputs)

    def _apply_image(self, image):
        raise NotImplementedError


class ToTensor(BaseTransform):
    def __init__(self, data_format='CHW', keys=None):
        super().__init__(keys)
        self.data_format = data_format

    def _apply_image(self, img):
        return F.to_tensor(img, self.data_format)


class Normalize(BaseTransform):
    """Normalize(mean=0.0, std=1.0, data_format='CHW', to_rgb=False)."""

    def __init__(self, mean=0.0, std=1.0, data_format='CHW', to_rgb=False, keys=None):
        super().__init__(keys)
        if isinstance(mean, numbers.Number):
            mean = [mean, mean, mean]
        if isinstance(std, numbers.Number):
            std = [std, std, std]
        self.mean = mean
        self.std = std
        self.data_format = data_format
        self.to_rgb = to_rgb

    def _apply_image(self, img):
        return F.normalize(img, self.mean, self.std, self.data_format, self.to_rgb)


class Resize(BaseTransform):
    def __init__(self, size, interpolation='bilinear', keys=None):
        super().__init__(keys)
        if not (isinstance(size, numbers.Integral) or
                (isinstance(size, (list, tuple)) and len(size) == 2)):
            raise ValueError("size should be an int or a (h, w) pair, got {}".format(size))
        self.size = size
        self.interpolation = interpolation

    def _apply_image(self, img):
        return F.resize(img, self.size, self.interpolation)


class Transpose(BaseTransform):
    def __init__(self, order=(2, 0, 1), keys=None):
        super().__init__(keys)
        self.order = order

    def _apply_image(self, img):
        return F.transpose(img, self.order)


class CenterCrop(BaseTransform):
    def __init__(self, size, keys=None):
        super().__init__(keys)
        self.size = size

    def _apply_image(self, img):
        return F.center_crop(img, self.size)


class RandomCrop(BaseTransform):
    def __init__(self, size, padding=None, pad_if_needed=False, fill=0,
                 padding_mode='constant', keys=None):
        super().__init__(keys)
        self.size = (int(size), int(size)) if isinstance(size, numbers.Integral) else size
        self.padding = padding
        self.pad_if_needed = pad_if_needed
        self.fill = fill
        self.padding_mode = padding_mode

    def _apply_image(self, img):
        if self.padding is not None:
            img = F.pad(img, self.padding, self.fill, self.padding_mode)
        h, w = F._hw(img)
        th, tw = self.size
        if self.pad_if_needed and (h < th or w < tw):
            img = F.pad(img, (max(tw - w, 0), max(th - h, 0)), self.fill, self.padding_mode)
            h, w = F._hw(img)
        if h < th or w < tw:
            raise ValueError("RandomCrop: image {}x{} smaller than crop {}x{}".format(
                h, w, th, tw))
        i = random.randint(0, h - th)
        j = random.randint(0, w - tw)
        return F.crop(img, i, j, th, tw)


class RandomResizedCrop(BaseTransform):
    def __init__(self, size, scale=(0.08, 1.0), ratio=(3. / 4, 4. / 3),
                 interpolation='bilinear', keys=None):
        super().__init__(keys)
        self.size = (size, size) if isinstance(size, numbers.Integral) else size
        self.scale, self.ratio, self.interpolation = scale, ratio, interpolation

    def _apply_image(self, img):
        import math
        h, w = F._hw(img)
        area = h * w
        for _ in range(10):
            target = random.uniform(*self.scale) * area
            log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
            ar = math.exp(random.uniform(*log_ratio))
            cw = int(round(math.sqrt(target * ar)))
            ch = int(round(math.sqrt(target / ar)))
            if 0 < cw <= w and 0 < ch <= h:
                i = random.randint(0, h - ch)
                j = random.randint(0, w - cw)
                return F.resize(F.crop(img, i, j, ch, cw), self.size, self.interpolation)
        return F.resize(F.center_crop(img, min(h, w)), self.size, self.interpolation)


class RandomHorizontalFlip(BaseTransform):
    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        self.prob = prob

    def _apply_image(self, img):
        return F.hflip(img) if random.random() < self.prob else img


class RandomVerticalFlip(BaseTransform):
    def __init__(self, prob=0.5, keys=None):
        super().__init__(keys)
        self.prob = prob

    def _apply_image(self, img):
        return F.vflip(img) if random.random() < self.prob else img


class Pad(BaseTransform):
    def __init__(self, padding, fill=0, padding_mode='constant', keys=None):
        super().__init__(keys)
        self.padding, self.fill, self.padding_mode = padding, fill, padding_mode

    def _apply_image(self, img):
        return F.pad(img, self.padding, self.fill, self.padding_mode)


class Grayscale(BaseTransform):
    def __init__(self, num_output_channels=1, keys=None):
        super().__init__(keys)
        self.num_output_channels = num_output_channels

    def _apply_image(self, img):
        return F.to_grayscale(img, self.num_output_channels)
