"""Completion and inspection of eddy-kernel (complete_request, inspect_request;
issue 14): module names without importing them, `from m import x`, attributes
of live objects including paddle's, dict keys, no side effects (no property
runs, nothing is called), bounded replies, and paddle's `Linear?` text.

The support module is loaded from kernel_runner/py with a stand-in for the
built-in `_eddy_kernel` (only `Kernel.start` needs it), so these run under
Debian's python3 with the build's paddle (PYTHONPATH, see CMakeLists.txt).
The last test runs the same requests through a real eddy-kernel."""
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SUPPORT = os.path.join(HERE, "..", "..", "..", "kernel_runner", "py", "eddy_kernel_support.py")
KERNEL = os.environ.get("EDDY_KERNEL_BIN")


def load_support():
    sys.modules.setdefault("_eddy_kernel", types.ModuleType("_eddy_kernel"))
    spec = importlib.util.spec_from_file_location("eddy_kernel_support_under_test", SUPPORT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


S = load_support()


def complete(ns, code, pos=None):
    kernel = types.SimpleNamespace(ns=ns)
    _, reply = S.Kernel.do_complete_request(kernel, {"code": code, "cursor_pos": len(code) if pos is None else pos})
    return reply


def inspect_(ns, code, pos=None, detail=0):
    kernel = types.SimpleNamespace(ns=ns)
    _, reply = S.Kernel.do_inspect_request(kernel, {"code": code, "detail_level": detail,
                                                    "cursor_pos": len(code) if pos is None else pos})
    return reply


class Touched(Exception):
    pass


class Trap:
    """Any computed attribute raises: completion must never run one."""
    plain = 1

    @property
    def boom(self):
        raise Touched("property evaluated")

    def __getattr__(self, name):
        raise Touched("__getattr__(%s) called" % name)

    def method(self):
        raise Touched("method called")

    def __dir__(self):
        raise Touched("__dir__ called")


class ModuleNames(unittest.TestCase):
    def test_import_completes_top_level_modules(self):
        r = complete({}, "import jso")
        self.assertIn("json", r["matches"])
        self.assertEqual(r["cursor_start"], len("import "))
        self.assertEqual(r["cursor_end"], len("import jso"))
        self.assertIn("pad", [m[:3] for m in complete({}, "import pad")["matches"]])
        self.assertIn("paddle", complete({}, "import pad")["matches"])
        everything = complete({}, "import ")["matches"]
        self.assertTrue(everything and not any(n.startswith("_") for n in everything), "private modules only after _")
        self.assertIn("_thread", complete({}, "import _thr")["matches"])

    def test_import_completes_submodules_without_importing(self):
        # xml.dom is a package of the standard library that nothing here imported.
        for name in [n for n in sys.modules if n == "xml.dom" or n.startswith("xml.dom.")]:
            del sys.modules[name]
        r = complete({}, "import xml.dom.mini")
        self.assertEqual(r["matches"], ["xml.dom.minicompat", "xml.dom.minidom"])
        self.assertEqual(r["cursor_start"], len("import "))
        self.assertNotIn("xml.dom", sys.modules, "completion imported the package")
        self.assertIn("os.path", complete({}, "import sys, os.pa")["matches"])
        self.assertIn("json", complete({}, "from js")["matches"])

    def test_from_import_names_of_an_imported_module(self):
        import paddle.nn  # noqa: F401
        r = complete({}, "from paddle.nn import Lin")
        self.assertIn("Linear", r["matches"])
        self.assertEqual(r["cursor_start"], len("from paddle.nn import "))
        self.assertIn("functional", complete({}, "from paddle.nn import func")["matches"])
        self.assertIn("Linear", complete({}, "from paddle.nn import (Conv2D, Lin")["matches"])
        self.assertEqual(complete({}, "from paddle.nn import Linear as Li")["matches"], [])

    def test_from_import_of_a_module_not_imported_reads_its_source(self):
        sys.modules.pop("wave", None)
        r = complete({}, "from wave import Wave_r")
        self.assertIn("Wave_read", r["matches"])
        self.assertNotIn("wave", sys.modules, "completion imported the module")


class Attributes(unittest.TestCase):
    def test_live_paddle_attributes(self):
        import paddle
        ns = {"paddle": paddle}
        # Whole dotted names from the start of the expression, as IPython gives them.
        r = complete(ns, "x = paddle.nn.Lin")
        self.assertIn("paddle.nn.Linear", r["matches"])
        self.assertEqual(r["cursor_start"], len("x = "))
        kinds = {t["text"]: t["type"] for t in r["metadata"]["_jupyter_types_experimental"]}
        self.assertEqual(kinds["paddle.nn.Linear"], "class")
        r = complete(ns, "paddle.ze")
        self.assertIn("paddle.zeros", r["matches"])
        self.assertIn("paddle.zeros_like", r["matches"])
        self.assertIn("os.path", complete({"os": os}, "x = os.pa")["matches"])

    def test_no_property_getattr_or_call_runs(self):
        ns = {"t": Trap()}
        r = complete(ns, "t.")
        self.assertIn("t.boom", r["matches"])
        self.assertIn("t.method", r["matches"])
        self.assertNotIn("t.__class__", r["matches"], "dunders only after __")
        self.assertIn("t.__class__", complete(ns, "t.__cl")["matches"])
        # Walking through a property, __getattr__ or a call gives nothing and runs nothing.
        self.assertEqual(complete(ns, "t.boom.")["matches"], [])
        self.assertEqual(complete(ns, "t.missing.")["matches"], [])
        self.assertEqual(complete(ns, "t.method().")["matches"], [])
        self.assertIn("t.plain.bit_length", complete(ns, "t.plain.bit")["matches"])

    def test_bare_names(self):
        r = complete({"my_variable": 3}, "print(my_v")
        self.assertEqual(r["matches"], ["my_variable"])
        self.assertEqual(r["cursor_start"], len("print("))
        self.assertIn("isinstance", complete({}, "isins")["matches"])
        self.assertIn("lambda", complete({}, "lamb")["matches"])

    def test_cursor_inside_the_code(self):
        code = "import json\nx = json.du\nprint(x)"
        pos = code.index("json.du") + len("json.du")
        r = complete({"json": __import__("json")}, code, pos)
        self.assertEqual(sorted(r["matches"]), ["json.dump", "json.dumps"])
        self.assertEqual(r["cursor_start"], code.index("json.du"))
        self.assertEqual(r["cursor_end"], pos)

    def test_bounded(self):
        big = types.SimpleNamespace(**{"a%d" % i: i for i in range(5000)})
        r = complete({"big": big}, "big.a")
        self.assertEqual(len(r["matches"]), 500)
        d = {("k%d" % i): i for i in range(5000)}
        self.assertEqual(len(complete({"d": d}, "d['k")["matches"]), 500)
        # A huge line is looked at only near the cursor (these would take
        # hours if the patterns backtracked over all of it).
        r = complete({"json": __import__("json")}, "from x import " + "a, " * 200000 + "json.du")
        self.assertEqual(sorted(r["matches"]), ["json.dump", "json.dumps"])
        r = complete({}, "x = [" + "a." * 200000)
        self.assertEqual(r["matches"], [])
        code = "print(" + "x, " * 200000
        self.assertFalse(inspect_({}, code)["found"])
        # Bad requests answer, empty.
        kernel = types.SimpleNamespace(ns={})
        for c in ({"code": 5, "cursor_pos": 3}, {"code": "abc", "cursor_pos": 99}, {"code": "x", "cursor_pos": "1"}):
            _, reply = S.Kernel.do_complete_request(kernel, c)
            self.assertEqual(reply["status"], "ok")


class DictKeys(unittest.TestCase):
    def test_keys_after_a_quote(self):
        ns = {"cfg": {"learning_rate": 0.1, "layers": 3, "batch": 8, 7: "int key", "it's": 1}}
        r = complete(ns, 'cfg["l')
        self.assertEqual(sorted(r["matches"]), ["layers", "learning_rate"])
        self.assertEqual(r["cursor_start"], len('cfg["'))
        self.assertIn("it\\'s", complete(ns, "cfg['it")["matches"])
        self.assertEqual(complete({"s": "text"}, 's["')["matches"], [])


class PathsAndParameters(unittest.TestCase):
    def test_paths_in_a_string(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "data", "train"))
            open(os.path.join(d, "data", "train.csv"), "w").close()
            open(os.path.join(d, "data", ".hidden"), "w").close()
            old = os.getcwd()
            os.chdir(d)
            try:
                r = complete({}, 'df = read_csv("data/tr')
                self.assertEqual(r["matches"], ["train.csv", "train/"])
                self.assertEqual(r["cursor_start"], len('df = read_csv("data/'))
                self.assertEqual(complete({}, "open('da")["matches"], ["data/"])
                self.assertEqual(complete({}, "open('data/")["matches"], ["train.csv", "train/"])
                self.assertIn(".hidden", complete({}, "open('data/.")["matches"])
                # A closed string, or one in a comment, is not a path.
                self.assertNotIn("data/", complete({"data": 1}, "x = 'a' + da")["matches"])
                self.assertEqual(complete({}, "# open('da")["matches"], [])
                self.assertEqual(complete({}, "open('nowhere/x")["matches"], [])
            finally:
                os.chdir(old)

    def test_parameters_of_the_call(self):
        import paddle
        ns = {"paddle": paddle}
        r = complete(ns, "layer = paddle.nn.Linear(3, 4, bias")
        self.assertEqual(r["matches"][0], "bias_attr=")
        self.assertEqual(r["cursor_start"], len("layer = paddle.nn.Linear(3, 4, "))
        kinds = {t["text"]: t["type"] for t in r["metadata"]["_jupyter_types_experimental"]}
        self.assertEqual(kinds["bias_attr="], "param")
        self.assertIn("in_features=", complete(ns, "paddle.nn.Linear(in")["matches"])
        self.assertNotIn("in_features=", complete(ns, "paddle.nn.Linear(3)[in")["matches"])
        r = complete({"f": lambda alpha, beta=2, *, gamma: 0}, "f(1, [2, 3], ga")
        self.assertEqual(r["matches"][0], "gamma=")


