#!/usr/bin/env bash
# Run a command while the machine is busy: two CPU-bound processes per core (or
# LOAD_PER_CORE of them) spin at normal priority for as long as the command runs, then
# are stopped. Exits with the command's status.
#
#   scripts/with-cpu-load.sh .venv/bin/python -m pytest tests/hooks -q
#
# Proves that a test synchronises on events, pipes or rows rather than racing a clock:
# with twice as many runnable processes as cores, any child the suite starts waits for
# the CPU, as it would on a shared CI runner.
set -euo pipefail
[ "$#" -gt 0 ] || { echo "usage: $0 COMMAND [ARG...]" >&2; exit 2; }

per_core="${LOAD_PER_CORE:-2}"
cores=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc)
count=$((cores * per_core))
pids=()
stop_load() {
  [ "${#pids[@]}" -gt 0 ] && kill "${pids[@]}" 2>/dev/null || true
  [ "${#pids[@]}" -gt 0 ] && wait "${pids[@]}" 2>/dev/null || true
}
trap stop_load EXIT INT TERM

for _ in $(seq "$count"); do
  # A shell busy loop: no interpreter start-up cost, no memory, no I/O.
  sh -c 'while :; do :; done' &
  pids+=("$!")
done
echo "with-cpu-load: $count busy processes on $cores cores" >&2
status=0
"$@" || status=$?
exit "$status"
