"""framework/python/COMPAT.md is generated from the code by
framework/python/tools/compat.py: it must be up to date with the package
(regenerate it after adding or changing public names), and its classifier
must tell implemented, partial and missing names apart."""
import os
import subprocess
import sys
import unittest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..', '..'))
TOOLS = os.path.join(ROOT, 'framework', 'python', 'tools')
sys.path.insert(0, TOOLS)
import compat  # noqa: E402


class TestCompat(unittest.TestCase):
    def test_compat_md_is_up_to_date(self):
        r = subprocess.run([sys.executable, os.path.join(TOOLS, 'compat.py'), '--check'],
                           capture_output=True, text=True, env=os.environ.copy(), timeout=600)
        self.assertEqual(r.returncode, 0, r.stderr[-3000:])

    def test_classifier(self):
        src = (
            "def full(x):\n    return x\n"
            "def stub(x):\n    '''doc'''\n    raise NotImplementedError('stub: not yet')\n"
            "def part(x, mode='a'):\n    if mode == 'b':\n"
            "        raise NotImplementedError('part: mode b is not supported')\n    return x\n"
            "class Base:\n    def f(self):\n        raise NotImplementedError\n"
            "class Child(Base):\n    def f(self):\n        return 1\n")
        path = os.path.join(os.environ.get('TMPDIR', '/tmp'), 'eddy_compat_probe_mod.py')
        with open(path, 'w') as f:
            f.write(src)
        sys.path.insert(0, os.path.dirname(path))
        try:
            import eddy_compat_probe_mod as mod
            self.assertEqual(compat.classify(mod, 'full'), ('implemented', ''))
            self.assertEqual(compat.classify(mod, 'stub')[0], 'missing')
            self.assertEqual(compat.classify(mod, 'part'),
                             ('partial', 'part: mode b is not supported'))
            self.assertEqual(compat.classify(mod, 'nothing')[0], 'missing')
            self.assertEqual(compat.classify(mod, 'Child')[0], 'implemented')
            self.assertEqual(compat.classify(None, 'x'), ('missing', 'module not provided'))
        finally:
            sys.path.remove(os.path.dirname(path))
            os.unlink(path)
            sys.modules.pop('eddy_compat_probe_mod', None)

    def test_reference_list_and_table(self):
        ref = compat.read_reference()
        for mod in ('paddle', 'paddle.nn', 'paddle.nn.functional', 'paddle.linalg',
                    'paddle.vision.models', 'paddle.metric'):
            self.assertIn(mod, ref)
        with open(compat.OUT, encoding='utf-8') as f:
            text = f.read()
        for row in ('| `inv` | implemented |', '| `Conv2DTranspose` | implemented |',
                    '| `MobileNetV2` | implemented |', '| `Auc` | implemented |'):
            self.assertIn(row, text)


if __name__ == '__main__':
    unittest.main()
