#!/usr/bin/env bash
# Fails when a commit subject after the rule's start is longer than 72 characters
# (CONTRIBUTING.md, "Commit messages"): the subject says what changed in a line a person can
# scan; the detail goes in the body. Commits before RULE_FROM are history and are not judged.
# A clone without RULE_FROM (shallow) judges what it has.
set -euo pipefail
RULE_FROM=0c3caa3785d87f0218da4bac1271a4aac69d061a
MAX=72
if git cat-file -e "${RULE_FROM}^{commit}" 2>/dev/null; then
	range="${RULE_FROM}..HEAD"
else
	range=HEAD
fi
bad=$(git log --no-merges --format='%h %s' "$range" | awk -v max="$MAX" '{ s = substr($0, index($0, " ") + 1) } length(s) > max { print length(s) ": " $0 }')
if [ -n "$bad" ]; then
	echo "commit subjects over $MAX characters (keep the subject short, the detail in the body):"
	echo "$bad"
	exit 1
fi
echo "commit subjects: $(git log --no-merges --format=%h "$range" | wc -l) checked, none over $MAX characters"
