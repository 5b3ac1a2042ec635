"""Eager paddle side of the inference benchmark: the same model (same seed,
so the same weights as infer_models.py saved), no_grad, eval mode; per call
to_tensor + forward + numpy(), as a Python server would. Prints
`NAME_bB_us MEDIAN` lines like infer_bench.

    infer_peer.py DIR ITERS
"""
import os
import sys
import time

import numpy as np

import paddle

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import infer_models  # noqa: E402


def main():
    d, iters = sys.argv[1], int(sys.argv[2])
    for name, (_, shape) in infer_models.MODELS.items():
        net, _ = infer_models.build(name)
        for batch in (1, 64):
            x = np.fromfile(os.path.join(d, '{}_b{}.f32'.format(name, batch)),
                            dtype=np.float32).reshape([batch] + shape[1:])
            times = []
            with paddle.no_grad():
                for i in range(iters + iters // 10 + 1):
                    t0 = time.perf_counter()
                    y = net(paddle.to_tensor(x)).numpy()
                    t1 = time.perf_counter()
                    if i > iters // 10:
                        times.append(t1 - t0)
            np.save(os.path.join(d, '{}_b{}_eager.npy'.format(name, batch)), y)
            print('{}_b{}_us {:.2f}'.format(name, batch, 1e6 * float(np.median(times))))


if __name__ == '__main__':
    main()
