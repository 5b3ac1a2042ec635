#!/usr/bin/env bash
# Install the Debian packages in deploy/packages.txt that are not installed yet.
# Safe to run again: it does nothing when everything is present.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mapfile -t wanted < <(sed -e 's/#.*//' -e '/^\s*$/d' "$here/packages.txt")
missing=()
for p in "${wanted[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# The web app is built with Node.js and npm. Use the ones on PATH when present
# (newer than Debian's); otherwise Debian's nodejs and npm.
if ! command -v npm >/dev/null 2>&1; then
  for p in nodejs npm; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
fi
# The unprivileged user `eddy serve` drops to when started as root (the
# privilege split, sandbox/README.md). Idempotent; skipped when not root.
if [ "$(id -u)" -eq 0 ] && ! getent passwd eddy >/dev/null; then
  echo "eddy: creating the system user eddy"
  useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin eddy
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "eddy: missing packages: ${missing[*]}; run as root to install them" >&2
  exit 1
fi
echo "eddy: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# Slurm and munge (the Slurm executor's test starts its own daemons): Debian
# starts and enables their system services on install, which on a host that is
# not a Slurm node would run a slurmctld/slurmd with the default configuration.
# A policy-rc.d that refuses every start keeps them stopped during the install
# (removed after, unless one was there before); their units are then disabled.
slurm_units=(munge.service slurmctld.service slurmd.service slurmrestd.service)
own_policy=0
if [ ! -e /usr/sbin/policy-rc.d ]; then
  printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
  chmod 0755 /usr/sbin/policy-rc.d
  own_policy=1
fi
trap 'if [ $own_policy -eq 1 ]; then rm -f /usr/sbin/policy-rc.d; fi' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}"
if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
  for u in "${slurm_units[@]}"; do
    if systemctl list-unit-files "$u" >/dev/null 2>&1; then
      systemctl disable --now "$u" >/dev/null 2>&1 || true
    fi
  done
fi
