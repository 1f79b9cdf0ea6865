#!/usr/bin/env bash
# Fails on dead code (decision: code-conventions): a function that nothing reaches, tests
# included (deadcode -test), or that production reaches only through tests (deadcode
# -test=false) unless scripts/deadcode-allow.txt lists it. `make lint` installs the pinned
# deadcode (DEADCODE_VERSION in GNUmakefile) and runs this. Takes a few minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
DEADCODE=${DEADCODE:-deadcode}
allow=scripts/deadcode-allow.txt

# "internal/x/y.go:12:6: unreachable func: Name" -> "internal/x/y.go Name"
strip() { sed -E 's/^([^:]+):[0-9]+:[0-9]+: unreachable func: (.*)$/\1 \2/'; }

allowed() {
	local file=$1 fn=$2 entry rest
	while read -r entry rest; do
		case "$entry" in '' | '#'*) continue ;; esac
		rest=${rest%%#*}
		rest=${rest%% *}
		if [[ $entry == */ ]]; then
			[[ $file == "$entry"* ]] && return 0
		elif [[ $entry == "$file" ]] && { [[ -z $rest ]] || [[ $rest == "$fn" ]]; }; then
			return 0
		fi
	done <"$allow"
	return 1
}

# The two analyses run side by side (each loads the whole program: about 2 min on 2 cores).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$DEADCODE" -test ./... >"$tmp/unused" &
p1=$!
"$DEADCODE" -test=false ./... >"$tmp/found" &
p2=$!
wait "$p1"
wait "$p2"
unused=$(strip <"$tmp/unused")
found=$(strip <"$tmp/found")
bad=""
while read -r file fn; do
	[ -z "$file" ] && continue
	allowed "$file" "$fn" || bad+="$file $fn (reached only from tests)"$'\n'
done <<<"$found"
while read -r file fn; do
	[ -z "$file" ] && continue
	bad+="$file $fn (reached from nowhere)"$'\n'
done <<<"$unused"
if [ -n "$bad" ]; then
	echo "deadcode: functions no production code reaches (move a test helper into a _test.go file, delete what"
	echo "nothing uses, or list a test-support hook in $allow with its reason):"
	printf '%s' "$bad"
	exit 1
fi
echo "deadcode: $(printf '%s\n' "$found" | grep -c . || true) findings, all in $allow; none unused"
