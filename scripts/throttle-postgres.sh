#!/usr/bin/env bash
# Slows every PostgreSQL server process on this machine, for a test run under a slow
# database: each round stops them all (SIGSTOP) for STOP_MS, then lets them run
# (SIGCONT) for RUN_MS, so every query and commit meets pauses as a server starved of
# CPU or disk would give them. Runs until interrupted (Ctrl-C or SIGTERM), and always
# lets the servers run again on the way out.
#   scripts/throttle-postgres.sh [STOP_MS] [RUN_MS]     (default 20 80: a fifth of the time stopped)
#   e.g. scripts/throttle-postgres.sh & npm test; kill %1
set -u
stop_ms=${1:-20}
run_ms=${2:-80}
pids() { pgrep -x postgres; }
resume() {
  pids | xargs -r kill -CONT 2>/dev/null
  exit 0
}
trap resume INT TERM EXIT
while true; do
  pids | xargs -r kill -STOP 2>/dev/null
  sleep "$(awk -v ms="$stop_ms" 'BEGIN { print ms / 1000 }')"
  pids | xargs -r kill -CONT 2>/dev/null
  sleep "$(awk -v ms="$run_ms" 'BEGIN { print ms / 1000 }')"
done
