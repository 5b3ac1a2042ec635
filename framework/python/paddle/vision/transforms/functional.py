"""Functional image transforms over PIL images, numpy HWC arrays and
paddle Tensors (CHW)."""
import numbers

import numpy as np

__all__ = ['to_tensor', 'normalize', 'resize', 'transpose', 'hflip', 'vflip', 'center_crop',
           'crop', 'pad', 'to_grayscale', 'adjust_brightness', 'adjust_contrast',
           'adjust_saturation', 'adjust_hue', 'rotate', 'affine', 'perspective', 'erase']


def _is_pil(img):
    try:
        from PIL import Image
    except ImportError:
        return False
    return isinstance(img, Image.Image)


def _is_tensor(img):
    import paddle
    return isinstance(img, paddle.Tensor)


def _check(img, fname):
    if not (_is_pil(img) or isinstance(img, np.ndarray) or _is_tensor(img)):
        raise TypeError("{}: img should be a PIL Image, numpy ndarray or paddle Tensor, got {}"
                        .format(fname, type(img).__name__))


def to_tensor(pic, data_format='CHW'):
    """HWC (or HW) image -> float Tensor in data_format; uint8 and PIL
    images are scaled to [0, 1]."""
    import paddle
    _check(pic, 'to_tensor')
    if data_format not in ('CHW', 'HWC'):
        raise ValueError("data_format should be CHW or HWC, got {}".format(data_format))
    if _is_tensor(pic):
        return pic
    scale = False
    if _is_pil(pic):
        if pic.mode == 'I':
            img = np.array(pic, np.int32, copy=False)
        elif pic.mode == 'I;16':
            img = np.array(pic, np.int16, copy=False)
        elif pic.mode == 'F':
            img = np.array(pic, np.float32, copy=False)
        elif pic.mode == '1':
            img = 255 * np.array(pic, np.uint8, copy=False)
            scale = True
        else:
            img = np.array(pic, np.uint8, copy=False)
            scale = True
    else:
        img = pic
        scale = img.dtype == np.uint8
    if img.ndim == 2:
        img = img[:, :, None]
    if data_format == 'CHW':
        img = img.transpose((2, 0, 1))
    dtype = paddle.get_default_dtype()
    img = np.ascontiguousarray(img)
    if scale:
        return paddle.to_tensor(np.multiply(img, 1.0 / 255.0, dtype=np.dtype(dtype)))
    if np.issubdtype(img.dtype, np.floating):
        return paddle.to_tensor(img.astype(dtype))
    return paddle.to_tensor(img)


def normalize(img, mean, std, data_format='CHW', to_rgb=False):
    """(img - mean) / std per channel; PIL images become float32 arrays."""
    _check(img, 'normalize')
    if _is_tensor(img):
        # Paddle's tensor path (functional_tensor.normalize) ignores to_rgb:
        # the same numbers come out here
        m, s = _mean_std_tensors(tuple(np.ravel(mean).tolist()), tuple(np.ravel(std).tolist()),
                                 data_format, str(img.dtype))
        return (img - m) / s
    if _is_pil(img):
        img = np.array(img).astype(np.float32)
    if data_format == 'CHW':
        mean = np.float32(np.array(mean).reshape(-1, 1, 1))
        std = np.float32(np.array(std).reshape(-1, 1, 1))
    else:
        mean = np.float32(np.array(mean).reshape(1, 1, -1))
        std = np.float32(np.array(std).reshape(1, 1, -1))
    if to_rgb:
        img = img[..., ::-1]
    return (img - mean) / std


_mean_std_cache = {}


