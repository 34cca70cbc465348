#!/usr/bin/env bash
# Measures `bpconvert convert-parquet` against `cp` of the input table, both
# in the same run with a warm page cache, median of RUNS runs.
#
# Input: PARQUET_MB (default 2000) MB of 100 KiB JPEG-like payloads (a JPEG
# header, the row number, pseudo-random bytes) in one UNCOMPRESSED parquet
# table written by DuckDB (fixtures/parquet/bench.mjs), ROW_GROUP_ROWS rows
# per row group (default 2048, DuckDB's smallest: about 200 MiB of payload).
# The conversion extracts the payload column into packs and rewrites the
# table.
#
# Targets (issue 5): throughput >= 0.5 x cp of the input file; peak RSS <=
# 2 x the largest row group's payload bytes + 64 MiB. bpconvert fsyncs what
# it writes and cp does not, so cp is also timed followed by a sync of the
# copy; on a disk slower than the page cache that is the fair comparison.
#
# Row groups of about 100 MB: PARQUET_PAYLOAD=51200 (bytes a payload,
# default 102400) with the default 2048 rows a row group.
#
# Knobs: RUNS (3), PARQUET_MB (2000), PARQUET_PAYLOAD (102400), ROW_GROUP_ROWS (2048), BENCH_DIR (a
# fresh temp dir), BPCONVERT (bin/bpconvert, built by `make build`).
# Needs node with fixtures/parquet/node_modules (npm ci --prefix fixtures/parquet).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
runs=${RUNS:-3}
mb=${PARQUET_MB:-2000}
rgrows=${ROW_GROUP_ROWS:-2048}
payload=${PARQUET_PAYLOAD:-102400}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

for t in node bc python3; do
  command -v "$t" >/dev/null || { echo "bench/parquet.sh: $t is not on PATH" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "bench/parquet.sh: $bin is missing: run make build" >&2; exit 1; }
[ -d "$root/fixtures/parquet/node_modules" ] || { echo "bench/parquet.sh: run npm ci --prefix fixtures/parquet" >&2; exit 1; }

rows=$((mb * 1000000 / payload))
echo "# bench/parquet.sh: $(nproc) cores, runs=$runs, $rows rows x $payload B, $rgrows rows per row group, work dir on $(df --output=source "$work" | tail -1)"

mkdir -p "$work/src"
rgmax=$(node "$root/fixtures/parquet/bench.mjs" "$work/src/table.parquet" "$rows" "$payload" "$rgrows")
size=$(stat -c %s "$work/src/table.parquet")
warm "$work/src"

BENCH_CLEAN="set_aside '$work/cp.parquet' '$work/out'"
# One checked run first: time_runs does not stop on a failing command.
"$bin" convert-parquet --quiet --yes --column image "$work/src" "$work/out"
"$bin" verify "$work/out/media" >/dev/null
eval "$BENCH_CLEAN"
# cp alone leaves the copy in the page cache; bpconvert syncs every file it
# writes, so the copy is also timed with its own fsync (coreutils sync FILE).
cp_sync() { cp "$1" "$2" && sync "$2"; }
tcp=$(time_runs "$runs" cp "$work/src/table.parquet" "$work/cp.parquet")
tcps=$(time_runs "$runs" cp_sync "$work/src/table.parquet" "$work/cp.parquet")
tconv=$(time_runs "$runs" "$bin" convert-parquet --quiet --yes --column image "$work/src" "$work/out")
# The pack writer alone on the same bytes (the input file as one member):
# what writing, CRC-32, SHA-256 and fsync cost without any parquet work.
BENCH_CLEAN="set_aside '$work/pack-out'"
tpack=$(time_runs "$runs" "$bin" pack --quiet "$work/src" "$work/pack-out")
BENCH_CLEAN="set_aside '$work/cp.parquet' '$work/out'"
eval "$BENCH_CLEAN"; rm -rf "$work/pack-out"

# Peak RSS of one more conversion, from the kernel's accounting.
rss=$(peak_rss_mib "$bin" convert-parquet --quiet --yes --column image "$work/src" "$work/out")
eval "$BENCH_CLEAN"

limit=$(echo "scale=1; (2 * $rgmax + 64 * 1048576) / 1048576" | bc -l)
echo "input: $(echo "scale=3; $size/1000000000" | bc -l) GB, largest row group payload $(echo "scale=1; $rgmax/1048576" | bc -l) MiB"
echo "  cp:                        $tcp s  ($(echo "scale=0; $size/$tcp/1000000" | bc -l) MB/s)"
echo "  cp + sync of the copy:     $tcps s  ($(echo "scale=0; $size/$tcps/1000000" | bc -l) MB/s)"
echo "  bpconvert convert-parquet: $tconv s  ($(echo "scale=0; $size/$tconv/1000000" | bc -l) MB/s), peak RSS $rss MiB (target <= $limit MiB)"
echo "  bpconvert pack of the file: $tpack s  ($(echo "scale=0; $size/$tpack/1000000" | bc -l) MB/s)"
echo "  throughput ratio convert/cp: $(ratio "$tcp" "$tconv")x (target >= 0.5); convert/(cp + sync): $(ratio "$tcps" "$tconv")x; convert/pack: $(ratio "$tpack" "$tconv")x"
