#!/usr/bin/env bash
# Slows every PostgreSQL server process on this machine, for a test run against a slow
# database: puts them in a Linux control group whose CPU quota is PERCENT of one core, so
# every query and commit waits as on a server starved of CPU. Processes that start later
# (a new server, new backends) join it within half a second. Signals are left alone (a
# test may stop a server process itself). Runs until interrupted (Ctrl-C or SIGTERM), and
# always lifts the quota on the way out. Needs root and the cgroup v1 cpu controller
# (/sys/fs/cgroup/cpu).
#   scripts/throttle-postgres.sh [PERCENT]     (default 50: half of one core)
#   e.g. scripts/throttle-postgres.sh & npm test; kill %1
set -u
percent=${1:-50}
root=/sys/fs/cgroup/cpu
group=$root/throttled-postgres
if [ ! -w "$root" ]; then
  echo "throttle-postgres: $root is not writable (needs root and the cgroup v1 cpu controller)" >&2
  exit 2
fi
mkdir -p "$group" || exit 2
echo 100000 >"$group/cpu.cfs_period_us"
echo $((percent * 1000)) >"$group/cpu.cfs_quota_us"
release() {
  echo -1 >"$group/cpu.cfs_quota_us"
  exit 0
}
trap release INT TERM
while true; do
  for pid in $(pgrep -x postgres); do
    grep -qx "$pid" "$group/cgroup.procs" 2>/dev/null || echo "$pid" >"$group/cgroup.procs" 2>/dev/null
  done
  sleep 0.5
done