def _mean_std_tensors(mean, std, data_format, dtype):
    # one pair of broadcastable tensors per (mean, std, layout, dtype): a
    # per-sample transform should not rebuild them
    key = (mean, std, data_format, dtype)
    hit = _mean_std_cache.get(key)
    if hit is None:
        import paddle
        shape = [-1, 1, 1] if data_format == 'CHW' else [1, 1, -1]
        npdt = np.float64 if 'float64' in dtype else np.float32
        hit = (paddle.to_tensor(np.array(mean, dtype=npdt).reshape(shape)),
               paddle.to_tensor(np.array(std, dtype=npdt).reshape(shape)))
        if len(_mean_std_cache) < 64:
            _mean_std_cache[key] = hit
    return hit


_PIL_INTERP = {'nearest': 0, 'bilinear': 2, 'bicubic': 3, 'box': 4, 'lanczos': 1,
               'hamming': 5}


def _target_size(h, w, size):
    if isinstance(size, numbers.Integral):
        if (w <= h and w == size) or (h <= w and h == size):
            return h, w
        if w < h:
            return int(size * h / w), size
        return size, int(size * w / h)
    if len(size) != 2:
        raise ValueError("size should be an int or (h, w), got {}".format(size))
    return int(size[0]), int(size[1])


def resize(img, size, interpolation='bilinear'):
    """Resize to size (h, w), or the shorter side to an int size keeping the
    aspect ratio."""
    _check(img, 'resize')
    if interpolation not in _PIL_INTERP:
        raise ValueError("interpolation should be one of {}, got {}".format(
            sorted(_PIL_INTERP), interpolation))
    interp = _PIL_INTERP[interpolation]
    if _is_pil(img):
        w, h = img.size
        oh, ow = _target_size(h, w, size)
        return img.resize((ow, oh), interp)
    if _is_tensor(img):
        import paddle
        arr = img.numpy()
        chw = arr.transpose(1, 2, 0) if arr.ndim == 3 else arr
        return paddle.to_tensor(np.ascontiguousarray(
            _resize_array(chw, size, interp).transpose(2, 0, 1)
            if arr.ndim == 3 else _resize_array(chw, size, interp)))
    return _resize_array(img, size, interp)


def _resize_array(arr, size, interp):
    from PIL import Image
    h, w = arr.shape[:2]
    oh, ow = _target_size(h, w, size)
    if arr.dtype == np.uint8 and (arr.ndim == 2 or arr.shape[2] in (3, 4)):
        return np.asarray(Image.fromarray(arr).resize((ow, oh), interp))
    planes = arr[:, :, None] if arr.ndim == 2 else arr
    out = np.stack([np.asarray(Image.fromarray(planes[:, :, c].astype(np.float32), mode='F')
                               .resize((ow, oh), interp)) for c in range(planes.shape[2])],
                   axis=2).astype(arr.dtype if np.issubdtype(arr.dtype, np.floating)
                                  else np.float32)
    if arr.ndim == 2:
        out = out[:, :, 0]
    if not np.issubdtype(arr.dtype, np.floating):
        info = np.iinfo(arr.dtype)
        out = np.clip(np.rint(out), info.min, info.max).astype(arr.dtype)
    return out


def transpose(img, order=(2, 0, 1)):
    _check(img, 'transpose')
    if _is_pil(img):
        img = np.asarray(img)
    if _is_tensor(img):
        import paddle
        return paddle.transpose(img, list(order))
    if img.ndim == 2:
        img = img[..., np.newaxis]
    return img.transpose(order)


def hflip(img):
    _check(img, 'hflip')
    if _is_pil(img):
        from PIL import Image
        return img.transpose(Image.FLIP_LEFT_RIGHT)
    if _is_tensor(img):
        import paddle
        return paddle.to_tensor(np.ascontiguousarray(img.numpy()[..., ::-1]))
    return np.ascontiguousarray(img[:, ::-1])


def vflip(img):
    _check(img, 'vflip')
    if _is_pil(img):
        from PIL import Image
        return img.transpose(Image.FLIP_TOP_BOTTOM)
    if _is_tensor(img):
        import paddle
        return paddle.to_tensor(np.ascontiguousarray(img.numpy()[..., ::-1, :]))
    return np.ascontiguousarray(img[::-1])


