#!/bin/sh
# Slurm submit-to-running latency through Eddy's REST API against `sbatch`
# directly, on one local one-node Slurm started as it_test_slurm starts it
# (tests/integration/slurm/slurm_cluster.sh). As root; Debian's slurmctld,
# slurmd, slurmrestd, munge and slurm-client (deploy/packages.txt).
#
#   tests/bench/slurm_latency.sh BUILD_DIR [ROUNDS]        # default 20
#
# slurm_latency.py does the rounds and prints the figures. Not run by ctest.
set -u
BUILD=${1:-build}
ROUNDS=${2:-20}
HERE=$(cd "$(dirname "$0")" && pwd)
CLUSTER_SH="$HERE/../integration/slurm/slurm_cluster.sh"
# slurmrestd's local auth takes clients of its own uid only: the user
# eddy serve works as (root serves as EDDY_USER, default eddy, when it exists)
USER_=${EDDY_USER:-eddy}
id "$USER_" >/dev/null 2>&1 || USER_=root
DIR=$(mktemp -d /tmp/eddy-slurm-bench-XXXXXX)
cleanup() { "$CLUSTER_SH" stop "$DIR"; rm -rf "$DIR"; }
trap cleanup EXIT INT TERM
# Slurm's own batch scheduling pass: every second instead of every 3 s
SLURM_CLUSTER_EXTRA="SchedulerParameters=batch_sched_delay=0" "$CLUSTER_SH" start "$DIR" "$USER_"
rc=$?
if [ $rc -ne 0 ]; then
    [ $rc -eq 77 ] && echo "slurm_latency: skipped: this host cannot run the test cluster" >&2
    exit $rc
fi
echo "host: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), Slurm $(dpkg-query -W -f '${Version}' slurmctld 2>/dev/null)"
EDDY_USER=$USER_ /usr/bin/python3 "$HERE/slurm_latency.py" "$BUILD" "$DIR" "$USER_" "$ROUNDS"
