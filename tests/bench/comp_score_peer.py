#!/usr/bin/python3
"""The peer for comp_score.sh: what a Python scorer does with the same files.

    /usr/bin/python3 comp_score_peer.py METRIC TRUTH.csv SUB.csv MASK.npy

pandas.read_csv both files, check the ids (no duplicates, the same set),
align the submission to the truth, then sklearn's metric over the public and
the private rows (MASK.npy: 1 = public, in truth row order). Prints
"public <score>", "private <score>", "seconds <wall>" (from the first
read_csv to the last score; interpreter start and imports not counted) and
"score_seconds <wall>" (the same from the submission's read_csv on: what a
scorer that keeps the truth loaded spends per submission).
"""
import sys
import time

import numpy as np
import pandas as pd
from sklearn import metrics as skm


def main():
    metric, truth_path, sub_path, mask_path = sys.argv[1:5]
    mask = np.load(mask_path).astype(bool)
    t0 = time.perf_counter()
    t = pd.read_csv(truth_path)
    t1 = time.perf_counter()
    s = pd.read_csv(sub_path)
    if s["id"].duplicated().any():
        raise SystemExit("duplicate ids")
    s = s.set_index("id").reindex(t["id"])
    if s["y"].isna().any():
        raise SystemExit("missing ids")
    yt, yp = t["y"].to_numpy(), s["y"].to_numpy()
    out = []
    for m in (mask, ~mask):
        if metric == "accuracy":
            out.append(skm.accuracy_score(yt[m], yp[m]))
        else:
            out.append(skm.mean_squared_error(yt[m], yp[m], squared=False))
    t2 = time.perf_counter()
    print("public %.17g\nprivate %.17g\nseconds %.6f\nscore_seconds %.6f" % (out[0], out[1], t2 - t0, t2 - t1))


if __name__ == "__main__":
    main()
