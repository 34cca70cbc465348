#!/usr/bin/env bash
# Measures `bpconvert convert-lance` against `cp -r` of the source dataset,
# both in the same run with a warm page cache, median of RUNS runs (the
# commands take turns: one run of each per round).
#
# Input: LANCE_ROWS (default 10000) rows of LANCE_SIZE (default 102400)
# pseudo-random bytes (about 1 GB), written by the real Lance library in two
# datasets:
#   binary 2.1: an int64 "id" and a binary "data" column, storage version 2.1
#               (fixtures/lance/bench.mjs); converted with --column data;
#               written twice: in appends of 64 MiB (a fragment and a page
#               each) and in one go (ONE_FRAGMENT=1: one fragment of pages
#               of about 32 MiB);
#   blob v2:    an int64 "id" and a blob v2 column "blob" (extension
#               lance.blob.v2), storage version 2.2 (written by the Node
#               snippet below, in appends of at most 64 MiB); converted with
#               --yes alone (blob columns are payloads);
#   managed:    the same shape written by pylance 14.0.2 with
#               lance.blob.managed=true (the values in _blobs/<uuid>.blob
#               objects; fixtures/lance14/bench.py), converted with --yes;
#               its official route is fixtures/lance14/official.py
#               (pylance's scan with blob_handling="all_binary", zipfile,
#               a new table).
# The conversion packs every payload (CRC-32, SHA-256 for the manifest,
# fsync) and writes the table back as Lance with the other pages copied.
# bpconvert fsyncs what it writes and cp does not, so cp -r is also timed
# followed by a sync of the copy.
# The route a user would take without bpconvert is timed too, for the binary
# column: fixtures/lance/official.mjs scans the table with lancedb (npm
# @lancedb/lancedb 0.31.0), writes each payload into STORED zip shards and
# writes a new table with a utf8 reference column in its place (no fsync).
# Blob v2 columns have no such route: lancedb 0.31.0's scan returns their
# descriptors, not their bytes.
#
# Targets (issue 11): throughput >= 0.5 x cp -r of the dataset; peak RSS <=
# 2 x largest page + 64 MiB.
#
# Knobs: RUNS (3), LANCE_ROWS, LANCE_SIZE, BENCH_DIR (a fresh temp dir,
# removed at the end), BPCONVERT (bin/bpconvert, built by `make build`),
# LANCE_CASES (default "binary one blob2 managed": which datasets to
# measure), BPCONVERT_PYTHON (the interpreter with pylance; default: the
# environment scripts/pyenv.sh makes from scripts/requirements/test.txt).
# Needs node with fixtures/lance/node_modules (npm ci --prefix fixtures/lance),
# bc, python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
runs=${RUNS:-3}
rows=${LANCE_ROWS:-10000}
size=${LANCE_SIZE:-102400}
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

for t in node bc python3; do
  command -v "$t" >/dev/null || { echo "bench/lance_convert.sh: $t is not on PATH" >&2; exit 1; }
done
[ -x "$bin" ] || { echo "bench/lance_convert.sh: $bin is missing: run make build" >&2; exit 1; }
[ -d "$root/fixtures/lance/node_modules/@lancedb/lancedb" ] || { echo "bench/lance_convert.sh: run npm ci --prefix fixtures/lance" >&2; exit 1; }

cases=" ${LANCE_CASES:-binary one blob2 managed} "
has() { case "$cases" in *" $1 "*) return 0;; esac; return 1; }
py=${BPCONVERT_PYTHON:-}
if has managed && [ -z "$py" ]; then
  py=$(bash "$root/scripts/pyenv.sh" "$root/scripts/requirements/test.txt")/bin/python
fi

echo "# bench/lance_convert.sh: $(nproc) cores, runs=$runs, $rows rows x $size B, work dir on $(df --output=source "$work" | tail -1)"

