#!/bin/sh
# Authenticated GET /api/v1/me with an API key under wrk, side by side with
# Jupyter Server 1.23's GET /api/status (token auth), in one run.
#
#   tests/bench/http_me.sh BUILD_DIR [DURATION]        # default 10s
#
# Both: wrk -t2 -c64 -d10s --latency. Target: Eddy >= 25,000 requests/s with
# p99 <= 10 ms. Needs wrk (Debian package wrk) and python3-jupyter-server.
# The key is made with rate_limit_per_min 1000000 so the limiter counts every
# request without refusing them (a 10 s run stays under a minute's allowance).
# Not run by ctest.
set -eu
BUILD=${1:-build}
DUR=${2:-10s}
EDDY="$BUILD/cmd/eddy"
TMP=$(mktemp -d /tmp/eddy-bench-http-XXXXXX)
EPID= ; JPID=
cleanup() {
    [ -n "$EPID" ] && kill "$EPID" 2>/dev/null && wait "$EPID" 2>/dev/null || true
    [ -n "$JPID" ] && kill "$JPID" 2>/dev/null && wait "$JPID" 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() {
    i=0
    while ! /usr/bin/python3 -c "import socket; socket.create_connection(('127.0.0.1', $1), 0.2)" 2>/dev/null; do
        i=$((i + 1)); [ $i -gt 300 ] && { echo "port $1 never opened" >&2; exit 1; }
        sleep 0.1
    done
}
summary() { # name, wrk output file
    rps=$(awk '/^Requests\/sec:/ {print $2}' "$2")
    p50=$(awk '$1 == "50%" {print $2}' "$2")
    p99=$(awk '$1 == "99%" {print $2}' "$2")
    bad=$(awk '/Non-2xx/ {print $NF}' "$2"); bad=${bad:-0}
    errs=$(awk '/Socket errors/ {print}' "$2")
    printf '%-26s %10s req/s   p50 %-9s p99 %-9s non-2xx %s %s\n' "$1" "$rps" "$p50" "$p99" "$bad" "$errs"
}

# ---- eddy ----
mkdir -p "$TMP/eddy"
"$EDDY" admin create-user --data "$TMP/eddy" --username bench --email bench@example.com \
    --password 'bench password 1' >/dev/null
EPORT=$(free_port)
"$EDDY" serve --data "$TMP/eddy" --listen "127.0.0.1:$EPORT" >"$TMP/eddy.log" 2>&1 &
EPID=$!
wait_port "$EPORT"
curl -s -c "$TMP/cj" -H 'Content-Type: application/json' \
    -d '{"username":"bench","password":"bench password 1"}' \
    "http://127.0.0.1:$EPORT/api/v1/auth/login" >"$TMP/login.json"
CSRF=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["csrf_token"])' "$TMP/login.json")
curl -s -b "$TMP/cj" -H "X-CSRF-Token: $CSRF" -H 'Content-Type: application/json' \
    -d '{"name":"bench","env":"prod","scopes":["read"],"rate_limit_per_min":1000000}' \
    "http://127.0.0.1:$EPORT/api/v1/keys" >"$TMP/key.json"
KEY=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["key"])' "$TMP/key.json")
test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $KEY" "http://127.0.0.1:$EPORT/api/v1/me")" = 200

# ---- jupyter ----
JPORT=$(free_port)
TOKEN=$(/usr/bin/python3 -c 'import uuid; print(uuid.uuid4().hex)')
mkdir -p "$TMP/jroot"
JUPYTER_RUNTIME_DIR="$TMP/rt" HOME="$TMP" /usr/bin/python3 -m jupyter_server --no-browser \
    --port="$JPORT" --ServerApp.token="$TOKEN" --ServerApp.root_dir="$TMP/jroot" \
    --ServerApp.allow_root=True >"$TMP/jupyter.log" 2>&1 &
JPID=$!
wait_port "$JPORT"
test "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: token $TOKEN" "http://127.0.0.1:$JPORT/api/status")" = 200

wrk -t2 -c64 -d"$DUR" --latency -H "Authorization: Bearer $KEY" "http://127.0.0.1:$EPORT/api/v1/me" >"$TMP/eddy.wrk"
wrk -t2 -c64 -d"$DUR" --latency -H "Authorization: token $TOKEN" "http://127.0.0.1:$JPORT/api/status" >"$TMP/jupyter.wrk"
echo "wrk -t2 -c64 -d$DUR (target: eddy >= 25,000 req/s, p99 <= 10 ms)"
summary "eddy GET /api/v1/me" "$TMP/eddy.wrk"
summary "jupyter GET /api/status" "$TMP/jupyter.wrk"
