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


class TestFlowersVoc(unittest.TestCase):
    def test_flowers_and_voc2012_from_local_archives(self):
        import io
        import tarfile
        import scipy.io as scio
        from paddle.vision.datasets import VOC2012, Flowers

        def add(tf, name, data):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))

        def png(value, mode='RGB', fmt='PNG'):
            b = io.BytesIO()
            shape = (6, 7, 3) if mode == 'RGB' else (6, 7)
            Image.fromarray(np.full(shape, value, np.uint8), mode).save(b, fmt)
            return b.getvalue()
        with tempfile.TemporaryDirectory() as d:
            with tarfile.open(os.path.join(d, 'f.tgz'), 'w:gz') as tf:
                for i in (1, 2, 3):
                    add(tf, 'jpg/image_%05d.jpg' % i, png(10 * i, fmt='JPEG'))
            scio.savemat(os.path.join(d, 'l.mat'), {'labels': np.array([[5, 7, 9]])})
            scio.savemat(os.path.join(d, 's.mat'), {'tstid': np.array([[3, 1]]),
                                                    'trnid': np.array([[2]]),
                                                    'valid': np.array([[1]])})
            fl = Flowers(data_file=os.path.join(d, 'f.tgz'), label_file=os.path.join(d, 'l.mat'),
                         setid_file=os.path.join(d, 's.mat'), mode='train', backend='cv2')
            self.assertEqual(len(fl), 2)
            img, label = fl[0]
            self.assertEqual(img.shape, (6, 7, 3))
            self.assertEqual(img.dtype, np.float32)
            self.assertEqual(label.tolist(), [9])
            # through forked DataLoader workers (each reopens the archive)
            batches = list(paddle.io.DataLoader(fl, batch_size=1, num_workers=2))
            self.assertEqual([int(b[1].numpy()[0, 0]) for b in batches], [9, 5])
            with tarfile.open(os.path.join(d, 'voc.tar'), 'w') as tf:
                add(tf, 'VOCdevkit/VOC2012/ImageSets/Segmentation/val.txt', b'a\nb\n')
                for n, v in (('a', 1), ('b', 2)):
                    add(tf, 'VOCdevkit/VOC2012/JPEGImages/%s.jpg' % n, png(v, fmt='JPEG'))
                    add(tf, 'VOCdevkit/VOC2012/SegmentationClass/%s.png' % n, png(v, 'L'))
            voc = VOC2012(data_file=os.path.join(d, 'voc.tar'), mode='valid')
            self.assertEqual(len(voc), 2)
            img, lab = voc[1]
            self.assertEqual(img.size, (7, 6))
            self.assertEqual(np.asarray(lab)[0, 0], 2)
            with self.assertRaisesRegex(FileNotFoundError, 'ImageSets/Segmentation/train.txt'):
                VOC2012(data_file=os.path.join(d, 'voc.tar'), mode='test')
