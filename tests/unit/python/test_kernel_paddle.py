"""Paddle code run by eddy-kernel, the way notebooks and jobs run it: a
notebook executed with `eddy-kernel run NB.ipynb --out OUT.ipynb` and a
script with `eddy-kernel run FILE.py`, both importing the built paddle
package (no PYTHONPATH: the kernel finds it on its own)."""
import base64
import json
import os
import subprocess
import tempfile
import unittest

KERNEL = os.environ.get("EDDY_KERNEL_BIN")


def cell(src):
    return {"cell_type": "code", "execution_count": None, "metadata": {},
            "outputs": [], "source": src}


def run_kernel(args, cwd):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([KERNEL, "run", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@unittest.skipUnless(KERNEL and os.path.exists(KERNEL), "eddy-kernel was not built")
class KernelRunsPaddle(unittest.TestCase):
    def test_notebook_trains_and_plots(self):
        nb = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [
            cell("import paddle\npaddle.utils.run_check()"),
            cell("paddle.seed(1)\n"
                 "x = paddle.rand([64, 1]) * 4\n"
                 "y = 2 * x + 10\n"
                 "net = paddle.nn.Linear(1, 1)\n"
                 "opt = paddle.optimizer.SGD(learning_rate=0.05, parameters=net.parameters())\n"
                 "losses = []\n"
                 "for i in range(2000):\n"
                 "    loss = paddle.nn.functional.mse_loss(net(x), y)\n"
                 "    loss.backward(); opt.step(); opt.clear_grad()\n"
                 "    losses.append(float(loss))\n"
                 "round(float(net.weight), 2), round(float(net.bias), 2)"),
            cell("import matplotlib.pyplot as plt\nplt.plot(losses)\nplt.yscale('log');"),
            cell("loss.shape, loss.dtype"),
        ]}
        with tempfile.TemporaryDirectory() as d:
            src, out = os.path.join(d, "nb.ipynb"), os.path.join(d, "out.ipynb")
            with open(src, "w") as f:
                json.dump(nb, f)
            r = run_kernel([src, "--out", out], d)
            self.assertEqual(r.returncode, 0, r.stderr)
            with open(out) as f:
                done = json.load(f)
        cells = done["cells"]
        self.assertEqual([c["execution_count"] for c in cells], [1, 2, 3, 4])
        text = "".join("".join(o.get("text", "")) for o in cells[0]["outputs"])
        self.assertIn("PaddlePaddle works well on 1 CPU.", text)
        result = cells[1]["outputs"][-1]
        self.assertEqual(result["output_type"], "execute_result")
        w, b = eval(result["data"]["text/plain"])
        self.assertAlmostEqual(w, 2.0, delta=0.05)
        self.assertAlmostEqual(b, 10.0, delta=0.1)
        pngs = [o for o in cells[2]["outputs"] if o["output_type"] == "display_data"
                and "image/png" in o["data"]]
        self.assertEqual(len(pngs), 1)
        self.assertTrue(base64.b64decode(pngs[0]["data"]["image/png"]).startswith(b"\x89PNG"))
        self.assertIn("[]", cells[3]["outputs"][-1]["data"]["text/plain"])  # 0-D loss

    def test_script_gets_argv_and_exit_code(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "train.py")
            with open(path, "w") as f:
                f.write("import sys, paddle\n"
                        "t = paddle.to_tensor([1.0, 2.0, 3.0])\n"
                        "print('sum', float(t.sum()), sys.argv[1:])\n"
                        "sys.exit(int(sys.argv[1]))\n")
            r = run_kernel([path, "3", "x"], d)
        self.assertEqual(r.returncode, 3, r.stderr)
        self.assertIn("sum 6.0 ['3', 'x']", r.stdout)

    def test_error_in_paddle_code_is_a_python_traceback(self):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "bad.py")
            with open(path, "w") as f:
                f.write("import paddle\npaddle.ones([2, 3]) + paddle.ones([4])\n")
            r = run_kernel([path], d)
        self.assertEqual(r.returncode, 1)
        self.assertIn("Traceback", r.stderr)
        self.assertIn("[2, 3]", r.stderr)
        self.assertIn("[4]", r.stderr)


if __name__ == "__main__":
    unittest.main()
