"""paddle.vision.datasets.DatasetFolder / ImageFolder over a directory tree
written here (the pages' layout: root/class/xxx.png)."""
import os
import tempfile
import unittest

import numpy as np
from PIL import Image

import paddle
from paddle.vision.datasets import DatasetFolder, ImageFolder
from paddle.vision.transforms import ToTensor


class TestFolders(unittest.TestCase):
    def test_dataset_and_image_folder(self):
        with tempfile.TemporaryDirectory() as root:
            for cls, n in (('cat', 2), ('dog', 3)):
                os.makedirs(os.path.join(root, cls, 'sub'))
                for i in range(n):
                    img = np.full((4, 5, 3), 40 * i, np.uint8)
                    Image.fromarray(img).save(os.path.join(root, cls, '%d.png' % i))
                with open(os.path.join(root, cls, 'notes.txt'), 'w') as f:
                    f.write('not an image')
            Image.fromarray(np.zeros((4, 5, 3), np.uint8)).save(
                os.path.join(root, 'dog', 'sub', 'x.jpg'))
            ds = DatasetFolder(root)
            self.assertEqual(ds.classes, ['cat', 'dog'])
            self.assertEqual(len(ds), 6)
            self.assertEqual(ds.targets, [0, 0, 1, 1, 1, 1])
            img, label = ds[1]
            self.assertEqual(img.size, (5, 4))
            self.assertEqual(label, 0)
            self.assertEqual(np.asarray(img)[0, 0, 0], 40)
            t = DatasetFolder(root, transform=ToTensor())
            x, y = next(iter(paddle.io.DataLoader(t, batch_size=6)))
            self.assertEqual(x.shape, [6, 3, 4, 5])
            only_png = DatasetFolder(root, extensions=('.png',))
            self.assertEqual(len(only_png), 5)
            flat = ImageFolder(root)
            self.assertEqual(len(flat), 6)
            self.assertIsInstance(flat[0], list)
            with self.assertRaises(ValueError):
                DatasetFolder(root, extensions=('.png',), is_valid_file=lambda p: True)
            with self.assertRaises(FileNotFoundError):
                DatasetFolder(os.path.join(root, 'missing'))


if __name__ == '__main__':
    unittest.main()
