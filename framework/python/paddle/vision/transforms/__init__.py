"""paddle.vision.transforms: Paddle's transforms (Compose, ToTensor,
Normalize, Resize, Transpose, crops, flips, Pad, Grayscale, the colour
jitters, RandomRotation, RandomAffine, RandomPerspective, RandomErasing) on
PIL images, HWC numpy arrays or CHW Tensors. Random choices use Python's
random module, as Paddle's do."""
import numbers
import random

import numpy as np

from . import functional  # noqa: F401
from . import functional as F
from .functional import (center_crop, crop, hflip, normalize, pad, resize,  # noqa: F401
                         to_grayscale, to_tensor, transpose, vflip, adjust_brightness,
                         adjust_contrast, adjust_saturation, adjust_hue, rotate, affine,
                         perspective, erase)

__all__ = ['BaseTransform', 'Compose', 'ToTensor', 'Normalize', 'Resize', 'Transpose',
           'CenterCrop', 'RandomCrop', 'RandomHorizontalFlip', 'RandomVerticalFlip', 'Pad',
           'Grayscale', 'RandomResizedCrop', 'BrightnessTransform', 'ContrastTransform',
           'SaturationTransform', 'HueTransform', 'ColorJitter', 'RandomRotation',
           'RandomAffine', 'RandomPerspective', 'RandomErasing', 'to_tensor', 'hflip',
           'vflip', 'resize', 'pad', 'affine', 'rotate', 'perspective', 'to_grayscale',
           'crop', 'center_crop', 'adjust_brightness', 'adjust_contrast', 'adjust_saturation',
           'adjust_hue', 'normalize', 'erase']


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



def _range(value, name, center=1.0, bound=(0, float('inf')), clip_first=True):
    """Paddle's _check_input: a number v means [center - v, center + v]
    (clipped at 0), a pair is taken as it is."""
    if isinstance(value, numbers.Number):
        if value < 0:
            raise ValueError("If {} is a single number, it must be non negative.".format(name))
        lo, hi = center - value, center + value
        if clip_first:
            lo = max(lo, 0.0)
    elif isinstance(value, (tuple, list)) and len(value) == 2:
        lo, hi = float(value[0]), float(value[1])
        if not bound[0] <= lo <= hi <= bound[1]:
            raise ValueError("{} values should be between {}".format(name, bound))
    else:
        raise TypeError("{} should be a single number or a list/tuple with length 2."
                        .format(name))
    if lo == hi == center:
        return None
    return lo, hi


