#!/bin/sh
# slurm_cluster.sh start DIR [USER] | stop DIR | stop-slurmd DIR | start-slurmd DIR
#
# A one-node Slurm cluster of its own, for the Slurm executor's tests and
# benchmark: munged with its own key, slurmctld, slurmd and slurmrestd, all
# on non-default ports and sockets with their state under DIR (made 0755 so
# the server's user reaches slurmrestd's socket DIR/rest/sock). slurmrestd
# runs as USER (default root), the user `eddy serve` works as: its local
# authentication accepts only clients of its own uid. Nothing is
# installed here (deploy/packages.txt lists slurmctld, slurmd, slurmrestd and
# munge). No cgroups: proctrack/linuxproc and task/none.
#
# SLURM_CLUSTER_EXTRA (optional): more slurm.conf lines, appended (the
# latency benchmark sets SchedulerParameters=batch_sched_delay=0).
#
# start: 0 when the node is idle and slurmrestd answers; 77 with the reason
# on stderr where this host cannot run it (binaries missing, not root); 1 on
# another failure (the daemons' logs are in DIR/log). stop: cancels every
# job, then stops the daemons it started (by their pid files), never others.
set -u
cmd=${1:?start|stop}
dir=${2:?DIR}
user=${3:-root}
conf=$dir/slurm.conf
export SLURM_CONF=$conf

skip() { echo "slurm_cluster: skip: $*" >&2; exit 77; }

pid_of() { [ -s "$1" ] && cat "$1"; }
stop_pidfile() {
  p=$(pid_of "$1") || return 0
  kill "$p" 2>/dev/null || return 0
  i=0; while kill -0 "$p" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
  kill -9 "$p" 2>/dev/null || true
  rm -f "$1"
}

start_slurmd() {
  /usr/sbin/slurmd || { echo "slurm_cluster: slurmd did not start; see $dir/log/slurmd.log" >&2; tail -n 5 "$dir/log/slurmd.log" >&2; return 1; }
}

case $cmd in
start)
  for b in munged slurmctld slurmd slurmrestd; do
    [ -x /usr/sbin/$b ] || skip "/usr/sbin/$b is missing (deploy/install-deps.sh installs slurmctld, slurmd, slurmrestd, munge)"
  done
  command -v sinfo >/dev/null || skip "sinfo is missing (package slurm-client)"
  [ "$(id -u)" -eq 0 ] || skip "slurmd runs jobs as the server's user: it needs root"
  mkdir -p "$dir/state" "$dir/spool" "$dir/log" "$dir/munge" || exit 1
  chmod 0755 "$dir" "$dir/munge"
  dd if=/dev/urandom of="$dir/munge.key" bs=1024 count=1 2>/dev/null && chmod 0400 "$dir/munge.key"
  ports=$(/usr/bin/python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]
print(*[x.getsockname()[1] for x in s])')
  set -- $ports
  host=$(hostname -s)
  cpus=$(nproc)
  cat >"$conf" <<CONF
ClusterName=eddytest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$1
SlurmdPort=$2
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=5
MessageTimeout=5
InactiveLimit=0
MinJobAge=600
KillWait=2
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=2000 State=UNKNOWN
PartitionName=eddy Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
  [ -n "${SLURM_CLUSTER_EXTRA:-}" ] && printf '%s\n' "$SLURM_CLUSTER_EXTRA" >>"$conf"
  /usr/sbin/munged -f --key-file="$dir/munge.key" -S "$dir/munge/sock" --log-file="$dir/log/munged.log" \
    --pid-file="$dir/munge/pid" --seed-file="$dir/munge/seed" || { echo "slurm_cluster: munged did not start" >&2; exit 1; }
  /usr/sbin/slurmctld -i || { echo "slurm_cluster: slurmctld did not start; see $dir/log/slurmctld.log" >&2; exit 1; }
  start_slurmd || exit 1
  # slurmrestd: local auth over a unix socket (Debian's Slurm has no
  # auth/jwt); it refuses root unless told, and needs no slurmdbd with only
  # the slurmctld plugins loaded

  mkdir -p "$dir/rest" && chown "$user" "$dir/rest" && chmod 0755 "$dir/rest" || exit 1
  if [ "$user" = root ]; then
    as=""
  else
    as="setpriv --reuid=$user --regid=$(id -g "$user") --init-groups"
  fi
  SLURMRESTD_SECURITY=disable_user_check,disable_unshare_files,disable_unshare_sysv \
    setsid $as /usr/sbin/slurmrestd -a rest_auth/local -s openapi/v0.0.38,openapi/v0.0.37 "unix:$dir/rest/sock" \
    >"$dir/log/slurmrestd.log" 2>&1 </dev/null &
  echo $! >"$dir/slurmrestd.pid"
  i=0
  while :; do
    st=$(sinfo -h -o %t 2>/dev/null)
    if [ "$st" = idle ] && [ -S "$dir/rest/sock" ]; then
      exit 0
    fi
    i=$((i + 1))
    if [ $i -gt 150 ]; then
      echo "slurm_cluster: the node is '$st' after 15 s" >&2
      tail -n 5 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir/log/slurmrestd.log" >&2
      exit 1
    fi
    sleep 0.1
  done
  ;;
stop-slurmd)
  p=$(pid_of "$dir/slurmd.pid") && kill -9 "$p" 2>/dev/null
  rm -f "$dir/slurmd.pid"
  ;;
start-slurmd)
  start_slurmd
  ;;
stop)
  [ -f "$conf" ] && scancel --partition=eddy 2>/dev/null
  sleep 0.5
  stop_pidfile "$dir/slurmrestd.pid"
  stop_pidfile "$dir/slurmd.pid"
  stop_pidfile "$dir/slurmctld.pid"
  stop_pidfile "$dir/munge/pid"
  # job steps whose slurmd was killed (the node-failure case) outlive it:
  # slurmstepd processes reading this cluster's configuration
  for p in $(pgrep -f "slurmstepd" 2>/dev/null); do
    if tr '\0' '\n' <"/proc/$p/environ" 2>/dev/null | grep -qx "SLURM_CONF=$conf"; then kill -9 "$p" 2>/dev/null; fi
  done
  exit 0
  ;;
*) echo "usage: $0 start|stop|stop-slurmd|start-slurmd DIR" >&2; exit 2 ;;
esac