def crop(img, top, left, height, width):
    _check(img, 'crop')
    if _is_pil(img):
        return img.crop((left, top, left + width, top + height))
    if _is_tensor(img):
        return img[..., top:top + height, left:left + width]
    return img[top:top + height, left:left + width]


def _hw(img):
    if _is_pil(img):
        return img.size[1], img.size[0]
    if _is_tensor(img):
        return img.shape[-2], img.shape[-1]
    return img.shape[0], img.shape[1]


def center_crop(img, output_size):
    if isinstance(output_size, numbers.Integral):
        output_size = (int(output_size), int(output_size))
    h, w = _hw(img)
    th, tw = output_size
    i = int(round((h - th) / 2.0))
    j = int(round((w - tw) / 2.0))
    return crop(img, i, j, th, tw)


def pad(img, padding, fill=0, padding_mode='constant'):
    if isinstance(padding, numbers.Integral):
        pl = pr = pt = pb = padding
    elif len(padding) == 2:
        pl = pr = padding[0]
        pt = pb = padding[1]
    else:
        pl, pt, pr, pb = padding
    was_pil = _is_pil(img)
    arr = np.asarray(img)
    widths = [(pt, pb), (pl, pr)] + [(0, 0)] * (arr.ndim - 2)
    if padding_mode == 'constant':
        out = np.pad(arr, widths, mode='constant', constant_values=fill)
    else:
        out = np.pad(arr, widths, mode={'edge': 'edge', 'reflect': 'reflect',
                                        'symmetric': 'symmetric'}[padding_mode])
    if was_pil:
        from PIL import Image
        return Image.fromarray(out)
    return out


def to_grayscale(img, num_output_channels=1):
    if _is_pil(img):
        g = img.convert('L')
        if num_output_channels == 3:
            from PIL import Image
            a = np.asarray(g)
            return Image.fromarray(np.stack([a] * 3, -1))
        return g
    arr = np.asarray(img).astype(np.float32)
    g = arr[..., 0] * 0.299 + arr[..., 1] * 0.587 + arr[..., 2] * 0.114
    g = g.astype(np.asarray(img).dtype)[..., None]
    return np.concatenate([g] * 3, -1) if num_output_channels == 3 else g


# ---- colour ----------------------------------------------------------------------
# PIL images go through PIL (ImageEnhance, HSV), as Paddle's PIL backend does;
# numpy HWC arrays and CHW Tensors follow Paddle's tensor backend: a blend
# with a degenerate image, clipped to [0, 255] (integers) or [0, 1] (floats).

def _to_hwc(img):
    """(numpy HWC array, back) for a numpy array or a CHW Tensor."""
    if _is_tensor(img):
        import paddle
        a = img.numpy()
        if a.ndim == 2:
            return a[:, :, None], lambda r: paddle.to_tensor(np.ascontiguousarray(r[:, :, 0]))
        return a.transpose(1, 2, 0), \
            lambda r: paddle.to_tensor(np.ascontiguousarray(r.transpose(2, 0, 1)))
    a = np.asarray(img)
    if a.ndim == 2:
        return a[:, :, None], lambda r: r[:, :, 0]
    return a, lambda r: r


def _bound(a):
    return 1.0 if np.issubdtype(a.dtype, np.floating) else 255.0


def _blend(a, b, f):
    out = (f * a.astype(np.float64) + (1.0 - f) * b).clip(0, _bound(a))
    return out.astype(a.dtype)


def _gray(a):
    a = a.astype(np.float64)
    if a.shape[2] == 1:
        return a[:, :, :1]
    return (0.2989 * a[:, :, 0] + 0.587 * a[:, :, 1] + 0.114 * a[:, :, 2])[:, :, None]


def _factor(f, what):
    if isinstance(f, bool) or not isinstance(f, numbers.Real) or f < 0:
        raise ValueError("{} should be a non-negative number, got {!r}".format(what, f))
    return float(f)


