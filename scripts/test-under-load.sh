#!/usr/bin/env bash
# make test-under-load: the test suite (make test) with a CPU hog beside it, the way a CI runner
# or a developer machine shared with other work runs it. A test whose bounds come from the wall
# clock, or that races a goroutine against a timer, fails here first; the suite must pass.
#
#   HOGS=<n>   busy loops to run beside the suite (default: one per CPU, nproc)
#   any argument is passed to make test (TEST_PKGS=..., TF_MATRIX=..., TF_TOOL_DIR=...);
#   `-- <command>` runs that command instead of make test (`-- .ci/run`: all of CI)
#
# The hogs are shell busy loops started here and killed by their process ids when the
# command ends, fails or is interrupted. Exit status: the command's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

HOGS="${HOGS:-$(nproc)}"
[[ "$HOGS" =~ ^[0-9]+$ ]] || { echo "test-under-load: HOGS must be a number, not '$HOGS'" >&2; exit 2; }

pids=()
stop_hogs() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	pids=()
}
trap stop_hogs EXIT
trap 'stop_hogs; exit 130' INT TERM

for _ in $(seq "$HOGS"); do
	bash -c 'while :; do :; done' &
	pids+=("$!")
done
cmd=(make test "$@")
if [[ "${1:-}" == "--" ]]; then
	shift
	cmd=("$@")
fi
echo "test-under-load: $HOGS CPU hog(s) running beside ${cmd[*]} (pids ${pids[*]}); load: $(cut -d' ' -f1-3 /proc/loadavg)"

start=$SECONDS
rc=0
"${cmd[@]}" || rc=$?
echo "test-under-load: ${cmd[*]} exited $rc after $(((SECONDS - start) / 60))m$(((SECONDS - start) % 60))s beside $HOGS hog(s); load: $(cut -d' ' -f1-3 /proc/loadavg)"
exit "$rc"
