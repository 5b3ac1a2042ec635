"""Functional image transforms over PIL images, numpy HWC arrays and
paddle Tensors (CHW)."""
import numbers

import numpy as np

__all__ = ['to_tensor', 'normalize', 'resize', 'transpose', 'hflip', 'vflip', 'center_crop',
           'crop', 'pad', 'to_grayscale']


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