def adjust_brightness(img, brightness_factor):
    """Scale the brightness: 0 gives black, 1 the image, 2 twice as bright."""
    _check(img, 'adjust_brightness')
    f = _factor(brightness_factor, 'brightness_factor')
    if _is_pil(img):
        from PIL import ImageEnhance
        return ImageEnhance.Brightness(img).enhance(f)
    a, back = _to_hwc(img)
    return back(_blend(a, 0.0, f))


def adjust_contrast(img, contrast_factor):
    """Blend with the mean grey level: 0 gives solid grey, 1 the image."""
    _check(img, 'adjust_contrast')
    f = _factor(contrast_factor, 'contrast_factor')
    if _is_pil(img):
        from PIL import ImageEnhance
        return ImageEnhance.Contrast(img).enhance(f)
    a, back = _to_hwc(img)
    return back(_blend(a, _gray(a).mean(), f))


def adjust_saturation(img, saturation_factor):
    """Blend with the greyscale image: 0 gives grey, 1 the image."""
    _check(img, 'adjust_saturation')
    f = _factor(saturation_factor, 'saturation_factor')
    if _is_pil(img):
        from PIL import ImageEnhance
        return ImageEnhance.Color(img).enhance(f)
    a, back = _to_hwc(img)
    if a.shape[2] == 1:
        return back(a.copy())
    return back(_blend(a, _gray(a), f))


def _rgb_to_hsv(rgb):
    r, g, b = rgb[..., 0], rgb[..., 1], rgb[..., 2]
    mx = rgb.max(-1)
    mn = rgb.min(-1)
    d = mx - mn
    v = mx
    s = np.where(mx > 0, d / np.where(mx > 0, mx, 1), 0.0)
    dd = np.where(d > 0, d, 1)
    h = np.where(mx == r, (g - b) / dd, np.where(mx == g, 2.0 + (b - r) / dd, 4.0 + (r - g) / dd))
    h = np.where(d > 0, (h / 6.0) % 1.0, 0.0)
    return np.stack([h, s, v], -1)


def _hsv_to_rgb(hsv):
    h, s, v = hsv[..., 0], hsv[..., 1], hsv[..., 2]
    i = np.floor(h * 6.0)
    f = h * 6.0 - i
    p, q, t = v * (1 - s), v * (1 - s * f), v * (1 - s * (1 - f))
    i = i.astype(np.int64) % 6
    choices = [np.stack(c, -1) for c in ((v, t, p), (q, v, p), (p, v, t), (p, q, v), (t, p, v),
                                         (v, p, q))]
    out = np.zeros(hsv.shape)
    for k in range(6):
        out = np.where((i == k)[..., None], choices[k], out)
    return out


def adjust_hue(img, hue_factor):
    """Shift the hue by hue_factor (in [-0.5, 0.5], a fraction of a turn)."""
    _check(img, 'adjust_hue')
    if isinstance(hue_factor, bool) or not isinstance(hue_factor, numbers.Real) or \
            not -0.5 <= hue_factor <= 0.5:
        raise ValueError("hue_factor should be in [-0.5, 0.5], got {!r}".format(hue_factor))
    if _is_pil(img):
        from PIL import Image
        mode = img.mode
        if mode in ('L', '1', 'I', 'F'):
            return img
        h, s, v = img.convert('HSV').split()
        a = np.array(h, dtype=np.uint8)
        with np.errstate(over='ignore'):
            a += np.uint8(int(hue_factor * 255) % 256)
        return Image.merge('HSV', (Image.fromarray(a, 'L'), s, v)).convert(mode)
    a, back = _to_hwc(img)
    if a.shape[2] == 1:
        return back(a.copy())
    scale = _bound(a)
    hsv = _rgb_to_hsv(a[:, :, :3].astype(np.float64) / scale)
    hsv[..., 0] = (hsv[..., 0] + hue_factor) % 1.0
    rgb = _hsv_to_rgb(hsv) * scale
    if not np.issubdtype(a.dtype, np.floating):
        rgb = np.rint(rgb)
    out = a.copy()
    out[:, :, :3] = rgb.clip(0, scale).astype(a.dtype)
    return back(out)


