#!/usr/bin/python3
"""Data for comp_score.sh: a truth and a submission of ROWS rows for accuracy
(10 integer classes, 80% right) and RMSE (values with 6 decimals), the
submission in shuffled order, and the public mask score.h's split gives.

    /usr/bin/python3 comp_score_data.py OUTDIR ROWS SEED FRACTION
"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "unit", "competitions"))
from ref_metrics import split_mask  # noqa: E402  the documented generator


def write(path, ids, vals, fmt):
    with open(path, "w") as f:
        f.write("id,y\n")
        f.write("".join(fmt % (i, v) for i, v in zip(ids, vals)))


def main():
    out, rows, seed, frac = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
    rng = np.random.default_rng(7)
    ids = np.arange(1, rows + 1)
    order = rng.permutation(rows)
    yt = rng.integers(0, 10, rows)
    yp = np.where(rng.random(rows) < 0.8, yt, rng.integers(0, 10, rows))
    write(os.path.join(out, "acc_truth.csv"), ids, yt, "%d,%d\n")
    write(os.path.join(out, "acc_sub.csv"), ids[order], yp[order], "%d,%d\n")
    rt = np.round(rng.normal(100, 30, rows), 6)
    rp = np.round(rt + rng.normal(0, 5, rows), 6)
    write(os.path.join(out, "rmse_truth.csv"), ids, rt, "%d,%.6f\n")
    write(os.path.join(out, "rmse_sub.csv"), ids[order], rp[order], "%d,%.6f\n")
    np.save(os.path.join(out, "mask.npy"), np.array(split_mask(rows, seed, frac), dtype=np.uint8))


if __name__ == "__main__":
    main()
