"""Image backend selection ('pil' default, or 'cv2' meaning numpy arrays)."""
_image_backend = 'pil'


def set_image_backend(backend):
    global _image_backend
    if backend not in ('pil', 'cv2', 'tensor'):
        raise ValueError("Expected backend are one of ['pil', 'cv2', 'tensor'], but got {}"
                         .format(backend))
    _image_backend = backend


def get_image_backend():
    return _image_backend


def image_load(path, backend=None):
    if backend is None:
        backend = _image_backend
    if backend not in ('pil', 'cv2', 'tensor'):
        raise ValueError("Expected backend are one of ['pil', 'cv2', 'tensor'], but got {}"
                         .format(backend))
    from PIL import Image
    img = Image.open(path)
    if backend == 'pil':
        return img
    import numpy as np
    arr = np.asarray(img.convert('RGB'))[:, :, ::-1].copy()   # cv2 gives BGR
    if backend == 'tensor':
        import paddle
        return paddle.to_tensor(arr)
    return arr
