#!/bin/bash
# dataset_upload.sh - resumable dataset uploads against dd, and dedup.
#
#   tests/bench/dataset_upload.sh [EDDY_BIN] [SIZE_MIB] [CHUNK_MIB]
#       EDDY_BIN   build/ci/cmd/eddy
#       SIZE_MIB   4096 (the file uploaded)
#       CHUNK_MIB  64
#
# 1. A SIZE_MIB file of random bytes (AES-CTR of zeros: incompressible, not
#    sparse) is made once in the work directory (WORK, default
#    /tmp/eddy-bench-ds, on the disk being measured).
# 2. dd copies it to the same disk with conv=fsync: MB/s.
# 3. eddy serve (data directory on the same disk) receives it through the
#    resumable API: POST .../uploads, then PUT /api/v1/uploads/{id} with
#    Content-Range, CHUNK_MIB at a time, with curl over loopback. Timed from
#    the first chunk to the answer of the last one (which includes the
#    server's sha256 check and the move into the blob store). The client's
#    own sha256 (needed to open the upload) is not timed. MB/s, the ratio to
#    dd (target >= 0.7), and the server's peak RSS over its idle RSS
#    (VmHWM - VmRSS before the upload; target < 64 MiB).
# 4. Dedup: 1,000 files of 64 KiB in a draft, publish, change 10 (1%),
#    publish: the bytes the store holds (distinct blobs, GET /api/v1/quota)
#    against the sum of the two versions' sizes.
# The source file's pages are in the page cache for both dd and the upload.
set -euo pipefail

EDDY=${1:-build/ci/cmd/eddy}
SIZE_MIB=${2:-4096}
CHUNK_MIB=${3:-64}
WORK=${WORK:-/tmp/eddy-bench-ds}
PORT=${PORT:-18977}
B=http://127.0.0.1:$PORT

mkdir -p "$WORK"
SRC=$WORK/src-$SIZE_MIB.bin
if [ ! -s "$SRC" ] || [ "$(stat -c %s "$SRC")" -ne $((SIZE_MIB << 20)) ]; then
    echo "making $SRC ($SIZE_MIB MiB)"
    # openssl dies of SIGPIPE when head has enough: not a failure
    { openssl enc -aes-128-ctr -pass pass:eddy-bench -nosalt -pbkdf2 </dev/zero 2>/dev/null || true; } |
        head -c $((SIZE_MIB << 20)) >"$SRC"
fi
cat "$SRC" >/dev/null   # into the page cache, for both sides alike

now() { date +%s.%N; }
mbps() { /usr/bin/python3 -c "print(f'{$1 / 1e6 / ($3 - $2):.1f}')"; }

# ---- dd ------------------------------------------------------------------
rm -f "$WORK/dd.out"
t0=$(now)
dd if="$SRC" of="$WORK/dd.out" bs=${CHUNK_MIB}M conv=fsync status=none
t1=$(now)
rm -f "$WORK/dd.out"
DD=$(mbps $((SIZE_MIB << 20)) "$t0" "$t1")
echo "dd conv=fsync:   $DD MB/s"

# ---- eddy ----------------------------------------------------------------
DATA=$WORK/data
rm -rf "$DATA"
mkdir -p "$DATA"
chmod 0777 "$WORK" "$DATA" 2>/dev/null || true
EDDY_USER=${EDDY_USER:-root} "$EDDY" serve --data "$DATA" --listen 127.0.0.1:$PORT >"$WORK/serve.log" 2>&1 &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true; wait $SERVE 2>/dev/null || true' EXIT
for _ in $(seq 100); do curl -sf $B/healthz >/dev/null && break; sleep 0.1; done
# the process serving (eddy serve may re-exec itself as another user)
PID=$(pgrep -n -f "serve --data $DATA" || echo $SERVE)
JAR=$WORK/jar
curl -sf -c "$JAR" -X POST $B/api/v1/auth/signup -H 'Content-Type: application/json' \
    -d '{"username":"bench","email":"b@example.com","password":"bench-password-1"}' >/dev/null
CSRF=$(curl -sf -c "$JAR" -b "$JAR" -X POST $B/api/v1/auth/login -H 'Content-Type: application/json' \
    -d '{"username":"bench","password":"bench-password-1"}' |
    /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["csrf_token"])')
