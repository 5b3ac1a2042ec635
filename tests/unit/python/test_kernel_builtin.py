"""paddle._C imports two ways (issue 4): built into eddy-kernel (registered
as the built-in module "paddle._C"; the extension file beside the .py files
is never loaded there) and from Debian's /usr/bin/python3 with the build's
Python path (the extension file paddle/_C*.so). eddy-kernel finds the
pure-Python part without any path configuration: beside its binary
(<exe>/../framework/python, <exe>/../python), then the compiled-in build
folder."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

KERNEL = os.environ.get("EDDY_KERNEL_BIN")
PYPATH = os.environ.get("PYTHONPATH", "")

# Prints one JSON line: where paddle._C came from, whether any paddle
# extension file is mapped into the process, and a few SGD steps' losses.
PROBE = r'''
import json, sys
import paddle
paddle.seed(0)
net = paddle.nn.Linear(3, 1)
opt = paddle.optimizer.SGD(learning_rate=0.1, parameters=net.parameters())
x = paddle.rand([32, 3])
y = x.sum(axis=1, keepdim=True) * 2 + 1
losses = []
for _ in range(20):
    loss = paddle.nn.functional.mse_loss(net(x), y)
    loss.backward()
    opt.step()
    opt.clear_grad()
    losses.append(float(loss))
with open('/proc/self/maps') as f:
    so_mapped = any('/paddle/_C.' in line for line in f)
print(json.dumps({
    'builtin': 'paddle._C' in sys.builtin_module_names,
    'has_file': hasattr(paddle._C, '__file__'),
    'c_file': getattr(paddle._C, '__file__', None),
    'package': paddle.__file__,
    'tensor_is_C': type(x) is paddle._C.Tensor,
    'so_mapped': so_mapped,
    'losses': losses,
}))
'''


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "EDDY_PYTHONPATH")}
    env.update(extra)
    return env


def run_probe(argv0, env, cwd, script=PROBE, extra_args=()):
    path = os.path.join(cwd, "probe.py")
    with open(path, "w") as f:
        f.write(script)
    r = subprocess.run([*argv0, path, *extra_args], cwd=cwd, env=env, capture_output=True,
                       text=True, timeout=300)
    return r


def last_json(r):
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    if not lines:
        raise AssertionError("no JSON line; rc=%d stdout=%r stderr=%r"
                             % (r.returncode, r.stdout, r.stderr))
    return json.loads(lines[-1])


@unittest.skipUnless(KERNEL and os.path.exists(KERNEL), "eddy-kernel was not built")
class KernelHasPaddleBuiltIn(unittest.TestCase):
    def assert_trained(self, out):
        self.assertEqual(len(out["losses"]), 20)
        self.assertLess(out["losses"][-1], out["losses"][0] * 0.5, out["losses"])

    def test_kernel_uses_builtin_C_and_never_maps_the_extension_file(self):
        with tempfile.TemporaryDirectory() as d:
            r = run_probe([KERNEL, "run"], clean_env(), d)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = last_json(r)
        self.assertTrue(out["builtin"], out)
        self.assertFalse(out["has_file"], out)
        self.assertFalse(out["so_mapped"], out)
        self.assertTrue(out["tensor_is_C"], out)
        self.assert_trained(out)

    def test_kernel_uses_builtin_C_with_EDDY_PYTHONPATH_too(self):
        # the sandbox's way: EDDY_PYTHONPATH names a folder that also holds _C*.so
        build_py = os.path.dirname(self.package_dir())
        with tempfile.TemporaryDirectory() as d:
            r = run_probe([KERNEL, "run"], clean_env(EDDY_PYTHONPATH=build_py), d)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = last_json(r)
        self.assertTrue(out["builtin"], out)
        self.assertFalse(out["has_file"], out)
        self.assertFalse(out["so_mapped"], out)
        self.assertEqual(os.path.dirname(out["package"]), self.package_dir())

    def test_kernel_refuses_to_load_a_second_copy_of_the_extension(self):
        so = [n for n in os.listdir(self.package_dir()) if n.startswith("_C.") and
              n.endswith(".so")]
        self.assertEqual(len(so), 1, os.listdir(self.package_dir()))
        script = (
            "import importlib.util, sys, paddle\n"
            "spec = importlib.util.spec_from_file_location('paddle._C', %r)\n"
            "try:\n"
            "    importlib.util.module_from_spec(spec)\n"
            "except ImportError as e:\n"
            "    print('refused:', e)\n"
            "    sys.exit(0)\n"
            "print('loaded a second copy')\n"
            "sys.exit(1)\n" % os.path.join(self.package_dir(), so[0]))
        with tempfile.TemporaryDirectory() as d:
            r = run_probe([KERNEL, "run"], clean_env(), d, script=script)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("another copy of the extension is already initialised", r.stdout)

    def test_kernel_finds_the_package_beside_its_binary(self):
        # <dir>/bin/eddy-kernel + <dir>/framework/python/paddle (build layout)
        # and <dir>/bin/eddy-kernel + <dir>/python/paddle (installed layout):
        # the copy beside the binary wins over the compiled-in build folder.
        for rel in ("framework/python", "python"):
            with self.subTest(layout=rel), tempfile.TemporaryDirectory() as d:
                d = os.path.realpath(d)
                os.mkdir(os.path.join(d, "bin"))
                kernel = os.path.join(d, "bin", "eddy-kernel")
                shutil.copy2(KERNEL, kernel)
                pkg = os.path.join(d, rel, "paddle")
                shutil.copytree(self.package_dir(), pkg,
                                ignore=shutil.ignore_patterns("__pycache__", "_C.*.so"))
                work = os.path.join(d, "work")
                os.mkdir(work)
                r = run_probe([kernel, "run"], clean_env(), work)
                self.assertEqual(r.returncode, 0, r.stderr)
                out = last_json(r)
                self.assertEqual(out["package"], os.path.join(pkg, "__init__.py"))
                self.assertTrue(out["builtin"], out)
                self.assertFalse(out["has_file"], out)
                self.assert_trained(out)

    def test_kernel_without_any_package_says_paddle_is_missing(self):
        # A lone binary with no package beside it and EDDY_PYTHONPATH naming
        # an empty folder: a clear ModuleNotFoundError, not a crash.
        with tempfile.TemporaryDirectory() as d:
            r = run_probe([KERNEL, "run"], clean_env(EDDY_PYTHONPATH=d), d,
                          script="import paddle\n")
        self.assertEqual(r.returncode, 1, r.stderr)
        self.assertIn("ModuleNotFoundError: No module named 'paddle'", r.stderr)

    def package_dir(self):
        # the package eddy-kernel's own build made: <build>/framework/python/paddle
        build = os.path.dirname(os.path.dirname(os.path.abspath(KERNEL)))
        d = os.path.join(build, "framework", "python", "paddle")
        self.assertTrue(os.path.exists(os.path.join(d, "__init__.py")), d)
        return d


class Python3ImportsExtensionFile(unittest.TestCase):
    def test_python3_with_build_path_loads_the_so(self):
        self.assertTrue(PYPATH, "PYTHONPATH (the build's framework/python) is not set")
        with tempfile.TemporaryDirectory() as d:
            r = run_probe(["/usr/bin/python3"], clean_env(PYTHONPATH=PYPATH), d)
        self.assertEqual(r.returncode, 0, r.stderr)
        out = last_json(r)
        self.assertFalse(out["builtin"], out)
        self.assertTrue(out["has_file"], out)
        self.assertTrue(out["so_mapped"], out)
        self.assertTrue(os.path.basename(out["c_file"]).startswith("_C."), out)
        self.assertTrue(out["c_file"].endswith(".so"), out)
        self.assertLess(out["losses"][-1], out["losses"][0] * 0.5, out["losses"])


if __name__ == "__main__":
    unittest.main()