class BrightnessTransform(BaseTransform):
    """Brightness factor drawn from [max(0, 1 - value), 1 + value]."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _range(value, 'brightness')

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_brightness(img, random.uniform(*self.value))


class ContrastTransform(BaseTransform):
    def __init__(self, value, keys=None):
        super().__init__(keys)
        if isinstance(value, numbers.Number) and value < 0:
            raise ValueError("contrast value should be non-negative")
        self.value = _range(value, 'contrast')

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_contrast(img, random.uniform(*self.value))


class SaturationTransform(BaseTransform):
    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _range(value, 'saturation')

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_saturation(img, random.uniform(*self.value))


class HueTransform(BaseTransform):
    """Hue shift drawn from [-value, value], value in [0, 0.5]."""

    def __init__(self, value, keys=None):
        super().__init__(keys)
        self.value = _range(value, 'hue', center=0, bound=(-0.5, 0.5), clip_first=False)
        if self.value is not None and not -0.5 <= self.value[0] <= self.value[1] <= 0.5:
            raise ValueError("hue value should be in [0, 0.5], got {}".format(value))

    def _apply_image(self, img):
        if self.value is None:
            return img
        return F.adjust_hue(img, random.uniform(*self.value))


class ColorJitter(BaseTransform):
    """Brightness, contrast, saturation and hue jitter, applied in a random
    order."""

    def __init__(self, brightness=0, contrast=0, saturation=0, hue=0, keys=None):
        super().__init__(keys)
        self.brightness, self.contrast, self.saturation, self.hue = \
            brightness, contrast, saturation, hue
        self._ts = [BrightnessTransform(brightness, keys), ContrastTransform(contrast, keys),
                    SaturationTransform(saturation, keys), HueTransform(hue, keys)]

    def _apply_image(self, img):
        ts = list(self._ts)
        random.shuffle(ts)
        for t in ts:
            img = t._apply_image(img)
        return img


def _degrees(degrees, name='degrees'):
    if isinstance(degrees, numbers.Number):
        if degrees < 0:
            raise ValueError("If {} is a single number, it must be positive.".format(name))
        return (-float(degrees), float(degrees))
    if isinstance(degrees, (list, tuple)) and len(degrees) == 2:
        return (float(degrees[0]), float(degrees[1]))
    raise ValueError("If {} is a sequence, it must be of len 2.".format(name))


class RandomRotation(BaseTransform):
    """Rotate by an angle drawn from degrees ((-d, d) for a number)."""

    def __init__(self, degrees, interpolation='nearest', expand=False, center=None, fill=0,
                 keys=None):
        super().__init__(keys)
        self.degrees = _degrees(degrees)
        F._interp(interpolation)
        self.interpolation, self.expand, self.center, self.fill = \
            interpolation, expand, center, fill

    def _apply_image(self, img):
        angle = random.uniform(self.degrees[0], self.degrees[1])
        return F.rotate(img, angle, self.interpolation, self.expand, self.center, self.fill)


class RandomAffine(BaseTransform):
    """Random rotation (degrees), translation (fractions of the size),
    scale and shear, one affine warp."""

    def __init__(self, degrees, translate=None, scale=None, shear=None,
                 interpolation='nearest', fill=0, center=None, keys=None):
        super().__init__(keys)
        self.degrees = _degrees(degrees)
        if translate is not None:
            if len(translate) != 2 or not all(0.0 <= t <= 1.0 for t in translate):
                raise ValueError("translate should be a sequence of 2 values in [0, 1]")
        if scale is not None:
            if len(scale) != 2 or any(s <= 0 for s in scale):
                raise ValueError("scale should be a sequence of 2 positive values")
        if shear is not None:
            if isinstance(shear, numbers.Number):
                shear = _degrees(shear, 'shear') + (0.0, 0.0)
            elif len(shear) == 2:
                shear = (float(shear[0]), float(shear[1]), 0.0, 0.0)
            elif len(shear) == 4:
                shear = tuple(float(v) for v in shear)
            else:
                raise ValueError("shear should be a number or a sequence of 2 or 4 values")
        F._interp(interpolation)
        self.translate, self.scale, self.shear = translate, scale, shear
        self.interpolation, self.fill, self.center = interpolation, fill, center

    def _get_param(self, h, w):
        angle = random.uniform(self.degrees[0], self.degrees[1])
        if self.translate is not None:
            mx, my = self.translate[0] * w, self.translate[1] * h
            tr = (int(round(random.uniform(-mx, mx))), int(round(random.uniform(-my, my))))
        else:
            tr = (0, 0)
        sc = random.uniform(self.scale[0], self.scale[1]) if self.scale is not None else 1.0
        sh = (0.0, 0.0)
        if self.shear is not None:
            sh = (random.uniform(self.shear[0], self.shear[1]),
                  random.uniform(self.shear[2], self.shear[3]))
        return angle, tr, sc, sh

    def _apply_image(self, img):
        h, w = F._hw(img)
        angle, tr, sc, sh = self._get_param(h, w)
        return F.affine(img, angle, tr, sc, sh, self.interpolation, self.fill, self.center)


class RandomPerspective(BaseTransform):
    """With probability prob, move each corner inward by up to
    distortion_scale of half the size and warp."""

    def __init__(self, prob=0.5, distortion_scale=0.5, interpolation='nearest', fill=0,
                 keys=None):
        super().__init__(keys)
        if not 0 <= prob <= 1:
            raise ValueError("prob should be in [0, 1]")
        if not 0 <= distortion_scale <= 1:
            raise ValueError("distortion_scale should be in [0, 1]")
        F._interp(interpolation)
        self.prob, self.distortion_scale = prob, distortion_scale
        self.interpolation, self.fill = interpolation, fill

    def get_params(self, width, height, distortion_scale):
        hw, hh = width // 2, height // 2
        dw, dh = int(distortion_scale * hw), int(distortion_scale * hh)
        tl = [random.randint(0, dw), random.randint(0, dh)]
        tr = [width - 1 - random.randint(0, dw), random.randint(0, dh)]
        br = [width - 1 - random.randint(0, dw), height - 1 - random.randint(0, dh)]
        bl = [random.randint(0, dw), height - 1 - random.randint(0, dh)]
        start = [[0, 0], [width - 1, 0], [width - 1, height - 1], [0, height - 1]]
        return start, [tl, tr, br, bl]

    def _apply_image(self, img):
        if random.random() >= self.prob:
            return img
        h, w = F._hw(img)
        start, end = self.get_params(w, h, self.distortion_scale)
        return F.perspective(img, start, end, self.interpolation, self.fill)


class RandomErasing(BaseTransform):
    """With probability prob, erase a random box of scale (area fraction)
    and aspect ratio in the given ranges: value is a number, a per-channel
    sequence, or 'random' (normal noise)."""

    def __init__(self, prob=0.5, scale=(0.02, 0.33), ratio=(0.3, 3.3), value=0,
                 inplace=False, keys=None):
        super().__init__(keys)
        if not isinstance(value, (numbers.Number, str, tuple, list)):
            raise TypeError("value should be a number, a tuple/list or 'random'")
        if isinstance(value, str) and value != 'random':
            raise ValueError("value should be 'random' when it is a str")
        if scale[0] > scale[1] or ratio[0] > ratio[1]:
            raise ValueError("scale and ratio should be of kind (min, max)")
        if not 0 <= scale[0] <= 1 or not 0 <= scale[1] <= 1:
            raise ValueError("scale should be between 0 and 1")
        if not 0 <= prob <= 1:
            raise ValueError("prob should be in [0, 1]")
        self.prob, self.scale, self.ratio, self.value, self.inplace = \
            prob, scale, ratio, value, inplace

    def _get_param(self, img, chw):
        import math
        if chw:
            c, h, w = img.shape[-3], img.shape[-2], img.shape[-1]
        else:
            h, w = F._hw(img)
            c = len(img.getbands()) if F._is_pil(img) else \
                (img.shape[2] if np.asarray(img).ndim == 3 else 1)
        area = h * w
        log_ratio = (math.log(self.ratio[0]), math.log(self.ratio[1]))
        for _ in range(10):
            ea = area * random.uniform(self.scale[0], self.scale[1])
            ar = math.exp(random.uniform(*log_ratio))
            eh = int(round(math.sqrt(ea * ar)))
            ew = int(round(math.sqrt(ea / ar)))
            if eh >= h or ew >= w or eh < 1 or ew < 1:
                continue
            shape = (c, eh, ew) if chw else (eh, ew, c)
            if self.value == 'random':
                v = np.random.normal(size=shape).astype(np.float32)
            elif isinstance(self.value, numbers.Number):
                v = self.value
            else:
                vals = np.asarray(self.value, np.float32)
                if vals.size != c:
                    raise ValueError("value should have {} channels, got {}".format(
                        c, vals.size))
                v = vals.reshape((c, 1, 1) if chw else (1, 1, c))
            top = random.randint(0, h - eh)
            left = random.randint(0, w - ew)
            return top, left, eh, ew, v
        return 0, 0, h, w, None

    def _apply_image(self, img):
        if random.random() >= self.prob:
            return img
        chw = F._is_tensor(img)
        top, left, eh, ew, v = self._get_param(img, chw)
        if v is None:
            return img
        if not chw and not F._is_pil(img) and np.asarray(img).ndim == 2:
            img = np.asarray(img)[:, :, None]
        return F.erase(img, top, left, eh, ew, v, self.inplace)
