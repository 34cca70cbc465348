#!/usr/bin/env bash
# Measures the pure-Go Lance reader against Lance's own scan through
# lancedb, on the same binary column of the same datasets, in the same run
# with a warm page cache, median of RUNS runs.
#
# Input: LANCE_ROWS (default 10000) rows of LANCE_SIZE (default 102400)
# pseudo-random bytes in a binary column "data" (about 1 GB), written by
# fixtures/lance/bench.mjs at each storage version of LANCE_VERSIONS
# (default: "default 2.0"; "default" is Lance's own choice, 2.1 for Lance
# core 8.0.0). Both sides read every value of the column into Arrow
# buffers and add up the value lengths:
#   Go:    lancefmt/internal/lancebench (lancefmt.Dataset.Scan of the column)
#   Lance: fixtures/lance/scan.mjs   (table.query().select([column]), streamed)
# Wall time covers the whole process (Node's start-up and module load are
# about 0.1 s); "in-process" covers opening the dataset and the scan only.
#
# Target (issue 7): Go throughput >= 1.0 x Lance's.
#
# Knobs: RUNS (3), LANCE_ROWS, LANCE_SIZE, LANCE_VERSIONS, BENCH_DIR (a
# fresh temp dir, removed at the end).
# Needs go, node with fixtures/lance/node_modules (npm ci --prefix fixtures/lance), bc, python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
runs=${RUNS:-3}
rows=${LANCE_ROWS:-10000}
size=${LANCE_SIZE:-102400}
versions=${LANCE_VERSIONS:-default 2.0}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

for t in go node bc python3; do
  command -v "$t" >/dev/null || { echo "bench/lance.sh: $t is not on PATH" >&2; exit 1; }
done
[ -d "$root/fixtures/lance/node_modules/@lancedb/lancedb" ] || { echo "bench/lance.sh: run npm ci --prefix fixtures/lance" >&2; exit 1; }

(cd "$root" && go build -o "$work/lancebench" ./lancefmt/internal/lancebench)
echo "# bench/lance.sh: $(nproc) cores, runs=$runs, $rows rows x $size B, versions: $versions, work dir on $(df --output=source "$work" | tail -1)"

# shellcheck disable=SC2086
node "$root/fixtures/lance/bench.mjs" "$work/db" "$rows" "$size" $versions >/dev/null

# field JSON KEY prints a number field of a one-line JSON object; sfield a
# string field.
field() { sed -E 's/.*"'"$2"'":([0-9.e+-]+).*/\1/' <<<"$1"; }
sfield() { sed -E 's/.*"'"$2"'":"([^"]*)".*/\1/' <<<"$1"; }

# inproc_median N CMD...: the median of the "seconds" CMD reports.
inproc_median() {
  local n=$1; shift
  for _ in $(seq "$n"); do field "$("$@")" seconds; done | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'
}

rows_md=()
for v in $versions; do
  ds="$work/db/bench_${v/./_}.lance"
  warm "$ds"
  # One checked run of each side first: both must see every row and byte.
  g=$("$work/lancebench" "$ds" data)
  l=$(node "$root/fixtures/lance/scan.mjs" "$ds" data)
  gb=$(field "$g" bytes); lb=$(field "$l" bytes)
  if [ "$(field "$g" rows)" != "$rows" ] || [ "$gb" != "$lb" ] || [ "$gb" != "$((rows * size))" ]; then
    echo "bench/lance.sh: storage version $v: go read $g, lance read $l" >&2
    exit 1
  fi
  tg=$(time_runs "$runs" "$work/lancebench" "$ds" data)
  tl=$(time_runs "$runs" node "$root/fixtures/lance/scan.mjs" "$ds" data)
  ig=$(inproc_median "$runs" "$work/lancebench" "$ds" data)
  il=$(inproc_median "$runs" node "$root/fixtures/lance/scan.mjs" "$ds" data)
  rss=$(peak_rss_mib "$work/lancebench" "$ds" data)
  mbs() { echo "scale=0; $gb / $1 / 1000000" | bc -l; }
  echo "storage version $v (data storage version $(sfield "$g" storage), pages $(sfield "$g" encoding)): $(echo "scale=3; $gb/1000000000" | bc -l) GB in column data, $(du -sh "$ds" | cut -f1) on disk"
  echo "  go reader:   wall $tg s ($(mbs "$tg") MB/s), in-process $ig s ($(mbs "$ig") MB/s), peak RSS $rss MiB"
  echo "  lance scan:  wall $tl s ($(mbs "$tl") MB/s), in-process $il s ($(mbs "$il") MB/s)"
  echo "  throughput ratio go/lance: wall $(ratio "$tl" "$tg")x, in-process $(ratio "$il" "$ig")x (target >= 1.0)"
  rows_md+=("| $v (data storage version $(sfield "$g" storage)), pages $(sfield "$g" encoding) | $(secs "$tl") s; in-process $(secs "$il") s | $(secs "$tg") s; in-process $(secs "$ig") s | $(ratio "$tl" "$tg")x; $(ratio "$il" "$ig")x (target >= 1.0) | $rss MiB |")
done

{
  echo "Measured by $(bench_head bench/lance.sh "$work"); medians of $runs runs, warm page cache. A scan of the binary column \`data\` of $rows rows of $size bytes, written by @lancedb/lancedb (fixtures/lance/bench.mjs): bpconvert's reader (lancefmt) against Lance's own scan through lancedb (fixtures/lance/scan.mjs), whole processes and timed inside each. Ratio = lancedb time / bpconvert time."
  echo
  echo "| file version | lancedb | bpconvert | ratio: wall; in-process | peak RSS |"
  echo "|---|---|---|---|---|"
  printf '%s\n' "${rows_md[@]}"
} | perf_doc bench/lance.sh
