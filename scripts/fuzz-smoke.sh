#!/usr/bin/env bash
# Runs every fuzz target of the repository for a short time (FUZZTIME, 5s by
# default), so a parser change that crashes on its own seed corpus or on the
# first mutations fails CI. Longer runs are for developers:
#   go test -run - -fuzz '^FuzzShard$' -fuzztime 10m ./convert/wds
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
  pkg="./$(dirname "${f#./}")"
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | while read -r target; do
    echo "fuzz $pkg $target ($fuzztime)"
    go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" "$pkg" >/tmp/fuzz.$$ 2>&1 || { cat /tmp/fuzz.$$; rm -f /tmp/fuzz.$$; exit 1; }
  done
done
rm -f /tmp/fuzz.$$
