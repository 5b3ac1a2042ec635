"""DatasetFolder and ImageFolder: images from a directory tree."""
import os

from ...io import Dataset

IMG_EXTENSIONS = ('.jpg', '.jpeg', '.png', '.ppm', '.bmp', '.pgm', '.tif', '.tiff', '.webp')


def has_valid_extension(filename, extensions):
    """Whether filename ends with one of extensions (case-insensitive)."""
    if not isinstance(extensions, (list, tuple)):
        raise TypeError("`extensions` should be a list or tuple of str")
    return filename.lower().endswith(tuple(e.lower() for e in extensions))


def _check(extensions, is_valid_file):
    if extensions is not None and is_valid_file is not None:
        raise ValueError("Both extensions and is_valid_file cannot be not None at the same "
                         "time")
    if is_valid_file is None:
        exts = IMG_EXTENSIONS if extensions is None else extensions
        return lambda p: has_valid_extension(p, exts)
    return is_valid_file


def make_dataset(directory, class_to_idx, extensions=None, is_valid_file=None):
    valid = _check(extensions, is_valid_file)
    images = []
    directory = os.path.expanduser(directory)
    for target in sorted(class_to_idx):
        d = os.path.join(directory, target)
        if not os.path.isdir(d):
            continue
        for root, _, fnames in sorted(os.walk(d, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(root, fname)
                if valid(path):
                    images.append((path, class_to_idx[target]))
    return images


def default_loader(path):
    """The image as a PIL RGB image (the 'pil' backend) or an HWC BGR array
    ('cv2'), as Paddle's default_loader."""
    from ..image import get_image_backend, image_load
    if get_image_backend() == 'cv2':
        return image_load(path, 'cv2')
    from PIL import Image
    with open(path, 'rb') as f:
        return Image.open(f).convert('RGB')


class DatasetFolder(Dataset):
    """DatasetFolder(root, loader=None, extensions=None, transform=None,
    is_valid_file=None): root/class_x/xxx.png ... each subdirectory is a
    class (sorted names, numbered from 0). Items: (sample, target).
    Attributes: classes, class_to_idx, samples, targets."""

    def __init__(self, root, loader=None, extensions=None, transform=None,
                 is_valid_file=None):
        self.root = root
        self.transform = transform
        if not os.path.isdir(os.path.expanduser(root)):
            raise FileNotFoundError("DatasetFolder: {} is not a directory".format(root))
        classes, class_to_idx = self._find_classes(os.path.expanduser(root))
        samples = make_dataset(root, class_to_idx, extensions, is_valid_file)
        if not samples:
            raise RuntimeError("Found 0 directories in subfolders of: {}\nSupported extensions "
                               "are: {}".format(root, ','.join(extensions or IMG_EXTENSIONS)))
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.classes = classes
        self.class_to_idx = class_to_idx
        self.samples = samples
        self.targets = [s[1] for s in samples]

    @staticmethod
    def _find_classes(directory):
        classes = sorted(e.name for e in os.scandir(directory) if e.is_dir())
        return classes, {c: i for i, c in enumerate(classes)}

    def __getitem__(self, index):
        path, target = self.samples[index]
        sample = self.loader(path)
        if self.transform is not None:
            sample = self.transform(sample)
        return sample, target

    def __len__(self):
        return len(self.samples)


class ImageFolder(Dataset):
    """ImageFolder(root, loader=None, extensions=None, transform=None,
    is_valid_file=None): every image under root (recursively, sorted), no
    labels. Items: [sample]."""

    def __init__(self, root, loader=None, extensions=None, transform=None,
                 is_valid_file=None):
        self.root = root
        valid = _check(extensions, is_valid_file)
        base = os.path.expanduser(root)
        if not os.path.isdir(base):
            raise FileNotFoundError("ImageFolder: {} is not a directory".format(root))
        samples = []
        for r, _, fnames in sorted(os.walk(base, followlinks=True)):
            for fname in sorted(fnames):
                path = os.path.join(r, fname)
                if valid(path):
                    samples.append(path)
        if not samples:
            raise RuntimeError("Found 0 files in subfolders of: {}\nSupported extensions are: "
                               "{}".format(root, ','.join(extensions or IMG_EXTENSIONS)))
        self.loader = default_loader if loader is None else loader
        self.extensions = extensions
        self.samples = samples
        self.transform = transform

    def __getitem__(self, index):
        sample = self.loader(self.samples[index])
        if self.transform is not None:
            sample = self.transform(sample)
        return [sample]

    def __len__(self):
        return len(self.samples)
