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
pwfile="$data/admin-password"
if [ ! -s "$pwfile" ]; then
  (umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > "$pwfile")
fi
"$eddy" admin create-user --data "$data" --username admin --email admin@localhost \
  --password-file "$pwfile" --role admin --if-not-exists
echo
echo "Eddy is starting at http://$listen/"
echo "Sign in as 'admin' with the password in $pwfile"
echo "  (curl -X POST http://$listen/api/v1/auth/login -d '{\"username\":\"admin\",\"password\":\"'\$(cat $pwfile)'\"}')"
echo
exec "$eddy" serve --data "$data" --listen "$listen"