# ---- geometry ----------------------------------------------------------------------
# All warps go through PIL's Image.transform (Paddle's PIL backend): numpy
# arrays and Tensors are warped channel by channel as PIL images ('L' for
# uint8 planes, 'F' otherwise), so every input type gives PIL's pixels.

_PIL_WARP = {'nearest': 0, 'bilinear': 2, 'bicubic': 3}


def _interp(name):
    if name not in _PIL_WARP:
        raise ValueError("interpolation should be one of {}, got {!r}".format(
            sorted(_PIL_WARP), name))
    return _PIL_WARP[name]


def _fill_for(fill, channels):
    if fill is None:
        fill = 0
    if isinstance(fill, numbers.Number):
        return [fill] * channels
    fill = list(fill)
    if len(fill) == 1:
        return fill * channels
    if len(fill) != channels:
        raise ValueError("fill should have {} values (one per channel), got {}".format(
            channels, len(fill)))
    return fill


def _warp(img, size, method, data, interpolation, fill):
    """Image.transform(size, method, data) on any image type; size (w, h)."""
    from PIL import Image
    resample = _interp(interpolation)
    if _is_pil(img):
        bands = len(img.getbands())
        f = _fill_for(fill, bands)
        return img.transform(size, method, data, resample,
                             fillcolor=tuple(int(v) for v in f) if bands > 1 else f[0])
    a, back = _to_hwc(img)
    f = _fill_for(fill, a.shape[2])
    planes = []
    for c in range(a.shape[2]):
        p = a[:, :, c]
        if p.dtype == np.uint8:
            im = Image.fromarray(np.ascontiguousarray(p), 'L')
            planes.append(np.asarray(im.transform(size, method, data, resample,
                                                  fillcolor=int(f[c]))))
        else:
            im = Image.fromarray(np.ascontiguousarray(p.astype(np.float32)), 'F')
            r = np.asarray(im.transform(size, method, data, resample,
                                        fillcolor=float(f[c])))
            if not np.issubdtype(a.dtype, np.floating):
                info = np.iinfo(a.dtype)
                r = np.clip(np.rint(r), info.min, info.max)
            planes.append(r.astype(a.dtype))
    return back(np.stack(planes, -1))


def _inverse_affine(center, angle, translate, scale, shear):
    """The output->input matrix (6 numbers) of a clockwise rotation by
    `angle` degrees, translation, scale and shear (x, y degrees) about
    center, for PIL's AFFINE transform."""
    import math
    rot = math.radians(angle)
    sx, sy = math.radians(shear[0]), math.radians(shear[1])
    cx, cy = center
    tx, ty = translate
    a = math.cos(rot - sy) / math.cos(sy)
    b = -math.cos(rot - sy) * math.tan(sx) / math.cos(sy) - math.sin(rot)
    c = math.sin(rot - sy) / math.cos(sy)
    d = -math.sin(rot - sy) * math.tan(sx) / math.cos(sy) + math.cos(rot)
    m = [d / scale, -b / scale, 0.0, -c / scale, a / scale, 0.0]
    m[2] += m[0] * (-cx - tx) + m[1] * (-cy - ty)
    m[5] += m[3] * (-cx - tx) + m[4] * (-cy - ty)
    m[2] += cx
    m[5] += cy
    return m


