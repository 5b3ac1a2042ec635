#!/usr/bin/python3
"""Reference values for competitions/metrics.c, computed independently with
sklearn (and Kaggle's ml_metrics apk for MAP@K).

    /usr/bin/python3 ref_metrics.py OUTDIR [CASES_PER_METRIC]

Writes OUTDIR/<case>.truth.csv and OUTDIR/<case>.sub.csv for random cases
(ties, degenerate classes: one class absent, multi-class auc one-vs-rest, every value equal, perfect and
worst predictions, unknown predicted labels, probabilities of exactly 0 and
1, rows that do not sum to 1, quoted ids, CRLF) and OUTDIR/manifest.txt, one
line per case:

    name metric id_column target_column seed fraction public private

public/private are sklearn's scores over the rows score.h's split marks
public/private (the split's generator is re-implemented here from its
documentation: splitmix64, xoshiro256**, Lemire's bounded draw), written
with repr(); "nan" for a subset with no rows; "split_error" where the split
must be refused (auc with a single class in a subset).

Exit 77 when numpy or sklearn is missing (the C test then skips).
"""
import csv
import io
import math
import os
import sys
import warnings

try:
    import numpy as np
    from sklearn import metrics as skm
except ImportError as e:  # pragma: no cover
    print("skip: %s" % e, file=sys.stderr)
    sys.exit(77)

M64 = (1 << 64) - 1


def split_mask(rows, seed, fraction):
    """score.h comp_split_mask(), from its comment."""
    x = seed & M64
    s = []
    for _ in range(4):
        x = (x + 0x9E3779B97F4A7C15) & M64
        z = x
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        s.append(z ^ (z >> 31))

    def rotl(v, k):
        return ((v << k) | (v >> (64 - k))) & M64

    def nxt():
        r = (rotl((s[1] * 5) & M64, 7) * 9) & M64
        t = (s[1] << 17) & M64
        s[2] ^= s[0]
        s[3] ^= s[1]
        s[1] ^= s[2]
        s[0] ^= s[3]
        s[2] ^= t
        s[3] = rotl(s[3], 45)
        return r

    def bounded(b):
        m = nxt() * b
        lo = m & M64
        if lo < b:
            thresh = ((1 << 64) - b) % b
            while lo < thresh:
                m = nxt() * b
                lo = m & M64
        return m >> 64

    npub = min(rows, int(math.floor(rows * fraction + 0.5)))
    perm = list(range(rows))
    mask = [0] * rows
    for i in range(npub):
        j = i + bounded(rows - i)
        perm[i], perm[j] = perm[j], perm[i]
        mask[perm[i]] = 1
    return mask


def apk(actual, predicted, k):
    """Kaggle's ml_metrics.average_precision.apk."""
    if len(predicted) > k:
        predicted = predicted[:k]
    score = 0.0
    num_hits = 0.0
    for i, p in enumerate(predicted):
        if p in actual and p not in predicted[:i]:
            num_hits += 1.0
            score += num_hits / (i + 1.0)
    if not actual:
        return 0.0
    return score / min(len(actual), k)


def write_csv(path, header, rows, crlf):
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\r\n" if crlf else "\n")
    w.writerow(header)
    for r in rows:
        w.writerow(r)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(buf.getvalue())


def make_ids(rng, n):
    ids = []
    for i in range(n):
        kind = rng.integers(0, 4)
        ids.append(str(i) if kind < 2 else ("id %d" % i) if kind == 2 else ('x"%d,y' % i))
    return ids


def labels_for(rng, k, numeric):
    if numeric:
        return [int(v) for v in rng.choice(np.arange(-3, 40), size=k, replace=False)]
    return ["c%d" % v for v in rng.choice(np.arange(0, 60), size=k, replace=False)]


