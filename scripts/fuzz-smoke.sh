#!/usr/bin/env bash
# Runs every fuzz target of the repository for a short time (FUZZTIME, 5s by
# default), so a parser change that crashes on its own seed corpus or on the
# first mutations fails CI. Longer runs are for developers:
#   go test -run - -fuzz '^FuzzShard$' -fuzztime 10m ./convert/wds
#
# Go's fuzzing engine sometimes reports "context deadline exceeded" when a
# short -fuzztime ends while a worker is still starting or stopping (on a
# busy machine); no input failed then, and no crasher is written. Such a run
# is tried once more; a run that writes a failing input always fails.
set -euo pipefail
cd "$(dirname "$0")/.."
fuzztime="${FUZZTIME:-5s}"
out=$(mktemp)
# Fixtures that seed the corpora (the Lance datasets gen.mjs writes) are
# written once for the script's run, not once per fuzzing process: each
# target runs a coordinator and a worker per core, and a worker is killed
# when the time is up.
cache=$(mktemp -d)
trap 'rm -f "$out"; rm -rf "$cache"' EXIT
export BPCONVERT_FIXTURE_CACHE="${BPCONVERT_FIXTURE_CACHE:-$cache}"
fuzz() { go test -run '^$' -fuzz "^$2\$" -fuzztime "$fuzztime" "$1" >"$out" 2>&1; }
grep -rl --include='*_test.go' '^func Fuzz' . | sort | while read -r f; do
  pkg="./$(dirname "${f#./}")"
  grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //' | while read -r target; do
    echo "fuzz $pkg $target ($fuzztime)"
    if fuzz "$pkg" "$target"; then continue; fi
    if ! grep -q 'Failing input written' "$out" && grep -q 'context deadline exceeded' "$out"; then
      echo "  the fuzzing engine timed out stopping, no input failed: once more"
      if fuzz "$pkg" "$target"; then continue; fi
    fi
    cat "$out"
    exit 1
  done
done