def affine(img, angle, translate, scale, shear, interpolation='nearest', fill=0, center=None):
    """Rotate by angle degrees (clockwise, as Paddle's page says), translate
    by (dx, dy) pixels, scale, and shear by (sx, sy) degrees, keeping the
    size."""
    _check(img, 'affine')
    from PIL import Image
    if not isinstance(translate, (list, tuple)) or len(translate) != 2:
        raise TypeError("translate should be a sequence of length 2")
    if scale <= 0:
        raise ValueError("scale should be positive, got {}".format(scale))
    if isinstance(shear, numbers.Number):
        shear = [shear, 0.0]
    shear = list(shear)
    if len(shear) == 1:
        shear = [shear[0], shear[0]]
    h, w = _hw(img)
    if center is None:
        center = (w * 0.5, h * 0.5)
    m = _inverse_affine(center, angle, translate, scale, shear)
    return _warp(img, (w, h), Image.AFFINE, m, interpolation, fill)


def rotate(img, angle, interpolation='nearest', expand=False, center=None, fill=0):
    """Rotate counter-clockwise by angle degrees about center (default the
    image centre); expand grows the output to hold the whole image."""
    _check(img, 'rotate')
    import math
    from PIL import Image
    h, w = _hw(img)
    if center is None:
        cx, cy = w / 2.0, h / 2.0
    else:
        cx, cy = center
    a = -math.radians(angle % 360.0)
    m = [round(math.cos(a), 15), round(math.sin(a), 15), 0.0,
         round(-math.sin(a), 15), round(math.cos(a), 15), 0.0]

    def tr(x, y, mm):
        return mm[0] * x + mm[1] * y + mm[2], mm[3] * x + mm[4] * y + mm[5]
    m[2], m[5] = tr(-cx, -cy, m)
    m[2] += cx
    m[5] += cy
    ow, oh = w, h
    if expand:
        xs, ys = [], []
        for x, y in ((0, 0), (w, 0), (w, h), (0, h)):
            px, py = tr(x, y, m)
            xs.append(px)
            ys.append(py)
        ow = math.ceil(max(xs)) - math.floor(min(xs))
        oh = math.ceil(max(ys)) - math.floor(min(ys))
        m[2], m[5] = tr(-(ow - w) / 2.0, -(oh - h) / 2.0, m)
    return _warp(img, (ow, oh), Image.AFFINE, m, interpolation, fill)


def _perspective_coeffs(startpoints, endpoints):
    """The 8 coefficients mapping output (end) points to input (start) ones."""
    a = np.zeros((8, 8))
    b = np.zeros(8)
    for i, ((sx, sy), (ex, ey)) in enumerate(zip(startpoints, endpoints)):
        a[2 * i] = [ex, ey, 1, 0, 0, 0, -sx * ex, -sx * ey]
        a[2 * i + 1] = [0, 0, 0, ex, ey, 1, -sy * ex, -sy * ey]
        b[2 * i] = sx
        b[2 * i + 1] = sy
    return np.linalg.lstsq(a, b, rcond=None)[0].tolist()


def perspective(img, startpoints, endpoints, interpolation='nearest', fill=0):
    """Warp so the four startpoints (corners, [x, y]) land on endpoints."""
    _check(img, 'perspective')
    from PIL import Image
    if len(startpoints) != 4 or len(endpoints) != 4:
        raise ValueError("perspective: startpoints and endpoints need 4 points each")
    h, w = _hw(img)
    coeffs = _perspective_coeffs(startpoints, endpoints)
    return _warp(img, (w, h), Image.PERSPECTIVE, coeffs, interpolation, fill)


def erase(img, i, j, h, w, v, inplace=False):
    """Set the box rows i..i+h, columns j..j+w to v (a value, or an array
    broadcastable to the box): CHW for Tensors, HWC for arrays and PIL."""
    _check(img, 'erase')
    if _is_tensor(img):
        import paddle
        a = img.numpy().copy()
        a[..., i:i + h, j:j + w] = np.asarray(v.numpy() if _is_tensor(v) else v)
        if inplace:
            img.set_value(a)
            return img
        return paddle.to_tensor(a)
    was_pil = _is_pil(img)
    a = np.array(img) if (was_pil or not inplace) else img
    a[i:i + h, j:j + w, ...] = np.asarray(v)
    if was_pil:
        from PIL import Image
        return Image.fromarray(a)
    return a
