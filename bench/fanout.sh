#!/usr/bin/env bash
# Measures a split conversion against an undivided one, in the same run:
#   whole:  bpconvert convert-wds SHARDS out
#   split:  bpconvert convert-wds SHARDS out --part 1/2 & ... --part 2/2, concurrently
#   finalize: bpconvert finalize out (hard links, manifest merge, table join)
# on FANOUT_MB (default 2000) MB of FANOUT_SHARDS (20) tar shards with
# members of FANOUT_SIZE (102400) bytes, median of RUNS (3) runs each,
# with a warm page cache.
#
# Targets (batch issue): the two parts together take no more wall time
# than one run (ratio split/whole <= 1.0); finalize of a 2 GB,
# 20,000-member output takes under 1 s.
#
# Needs bin/bpconvert (make build), python3, bc.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
runs=${RUNS:-3}
mb=${FANOUT_MB:-2000}
nshards=${FANOUT_SHARDS:-20}
size=${FANOUT_SIZE:-102400}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
trap 'rm -rf "$work"' EXIT
echo "# bench/fanout.sh: $(nproc) cores, runs=$runs, work dir on $(df --output=source "$work" | tail -1)"

gen_shards "$work/shards" "$nshards" "$((mb * 1000000 / size))" "$size"
warm "$work/shards"
bytes=$(du -sb "$work/shards" | cut -f1)
members=$(( mb * 1000000 / size ))

whole() { "$bin" convert-wds "$work"/shards/*.tar "$work/out" --yes --quiet; }
split() {
  "$bin" convert-wds "$work"/shards/*.tar "$work/out" --yes --quiet --part 1/2 &
  local a=$!
  "$bin" convert-wds "$work"/shards/*.tar "$work/out" --yes --quiet --part 2/2 &
  local b=$!
  wait "$a" && wait "$b"
}
# The two are timed in turns (whole first in odd rounds, split first in
# even ones): earlier outputs stay in the page cache (set aside, not
# deleted), and whichever runs later meets more memory to reclaim, which
# shows as system time. Timing all of one, then all of the other, measured
# that order, not the split.
BENCH_CLEAN="set_aside '$work/out' '$work/.out.bpconvert-parts'"
tw=()
ts=()
for i in $(seq "$runs"); do
  if [ $((i % 2)) -eq 1 ]; then
    tw+=("$(time_runs 1 whole)")
    ts+=("$(time_runs 1 split)")
  else
    ts+=("$(time_runs 1 split)")
    tw+=("$(time_runs 1 whole)")
  fi
done
twhole=$(median "${tw[@]}")
tsplit=$(median "${ts[@]}")

# finalize: each run joins a fresh split (the split is not timed).
tfin=()
for _ in $(seq "$runs"); do
  set_aside "$work/out" "$work/.out.bpconvert-parts"
  split
  sync
  t0=$(now)
  "$bin" finalize "$work/out" --quiet
  t1=$(now)
  tfin+=("$(echo "$t1 - $t0" | bc -l)")
done
tfinal=$(median "${tfin[@]}")

echo "input: $nshards shards, $members members of $size bytes, $bytes bytes"
echo "  whole run:              $twhole s"
echo "  --part 1/2 + 2/2 (concurrent): $tsplit s   ratio split/whole: $(ratio "$tsplit" "$twhole")x (target <= 1.00)"
echo "  finalize:               $tfinal s (target < 1 s)"
