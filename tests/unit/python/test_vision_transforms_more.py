"""paddle.vision.transforms added for issue 18 item 2: the colour jitters,
RandomRotation, RandomAffine, RandomPerspective, RandomErasing and their
functional forms, on PIL images, HWC numpy arrays and CHW Tensors; the
examples of their API pages, and pixel checks against what the operations
mean (a 90 degree rotation is np.rot90, a translation shifts, ...)."""
import random
import unittest

import numpy as np
from PIL import Image

import paddle
import paddle.vision.transforms as T
import paddle.vision.transforms.functional as F

RNG = np.random.default_rng(3)
IMG = (RNG.random((24, 24, 3)) * 255).astype(np.uint8)


class TestPageExamples(unittest.TestCase):
    def test_color_jitter_and_friends_on_pil(self):
        fake = Image.fromarray((np.random.rand(224, 224, 3) * 255.).astype(np.uint8))
        for t in (T.ColorJitter(0.4, 0.4, 0.4, 0.4), T.BrightnessTransform(0.4),
                  T.ContrastTransform(0.4), T.SaturationTransform(0.4), T.HueTransform(0.4)):
            out = t(fake)
            self.assertEqual(out.size, (224, 224))

    def test_random_rotation(self):
        fake = Image.fromarray((np.random.rand(200, 150, 3) * 255.).astype(np.uint8))
        self.assertEqual(T.RandomRotation(90)(fake).size, (150, 200))
        self.assertEqual(T.RandomRotation((90, 90), expand=True)(fake).size, (200, 150))

    def test_random_affine_on_tensor(self):
        fake = paddle.randn((3, 256, 300)).astype(paddle.float32)
        t = T.RandomAffine([-90, 90], translate=[0.2, 0.2], scale=[0.5, 0.5], shear=[-10, 10])
        self.assertEqual(t(fake).shape, [3, 256, 300])

    def test_random_perspective_on_tensor(self):
        fake = paddle.randn((3, 200, 150)).astype(paddle.float32)
        self.assertEqual(T.RandomPerspective(prob=1.0, distortion_scale=0.9)(fake).shape,
                         [3, 200, 150])

    def test_random_erasing_on_tensor(self):
        fake = paddle.randn((1, 5, 5)).astype(paddle.float32)
        self.assertEqual(T.RandomErasing()(fake).shape, [1, 5, 5])


class TestPixels(unittest.TestCase):
    def test_rotate_90_is_rot90_for_every_input_type(self):
        want = np.rot90(IMG, 1)          # counter-clockwise
        np.testing.assert_array_equal(np.asarray(F.rotate(Image.fromarray(IMG), 90)), want)
        np.testing.assert_array_equal(F.rotate(IMG, 90), want)
        t = paddle.to_tensor(IMG.transpose(2, 0, 1).astype('float32'))
        np.testing.assert_array_equal(F.rotate(t, 90).numpy().transpose(1, 2, 0), want)

    def test_affine_translation_shifts_and_fills(self):
        out = F.affine(IMG, 0, (3, 0), 1.0, 0, fill=7)
        np.testing.assert_array_equal(out[:, 3:], IMG[:, :-3])
        self.assertTrue((out[:, :3] == 7).all())
        same = F.affine(IMG, 0, (0, 0), 1.0, 0)
        np.testing.assert_array_equal(same, IMG)

    def test_perspective_identity_and_pil_agreement(self):
        pts = [[0, 0], [23, 0], [23, 23], [0, 23]]
        np.testing.assert_array_equal(F.perspective(IMG, pts, pts), IMG)
        end = [[2, 1], [22, 3], [20, 22], [1, 20]]
        np.testing.assert_array_equal(np.asarray(F.perspective(Image.fromarray(IMG), pts, end)),
                                      F.perspective(IMG, pts, end))

    def test_brightness_contrast_saturation_formulas(self):
        a = IMG
        np.testing.assert_array_equal(F.adjust_brightness(a, 1.5),
                                      (a * 1.5).clip(0, 255).astype(np.uint8))
        gray = 0.2989 * a[..., 0] + 0.587 * a[..., 1] + 0.114 * a[..., 2]
        want = (0.5 * a + 0.5 * gray.mean()).clip(0, 255).astype(np.uint8)
        np.testing.assert_array_equal(F.adjust_contrast(a, 0.5), want)
        want = (0.0 * a + gray[..., None]).clip(0, 255).astype(np.uint8)
        np.testing.assert_array_equal(F.adjust_saturation(a, 0.0), want)
        np.testing.assert_array_equal(F.adjust_brightness(a, 1.0), a)

    def test_hue_shift(self):
        red = np.zeros((2, 2, 3), np.uint8)
        red[..., 0] = 255
        green = F.adjust_hue(red, 1 / 3)        # a third of a turn: red -> green
        np.testing.assert_array_equal(green[0, 0], [0, 255, 0])
        np.testing.assert_array_equal(F.adjust_hue(IMG, 0.0), IMG)
        t = paddle.to_tensor(red.transpose(2, 0, 1).astype('float32') / 255)
        np.testing.assert_allclose(F.adjust_hue(t, -1 / 3).numpy()[:, 0, 0], [0, 0, 1],
                                   atol=1e-6)
        with self.assertRaises(ValueError):
            F.adjust_hue(IMG, 0.7)

    def test_erase_and_random_erasing(self):
        out = F.erase(IMG, 2, 3, 4, 5, 0)
        self.assertTrue((out[2:6, 3:8] == 0).all())
        self.assertTrue((IMG[2:6, 3:8] != 0).any())     # not in place
        random.seed(1)
        t = paddle.ones([3, 20, 20])
        out = T.RandomErasing(prob=1.0, value=0)(t).numpy()
        erased = (out == 0).all(0).sum()
        self.assertGreaterEqual(erased, 0.02 * 400 * 0.5)
        self.assertLessEqual(erased, 0.33 * 400 * 1.5)
        out = T.RandomErasing(prob=1.0, value=[1, 2, 3])(IMG)
        self.assertEqual(out.shape, IMG.shape)

    def test_zero_jitter_is_identity_and_bad_values(self):
        self.assertIs(T.ColorJitter()(IMG), IMG)
        with self.assertRaises(ValueError):
            T.BrightnessTransform(-1)
        with self.assertRaises(ValueError):
            T.RandomRotation(-5)
        with self.assertRaises(ValueError):
            T.RandomRotation(5, interpolation='lanczos9')
        with self.assertRaises(ValueError):
            T.RandomErasing(value='noise')


if __name__ == '__main__':
    unittest.main()