class Inspection(unittest.TestCase):
    def test_paddle_class_shows_signature_and_docstring(self):
        import paddle
        ns = {"paddle": paddle}
        r = inspect_(ns, "paddle.nn.Linear")
        self.assertTrue(r["found"])
        text = r["data"]["text/plain"]
        self.assertIn("Init signature: paddle.nn.Linear(in_features, out_features, weight_attr=None, bias_attr=None, name=None)", text)
        self.assertIn("Type:           type", text)
        self.assertIn("y = x @ weight + bias", text)
        self.assertIn("File:", text)
        self.assertNotIn("Initialize self", text, "object.__init__'s docstring is not Linear's")

    def test_function_at_cursor_and_inside_a_call(self):
        import paddle
        ns = {"paddle": paddle}
        text = inspect_(ns, "y = paddle.zeros(", None)["data"]["text/plain"]
        self.assertIn("Signature:      paddle.zeros(", text)
        # The cursor on `nn` of paddle.nn.Linear names the module paddle.nn.
        code = "paddle.nn.Linear(3, 4)"
        text = inspect_(ns, code, code.index("nn") + 1)["data"]["text/plain"]
        self.assertIn("Type:           module", text)
        self.assertFalse(inspect_(ns, "nothing_here")["found"])

    def test_values_and_properties(self):
        ns = {"xs": [1, 2, 3], "t": Trap()}
        text = inspect_(ns, "xs")["data"]["text/plain"]
        self.assertIn("String form:    [1, 2, 3]", text)
        self.assertIn("Length:         3", text)
        text = inspect_(ns, "t.boom")["data"]["text/plain"]
        self.assertIn("Type:      property", text)
        src = inspect_(ns, "load_support", None, 1)
        self.assertFalse(src["found"])
        text = inspect_({"f": load_support}, "f", None, 1)["data"]["text/plain"]
        self.assertIn("Source:", text)
        self.assertIn("spec_from_file_location", text)