# The binary dataset, storage version 2.1: one fragment per append of 64
# MiB (one page each), and the same rows written in one go (one fragment of
# pages of about 32 MiB, as a dataset written at once is).
if has binary; then node "$root/fixtures/lance/bench.mjs" "$work/db" "$rows" "$size" 2.1 >/dev/null; fi
if has one; then ONE_FRAGMENT=1 node "$root/fixtures/lance/bench.mjs" "$work/db1" "$rows" "$size" 2.1 >/dev/null; fi
if has managed; then "$py" "$root/fixtures/lance14/bench.py" "$work/db/bench_managed.lance" "$rows" "$size" 2>/dev/null; fi

# The blob v2 dataset (storage version 2.2, the first that has blob v2),
# written with the same library; run from fixtures/lance so that its
# node_modules resolve.
blob2_js='
import * as lancedb from "@lancedb/lancedb";
import * as arrow from "apache-arrow";
import { randomFillSync } from "node:crypto";
const [out, rowsArg, sizeArg] = process.argv.slice(1);
const rows = Number(rowsArg), size = Number(sizeArg);
const db = await lancedb.connect(out);
const blobType = new arrow.Struct([new arrow.Field("data", new arrow.LargeBinary(), true), new arrow.Field("uri", new arrow.Utf8(), true)]);
const schema = new arrow.Schema([
  new arrow.Field("id", new arrow.Int64(), false),
  new arrow.Field("blob", blobType, true, new Map([["ARROW:extension:name", "lance.blob.v2"], ["ARROW:extension:metadata", ""]])),
]);
const perBatch = Math.max(1, Math.min(rows, Math.floor((64 << 20) / Math.max(size, 1))));
let t = null;
for (let start = 0; start < rows; start += perBatch) {
  const n = Math.min(perBatch, rows - start);
  const ids = new BigInt64Array(n);
  const offsets = new BigInt64Array(n + 1);
  const values = new Uint8Array(n * size);
  randomFillSync(values);
  for (let k = 0; k < n; k++) {
    ids[k] = BigInt(start + k);
    offsets[k + 1] = BigInt((k + 1) * size);
  }
  const id = arrow.makeData({ type: new arrow.Int64(), length: n, nullCount: 0, data: ids });
  const data = arrow.makeData({ type: new arrow.LargeBinary(), length: n, nullCount: 0, valueOffsets: offsets, data: values });
  const uri = arrow.makeData({ type: new arrow.Utf8(), length: n, nullCount: n, nullBitmap: new Uint8Array(Math.ceil(n / 8)), valueOffsets: new Int32Array(n + 1), data: new Uint8Array(0) });
  const blob = arrow.makeData({ type: blobType, length: n, nullCount: 0, children: [data, uri] });
  const st = arrow.makeData({ type: new arrow.Struct(schema.fields), length: n, nullCount: 0, children: [id, blob] });
  const ipc = Buffer.from(arrow.tableToIPC(new arrow.Table([new arrow.RecordBatch(schema, st)]), "file"));
  if (t === null) {
    await db.inner.createTable("bench_blob2", ipc, "create", [], { new_table_data_storage_version: "2.2" });
    t = await db.openTable("bench_blob2");
  } else {
    await t.inner.add(ipc, "append", undefined);
  }
}
'
if has blob2; then (cd "$root/fixtures/lance" && node --input-type=module -e "$blob2_js" "$work/db" "$rows" "$size"); fi

# mean_page DATASET COLUMN prints the mean page size of COLUMN in bytes
# (lance-inspect reports pages and bytes per column, not each page); a blob
# column's pages hold descriptors, its payloads live in sidecar files.
mean_page() {
  "$bin" lance-inspect --json "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = [c for c in d["columns"] if c["path"] == sys.argv[1]][0]
print(c["bytes"] // max(c["pages"], 1))' "$2"
}

cp_sync() { cp -r "$1" "$2" && sync "$2"; }

# official DATASET COLUMN OUTDIR runs the official route of DATASET: the
# pylance script for the managed dataset, the lancedb one otherwise.
official() {
  case "$1" in
    *bench_managed.lance) "$py" "$root/fixtures/lance14/official.py" "$1" "$2" "$3" 2>/dev/null;;
    *) node "$root/fixtures/lance/official.mjs" "$1" "$2" "$3";;
  esac
}

