#!/usr/bin/env bash
# The run command: install what is missing, build, create the data directory
# with its SQLite database and a first admin account, and serve on
# 127.0.0.1:8080 (override with EDDY_LISTEN=HOST:PORT, EDDY_DATA=DIR).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
"$top/deploy/install-deps.sh"
"$top/deploy/build.sh" release
eddy="$top/build/release/cmd/eddy"
data=${EDDY_DATA:-$top/data}
listen=${EDDY_LISTEN:-127.0.0.1:8080}
mkdir -p "$data"
chmod 700 "$data"
# Started as root, eddy serve drops to the user eddy (made by install-deps.sh)
# and its sandbox launcher alone keeps root (sandbox/README.md "Privilege
# split"). That user must reach the build and the data directory's parent;
# a checkout under /root cannot be, so then it serves as root, saying so.
if [ "$(id -u)" -eq 0 ] && [ "${EDDY_USER:-eddy}" != root ] && getent passwd "${EDDY_USER:-eddy}" >/dev/null &&
   ! setpriv --reuid="${EDDY_USER:-eddy}" --regid="${EDDY_USER:-eddy}" --clear-groups \
       test -x "$eddy" -a -x "$(dirname "$data")" 2>/dev/null; then
  echo "eddy: user ${EDDY_USER:-eddy} cannot reach $top; serving as root (move the checkout, e.g. to /opt/eddy, to split privileges)" >&2
  export EDDY_USER=root
fi
pwfile="$data/admin-password"
if [ ! -s "$pwfile" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$pwfile")
fi
"$eddy" admin create-user --data "$data" --username admin --email admin@localhost \
  --password-file "$pwfile" --role admin --if-not-exists
echo
echo "Eddy is starting at http://$listen/"
echo "Sign in as 'admin' with the password in $pwfile"
echo "  (curl -X POST http://$listen/api/v1/auth/login -H 'Content-Type: application/json' -d '{\"username\":\"admin\",\"password\":\"'\$(cat $pwfile)'\"}')"
echo
exec "$eddy" serve --data "$data" --listen "$listen"
