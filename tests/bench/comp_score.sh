#!/bin/sh
# Scoring a 1,000,000-row CSV submission: Eddy's C scorer (competitions/
# score.h through tests/bench/comp_score.c) against pandas.read_csv +
# sklearn.metrics on the same files, for accuracy and RMSE.
#
#   tests/bench/comp_score.sh [BUILD_DIR] [ROWS] [RUNS]     # build/ci 1000000 5
#
# Both sides read the truth and the submission, check the ids and score the
# public and the private rows (split 30/70 by score.h's generator); the
# submission's rows are shuffled (the worst case for the id lookups; a
# submission in the truth's order is faster still). Two figures:
#   cold: truth and submission. Eddy: the process's wall time (exec to exit,
#         everything included); the peer: inside Python from the first
#         read_csv to the last score (interpreter start and imports not
#         counted, in its favour).
#   warm: the submission alone, the truth already loaded (what the server
#         does: competitions/ keeps each competition's truth loaded and
#         split). Eddy: comp_score's score_s; the peer: from the
#         submission's read_csv to the last score.
# Runs alternate Eddy, peer, Eddy, ...; prints the medians of RUNS and the
# ratios. Target: Eddy <= 0.3x the peer.
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

printf '%-9s %9s %9s %7s %9s %9s %7s   %s\n' metric cold_eddy cold_peer ratio warm_eddy warm_peer ratio \
    "scores (eddy public/private = peer public/private)"
for m in accuracy rmse; do
    p=$m; [ $m = accuracy ] && p=acc
    : > "$TMP/e"; : > "$TMP/p"; : > "$TMP/ew"; : > "$TMP/pw"
    i=0
    while [ $i -lt "$RUNS" ]; do
        t0=$(now)
        "$TMP/comp_score" $m id y "$TMP/${p}_truth.csv" "$TMP/${p}_sub.csv" $SEED $FRAC > "$TMP/eout"
        t1=$(now)
        echo "$t1 - $t0" | bc -l >> "$TMP/e"
        awk '/^score_s/{print $2}' "$TMP/eout" >> "$TMP/ew"
        $PY "$HERE/comp_score_peer.py" $m "$TMP/${p}_truth.csv" "$TMP/${p}_sub.csv" "$TMP/mask.npy" > "$TMP/pout"
        awk '/^seconds/{print $2}' "$TMP/pout" >> "$TMP/p"
        awk '/^score_seconds/{print $2}' "$TMP/pout" >> "$TMP/pw"
        i=$((i + 1))
    done
    e=$(median < "$TMP/e"); q=$(median < "$TMP/p"); ew=$(median < "$TMP/ew"); qw=$(median < "$TMP/pw")
    printf '%-9s %9.4f %9.4f %7.3f %9.4f %9.4f %7.3f   %s/%s = %s/%s\n' $m "$e" "$q" "$(echo "$e / $q" | bc -l)" \
        "$ew" "$qw" "$(echo "$ew / $qw" | bc -l)" \
        "$(awk '/^public/{print $2}' "$TMP/eout")" "$(awk '/^private/{print $2}' "$TMP/eout")" \
        "$(awk '/^public/{print $2}' "$TMP/pout")" "$(awk '/^private/{print $2}' "$TMP/pout")"
done