api() { curl -sf -b "$JAR" -H "X-CSRF-Token: $CSRF" "$@"; }
jget() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)$1)"; }

ID=$(api -X POST $B/api/v1/datasets -d '{"name":"bench"}' | jget "['id']")
SHA=$(sha256sum "$SRC" | cut -c1-64)
SIZE=$((SIZE_MIB << 20))
UP=$(api -X POST $B/api/v1/datasets/$ID/uploads -d "{\"path\":\"big.bin\",\"size\":$SIZE,\"sha256\":\"$SHA\"}" |
    jget "['upload_id']")
# reset the peak (VmHWM) to the current RSS: what follows is the upload's
echo 5 >/proc/$PID/clear_refs 2>/dev/null || echo "(cannot reset VmHWM: the peak includes start-up)"
IDLE_KB=$(awk '/VmRSS/ {print $2}' /proc/$PID/status)
HWM0_KB=$(awk '/VmHWM/ {print $2}' /proc/$PID/status)
CH=$((CHUNK_MIB << 20))
t0=$(now)
for ((i = 0; i * CH < SIZE; i++)); do
    a=$((i * CH))
    n=$((SIZE - a < CH ? SIZE - a : CH))
    # -T - streams stdin (no copy of the chunk in curl's memory first)
    dd if="$SRC" bs=${CHUNK_MIB}M skip=$i count=1 status=none |
        api -X PUT -H "Content-Range: bytes $a-$((a + n - 1))/$SIZE" -H "Content-Length: $n" \
            -H 'Content-Type: application/octet-stream' -T - $B/api/v1/uploads/$UP >"$WORK/last.json"
done
t1=$(now)
jget "['done']" <"$WORK/last.json" | grep -q True
HWM_KB=$(awk '/VmHWM/ {print $2}' /proc/$PID/status)
UPL=$(mbps $SIZE "$t0" "$t1")
RATIO=$(/usr/bin/python3 -c "print(f'{$UPL / $DD:.2f}')")
echo "eddy upload:     $UPL MB/s (${CHUNK_MIB} MiB chunks, curl over loopback)"
echo "ratio:           ${RATIO}x dd (target >= 0.7)"
echo "server RSS:      idle $((IDLE_KB / 1024)) MiB, peak $((HWM_KB / 1024)) MiB (VmHWM before the upload $((HWM0_KB / 1024)) MiB): +$(((HWM_KB - IDLE_KB) / 1024)) MiB (target < 64)"

# ---- dedup ---------------------------------------------------------------
ID2=$(api -X POST $B/api/v1/datasets -d '{"name":"dedup"}' | jget "['id']")
FILES=$WORK/files
rm -rf "$FILES"
mkdir -p "$FILES"
head -c $((1000 * 65536)) "$SRC" | split -b 65536 -d -a 4 - "$FILES/f"
for f in "$FILES"/f*; do
    api -X PUT --data-binary @"$f" $B/api/v1/datasets/$ID2/draft/files/$(basename "$f").bin >/dev/null
done
V1=$(api -X POST $B/api/v1/datasets/$ID2/versions -d '{"message":"v1"}' | jget "['size_bytes']")
for i in 0 100 200 300 400 500 600 700 800 900; do
    f=$(printf '%s/f%04d' "$FILES" $i)
    printf 'changed %d' $i | dd of="$f" conv=notrunc status=none
    api -X PUT --data-binary @"$f" $B/api/v1/datasets/$ID2/draft/files/$(basename "$f").bin >/dev/null
done
V2=$(api -X POST $B/api/v1/datasets/$ID2/versions -d '{"message":"v2"}' | jget "['size_bytes']")
api -X DELETE $B/api/v1/datasets/$ID >/dev/null   # the big one out of the usage
USED=$(api $B/api/v1/quota | jget "['datasets']['used_bytes']")
echo "dedup:           v1 $V1 + v2 $V2 = $((V1 + V2)) bytes; stored $USED bytes ($(/usr/bin/python3 -c "print(f'{100 * $USED / ($V1 + $V2):.1f}')")%)"
rm -rf "$FILES"