def compute(metric, yt, yp, extra):
    """sklearn's value over one subset."""
    if len(yt) == 0:
        return float("nan")
    if metric == "accuracy":
        return skm.accuracy_score(yt, yp)
    if metric == "f1_macro":
        return skm.f1_score(yt, yp, average="macro")
    if metric == "f1_micro":
        return skm.f1_score(yt, yp, average="micro")
    if metric == "rmse":
        return skm.mean_squared_error(yt, yp, squared=False)
    if metric == "mae":
        return skm.mean_absolute_error(yt, yp)
    if metric == "logloss":
        return skm.log_loss(yt, np.asarray(yp, dtype=np.float64), labels=extra)
    if metric == "auc" and isinstance(extra, tuple):  # one-vs-rest, macro
        return skm.roc_auc_score(yt, np.asarray(yp, dtype=np.float64), multi_class="ovr", average="macro",
                                 labels=extra[1])
    if metric == "auc":
        return skm.roc_auc_score([1 if y == extra else 0 for y in yt], yp)
    if metric.startswith("map@"):
        k = int(metric[4:])
        return float(np.mean([apk(a.split(), p.split(), k) for a, p in zip(yt, yp)]))
    raise ValueError(metric)


def gen_case(rng, metric, variant):
    n = int(rng.choice([1, 2, 3, 7, 20, 100, 400]))
    ids = make_ids(rng, n)
    numeric = bool(rng.integers(0, 2))
    tname, pred_cols, extra = "target", None, None
    if metric in ("accuracy", "f1_macro", "f1_micro"):
        k = int(rng.integers(1, 7))
        labs = labels_for(rng, k + 2, numeric)
        yt = [labs[int(rng.integers(0, k))] for _ in range(n)]
        if variant == "perfect":
            yp = list(yt)
        elif variant == "worst":
            yp = [labs[(labs.index(y) + 1) % k] if k > 1 else labs[k] for y in yt]
        elif variant == "constant":
            yp = [labs[0]] * n
        else:  # random, including labels the truth does not have
            yp = [labs[int(rng.integers(0, k + 2))] for _ in range(n)]
        truth = [[i, y] for i, y in zip(ids, yt)]
        sub = [[i, p] for i, p in zip(ids, yp)]
        header = ["id", tname]
    elif metric in ("rmse", "mae"):
        yt = [float(v) for v in np.round(rng.normal(0, 10, n), int(rng.integers(0, 4)))]
        if variant == "perfect":
            yp = list(yt)
        elif variant == "constant":
            yp = [1.5] * n
        else:
            yp = [float(v) for v in rng.normal(0, 10, n) * (10.0 ** float(rng.integers(-3, 4)))]
        truth = [[i, repr(y)] for i, y in zip(ids, yt)]
        sub = [[i, repr(p)] for i, p in zip(ids, yp)]
        header = ["id", tname]
    elif metric == "logloss":
        k = 2 if variant in ("binary1", "binary2") else int(rng.integers(2, 6))
        labs = sorted(labels_for(rng, k, numeric))
        n = max(n, k)  # the truth names the classes: each appears at least once
        ids = make_ids(rng, n)
        yt = [labs[int(rng.integers(0, k))] for _ in range(n)]
        yt[:k] = labs
        P = rng.random((n, k))
        P[rng.random((n, k)) < 0.1] = 0.0
        P[rng.random((n, k)) < 0.05] = 1.0
        if variant == "binary1":
            p1 = [float(v) for v in P[:, 1]]
            truth = [[i, y] for i, y in zip(ids, yt)]
            sub = [[i, repr(p)] for i, p in zip(ids, p1)]
            header = ["id", tname]
            yp = p1
        else:
            truth = [[i, y] for i, y in zip(ids, yt)]
            sub = [[i] + [repr(float(v)) for v in row] for i, row in zip(ids, P)]
            header = ["id"] + [str(l) for l in labs]
            yp = [list(map(float, row)) for row in P]
        extra = labs
    elif metric == "auc" and variant.startswith("multi"):
        # 3 to 5 classes, rows of probabilities from small integer weights
        # (many ties), one column per class
        k = int(rng.integers(3, 6))
        labs = sorted(labels_for(rng, k, numeric))
        n = max(n, k)
        ids = make_ids(rng, n)
        yt = [labs[int(rng.integers(0, k))] for _ in range(n)]
        yt[:k] = labs
        W = rng.integers(0, 4, (n, k)).astype(np.float64)
        W[W.sum(axis=1) == 0, 0] = 1.0
        P = W / W.sum(axis=1, keepdims=True)
        truth = [[i, y] for i, y in zip(ids, yt)]
        sub = [[i] + [repr(float(v)) for v in row] for i, row in zip(ids, P)]
        header = ["id"] + [str(l) for l in labs]
        yp = [list(map(float, row)) for row in P]
        extra = ("ovr", labs)
    elif metric == "auc":
        labs = sorted(labels_for(rng, 2, numeric))
        yt = [labs[int(rng.integers(0, 2))] for _ in range(n)]
        pos = labs[1]
        if variant == "perfect":
            sc = [1.0 if y == pos else 0.0 for y in yt]
        elif variant == "worst":
            sc = [0.0 if y == pos else 1.0 for y in yt]
        elif variant == "constant":
            sc = [0.25] * n
        else:  # coarse scores: many ties
            sc = [float(v) for v in np.round(rng.random(n), 1)]
        truth = [[i, y] for i, y in zip(ids, yt)]
        if variant == "twocol":
            sub = [[i, repr(1 - s), repr(s)] for i, s in zip(ids, sc)]
            header = ["id", str(labs[0]), str(labs[1])]
        else:
            sub = [[i, repr(s)] for i, s in zip(ids, sc)]
            header = ["id", tname]
        yp = sc
        extra = pos
    else:  # map@k
        kk = int(metric[4:])
        vocab = ["w%d" % v for v in range(12)]
        yt = [" ".join(rng.choice(vocab, size=int(rng.integers(0, 5)))) for _ in range(n)]
        if variant == "perfect":
            yp = list(yt)
        else:
            yp = [" ".join(rng.choice(vocab, size=int(rng.integers(0, kk + 3)))) for _ in range(n)]
        truth = [[i, y] for i, y in zip(ids, yt)]
        sub = [[i, p] for i, p in zip(ids, yp)]
        header = ["id", tname]
    return ids, yt, yp, truth, sub, header, extra