bench_one() { # LABEL DATASET COLUMN OFFICIAL(yes|no) CONVERT-FLAGS...
  local label=$1 ds=$2 col=$3 official=$4; shift 4
  local bytes; bytes=$(du -sb "$ds" | cut -f1)
  warm "$ds"
  BENCH_CLEAN="set_aside '$work/cp' '$work/out' '$work/official'"
  # One checked run first: time_runs does not stop on a failing command.
  "$bin" convert-lance --quiet "$@" "$ds" "$work/out" >/dev/null
  "$bin" verify "$work/out/media" >/dev/null
  local members; members=$("$bin" ls --json "$work/out/media" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["members"]))')
  eval "$BENCH_CLEAN"
  if [ "$official" = yes ]; then
    official "$ds" "$col" "$work/official" >/dev/null
    "$bin" verify "$work/official/media" >/dev/null
    eval "$BENCH_CLEAN"
  fi
  # The commands take turns, one run each per round, so that all of them
  # meet the same state of the page cache (the set-aside outputs of earlier
  # runs fill it, and the kernel reclaims pages while the next run writes).
  local tcp=() tcps=() tconv=() toff=() rss page rssoff=""
  for _ in $(seq "$runs"); do
    tcp+=("$(time_runs 1 cp -r "$ds" "$work/cp")")
    tcps+=("$(time_runs 1 cp_sync "$ds" "$work/cp")")
    tconv+=("$(time_runs 1 "$bin" convert-lance --quiet "$@" "$ds" "$work/out")")
    if [ "$official" = yes ]; then
      toff+=("$(time_runs 1 official "$ds" "$col" "$work/official")")
    fi
  done
  tcp=$(median "${tcp[@]}"); tcps=$(median "${tcps[@]}"); tconv=$(median "${tconv[@]}")
  if [ "$official" = yes ]; then toff=$(median "${toff[@]}"); else toff=""; fi
  eval "$BENCH_CLEAN"
  rss=$(peak_rss_mib "$bin" convert-lance --quiet "$@" "$ds" "$work/out")
  eval "$BENCH_CLEAN"
  if [ "$official" = yes ]; then
    case "$ds" in
      *bench_managed.lance) rssoff=$(peak_rss_mib "$py" "$root/fixtures/lance14/official.py" "$ds" "$col" "$work/official");;
      *) rssoff=$(peak_rss_mib node "$root/fixtures/lance/official.mjs" "$ds" "$col" "$work/official");;
    esac
    eval "$BENCH_CLEAN"
  fi
  page=$(mean_page "$ds" "$col")
  mbs() { echo "scale=0; $bytes / $1 / 1000000" | bc -l; }
  echo "$label: $(echo "scale=3; $bytes/1000000000" | bc -l) GB on disk, $members members packed, mean page of column $col $(echo "scale=2; $page/1048576" | bc -l) MiB"
  echo "  cp -r:                   $tcp s  ($(mbs "$tcp") MB/s)"
  echo "  cp -r + sync of the copy: $tcps s  ($(mbs "$tcps") MB/s)"
  echo "  bpconvert convert-lance: $tconv s  ($(mbs "$tconv") MB/s), peak RSS $rss MiB"
  if [ -n "$toff" ]; then
    echo "  official route (Lance's own scan, zip, new table): $toff s  ($(mbs "$toff") MB/s), peak RSS $rssoff MiB"
  fi
  echo "  throughput ratio convert/cp: $(ratio "$tcp" "$tconv")x (target >= 0.5); convert/(cp + sync): $(ratio "$tcps" "$tconv")x"
  if [ -n "$toff" ]; then
    echo "  throughput ratio convert/official route: $(ratio "$toff" "$tconv")x"
  fi
}

if has binary; then bench_one "binary, storage 2.1" "$work/db/bench_2_1.lance" data yes --yes --column data; fi
if has one; then bench_one "binary, storage 2.1, one fragment" "$work/db1/bench_2_1.lance" data no --yes --column data; fi
if has blob2; then bench_one "blob v2, storage 2.2" "$work/db/bench_blob2.lance" blob no --yes; fi
if has managed; then bench_one "managed blob v2 (pylance 14.0.2), storage 2.2" "$work/db/bench_managed.lance" blob yes --yes; fi