@unittest.skipUnless(KERNEL, "EDDY_KERNEL_BIN not set")
class ThroughTheKernel(unittest.TestCase):
    """The same requests in eddy-kernel's own namespace (notebook mode), as a
    kernel gets them."""

    def test_notebook_cell_asks_its_kernel(self):
        code = (
            "import json, paddle, eddy_kernel_support as s\n"
            "k = s._kernel\n"
            "c = k.dispatch('complete_request', json.dumps({'code': 'paddle.nn.Lin', 'cursor_pos': 13}))\n"
            "i = k.dispatch('inspect_request', json.dumps({'code': 'paddle.nn.Linear', 'cursor_pos': 16}))\n"
            "print(json.dumps([c[0], json.loads(c[1]), i[0], json.loads(i[1])]))\n")
        nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {},
              "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": code,
                         "outputs": [], "execution_count": None}]}
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "c.ipynb"), os.path.join(d, "out.ipynb")
            with open(src, "w") as f:
                json.dump(nb, f)
            env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH",)}
            r = subprocess.run([KERNEL, "run", src, "--out", out], cwd=d, env=env,
                               capture_output=True, text=True, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                outs = json.load(f)["cells"][0]["outputs"]
        text = "".join(o.get("text", "") for o in outs if o["output_type"] == "stream")
        ctype, creply, itype, ireply = json.loads(text.strip().splitlines()[-1])
        self.assertEqual(ctype, "complete_reply")
        self.assertIn("paddle.nn.Linear", creply["matches"])
        self.assertEqual(creply["cursor_start"], 0)
        self.assertEqual(itype, "inspect_reply")
        self.assertTrue(ireply["found"])
        self.assertIn("Init signature: paddle.nn.Linear(", ireply["data"]["text/plain"])


if __name__ == "__main__":
    unittest.main()
