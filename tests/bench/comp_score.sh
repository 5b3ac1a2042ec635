#!/bin/sh
# Scoring a 1,000,000-row CSV submission: Eddy's C scorer (competitions/
# score.h through tests/bench/comp_score.c) against pandas.read_csv +
# sklearn.metrics on the same files, for accuracy and RMSE.
#
#   tests/bench/comp_score.sh [BUILD_DIR] [ROWS] [RUNS]     # build/ci 1000000 5
#
# Both sides read the truth and the submission, check the ids and score the
# public and the private rows (split 30/70 by score.h's generator). Eddy's
# time is the process's wall time (exec to exit, everything included); the
# peer's is measured inside Python from the first read_csv to the last score
# (interpreter start and imports not counted, in its favour). Runs alternate
# Eddy, peer, Eddy, ...; prints the median of RUNS and the ratio.
# Target: Eddy <= 0.3x the peer.
set -eu
BUILD=${1:-build/ci}
ROWS=${2:-1000000}
RUNS=${3:-5}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
SEED=20261205
FRAC=0.3
TMP=$(mktemp -d /tmp/eddy-comp-score-XXXXXX)
trap 'rm -rf "$TMP"' EXIT

# The scorer: comp_score.c against the build's libraries (no CMake edit needed).
cc -O2 -I"$ROOT/competitions" -I"$ROOT/common" "$HERE/comp_score.c" \
   "$BUILD/competitions/libeddy_competitions.a" "$BUILD/common/libed_common.a" -lm -o "$TMP/comp_score"
$PY "$HERE/comp_score_data.py" "$TMP" "$ROWS" "$SEED" "$FRAC"
echo "rows $ROWS, runs $RUNS, $(nproc) CPUs; files: $(du -h "$TMP/acc_sub.csv" | cut -f1) (accuracy), $(du -h "$TMP/rmse_sub.csv" | cut -f1) (rmse)"

now() { date +%s.%N; }
median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }

printf '%-9s %12s %12s %8s   %s\n' metric eddy_s peer_s ratio "scores (eddy public/private = peer public/private)"
for m in accuracy rmse; do
    p=$m; [ $m = accuracy ] && p=acc
    : > "$TMP/e"; : > "$TMP/p"
    i=0
    while [ $i -lt "$RUNS" ]; do
        t0=$(now)
        "$TMP/comp_score" $m id y "$TMP/${p}_truth.csv" "$TMP/${p}_sub.csv" $SEED $FRAC > "$TMP/eout"
        t1=$(now)
        echo "$t1 - $t0" | bc -l >> "$TMP/e"
        $PY "$HERE/comp_score_peer.py" $m "$TMP/${p}_truth.csv" "$TMP/${p}_sub.csv" "$TMP/mask.npy" > "$TMP/pout"
        awk '/^seconds/{print $2}' "$TMP/pout" >> "$TMP/p"
        i=$((i + 1))
    done
    e=$(median < "$TMP/e"); q=$(median < "$TMP/p")
    printf '%-9s %12.4f %12.4f %8.3f   %s/%s = %s/%s\n' $m "$e" "$q" "$(echo "$e / $q" | bc -l)" \
        "$(awk '/^public/{print $2}' "$TMP/eout")" "$(awk '/^private/{print $2}' "$TMP/eout")" \
        "$(awk '/^public/{print $2}' "$TMP/pout")" "$(awk '/^private/{print $2}' "$TMP/pout")"
done