def main():
    out = sys.argv[1]
    per = int(sys.argv[2]) if len(sys.argv) > 2 else 6
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(20261205)
    warnings.simplefilter("ignore")
    variants = {
        "accuracy": ["random", "perfect", "worst", "constant"],
        "f1_macro": ["random", "perfect", "worst", "constant"],
        "f1_micro": ["random", "perfect", "worst", "constant"],
        "rmse": ["random", "perfect", "constant"],
        "mae": ["random", "perfect", "constant"],
        "logloss": ["binary1", "binary2", "multi"],
        "auc": ["random", "perfect", "worst", "constant", "twocol", "multi", "multi2"],
        "map@1": ["random", "perfect"],
        "map@3": ["random", "perfect"],
        "map@10": ["random"],
    }
    lines = []
    for metric, vs in variants.items():
        for rep in range(per):
            for v in vs:
                name = "%s-%s-%d" % (metric.replace("@", "_at_"), v, rep)
                ids, yt, yp, truth, sub, header, extra = gen_case(rng, metric, v)
                crlf = bool(rng.integers(0, 2))
                write_csv(os.path.join(out, name + ".truth.csv"), ["id", "target"], truth, crlf)
                order = rng.permutation(len(sub))
                scols = rng.permutation(len(header))  # columns in any order
                write_csv(os.path.join(out, name + ".sub.csv"), [header[c] for c in scols],
                          [[sub[r][c] for c in scols] for r in order], crlf)
                seed = int(rng.integers(0, 1 << 62))
                fraction = float(rng.choice([0.0, 0.25, 0.5, 0.7, 1.0]))
                mask = split_mask(len(ids), seed, fraction)
                vals = []
                for s in (1, 0):
                    sel = [i for i in range(len(ids)) if mask[i] == s]
                    try:
                        vals.append(compute(metric, [yt[i] for i in sel], [yp[i] for i in sel], extra))
                    except ValueError:  # auc over a single class: checked below
                        vals.append(float("nan"))
                if metric == "auc":
                    bad = False
                    need = len(extra[1]) if isinstance(extra, tuple) else 2  # one-vs-rest: every class
                    for s in (0, 1):
                        ys = {yt[i] for i in range(len(ids)) if mask[i] == s}
                        if len([i for i in range(len(ids)) if mask[i] == s]) > 0 and len(ys) < need:
                            bad = True
                    if bad or len(set(yt)) < 2:
                        vals = None
                if vals is None:
                    pv = "split_error"
                    qv = "split_error"
                    if len(set(yt)) < 2:
                        pv = qv = "truth_error"
                else:
                    pv, qv = repr(float(vals[0])), repr(float(vals[1]))
                lines.append("%s %s id target %d %r %s %s" % (name, metric, seed, fraction, pv, qv))
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("%d cases" % len(lines))


if __name__ == "__main__":
    main()
