#!/usr/bin/env bash
# Measures `bpconvert convert-lance` against what this machine needs to make
# a durable, hashed copy of the same bytes, all in the same run with a warm
# page cache, in turns (one run of each command per round, medians):
#
#   limit = max(cp -r SRC X && sync -f X, openssl dgst -sha256 of SRC's data files)
#
# (a copy made durable, and the SHA-256 of the bytes at the fastest
# implementation here; both can run at once on two cores; the data files
# are the .lance files and the blob files beside them or under _blobs.)
# For each case it prints the ratio limit / convert-lance (target >= 0.7),
# the cost of the manifest as default / --no-manifest (target <= 1.15; beside it the least cost this machine allows the run, manifest_floor in lib.sh),
# seconds per GB and peak RSS (target <= 128 MiB), each with the one-minute
# load averages at the start of its runs (the machine may be shared: a
# figure measured under load is noisy; say so). Peak RSS is the largest
# resident set of the command and what it waits for (ru_maxrss), over its
# runs. In the same rounds it times blobpack 0.2.0's convert-lance (pinned
# in the test virtual environment; the script says so where it is not
# installed, or where it fails on a case) and, where there is one, the
# route a user would take with Lance's own library (below).
#
# Cases: LANCE_ROWS (default 10000) rows of LANCE_SIZE (default 102400)
# pseudo-random bytes, about 1 GB, written by the real Lance libraries:
#   binary    an int64 "id" and a binary "data" column at storage version
#             2.1, in appends of 64 MiB (a fragment and a page each;
#             fixtures/lance/bench.mjs, lancedb 0.31.0); --column data.
#             Official route: fixtures/lance/official.mjs (lancedb's scan,
#             the payloads into STORED zip shards, a new table with a utf8
#             reference column; no fsync)
#   one       the same rows in one create call (one fragment of pages of
#             about 32 MiB; bench.mjs with ONE_FRAGMENT=1); --column data
#   blob2     a blob v2 column "blob" at 2.2 in appends of 64 MiB (Lance
#             puts the values in sidecar blob files;
#             fixtures/lance/bench_blob2.mjs); --yes alone. lancedb 0.31.0's
#             scan returns blob v2 descriptors, not bytes: no official route
#   managed   a blob v2 column with lance.blob.managed=true written by
#             pylance 14.0.3 (the values in _blobs/<uuid>.blob objects;
#             fixtures/lance14/bench.py); --yes alone. Official route:
#             fixtures/lance14/official.py (pylance's scan with
#             blob_handling="all_binary", zipfile, a new table; no fsync)
#   onepage   a large_binary "data" column written by pylance 14.0.3 at 2.2
#             in one write_dataset call: one full-zip page of about 1 GB
#             (bench.py onepage); --column data
#   batches64 the same from record batches of 64 rows: a full-zip page per
#             batch (bench.py batches64); --column data
# Each dataset is written just before its case and removed after it.
#
# The figures also replace the bench/lance_convert.sh section of
# docs/performance.md (BENCH_DOC=path writes another file, BENCH_DOC=none
# none).
#
# BPCONVERT_BASE=path times another build of bpconvert in the same rounds
# (before / after a change); its figures are printed, not written to the doc.
#
# Knobs: RUNS (rounds, default 3), LANCE_ROWS, LANCE_SIZE, LANCE_CASES
# (default "binary one blob2 managed onepage batches64"), BENCH_DIR (default
# a new directory under ${TMPDIR:-/var/tmp}, removed at the end; it needs
# about 6 x RUNS + 2 GB), BPCONVERT (default bin/bpconvert, built by `make
# build`), BPCONVERT_PYTHON (default the interpreter of the environment
# scripts/pyenv.sh makes from scripts/requirements/test.txt: pylance 14.0.3,
# blobpack 0.2.0). Needs python3, bc, openssl, and node with
# fixtures/lance/node_modules (npm ci --prefix fixtures/lance) for the
# binary, one and blob2 cases.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
base=${BPCONVERT_BASE:-}
runs=${RUNS:-3}
rows=${LANCE_ROWS:-10000}
size=${LANCE_SIZE:-102400}
read -r -a cases <<<"${LANCE_CASES:-binary one blob2 managed onepage batches64}"
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

for t in bc openssl python3; do
  command -v "$t" >/dev/null || { echo "bench/lance_convert.sh: $t is not on PATH" >&2; exit 1; }
done
if ! "$bin" convert-lance --help >/dev/null 2>&1; then
  echo "bench/lance_convert.sh: $bin has no convert-lance command (build it: make build)" >&2
  exit 2
fi
for c in "${cases[@]}"; do
  case $c in
    binary|one|blob2)
      command -v node >/dev/null || { echo "bench/lance_convert.sh: case $c needs node on PATH" >&2; exit 1; }
      [ -d "$root/fixtures/lance/node_modules/@lancedb/lancedb" ] || { echo "bench/lance_convert.sh: case $c needs npm ci --prefix fixtures/lance" >&2; exit 1; };;
    managed|onepage|batches64) ;;
    *) echo "bench/lance_convert.sh: unknown case $c (binary one blob2 managed onepage batches64)" >&2; exit 2;;
  esac
done
py=${BPCONVERT_PYTHON:-$(bash "$root/scripts/pyenv.sh" "$root/scripts/requirements/test.txt")/bin/python}
find_blobpack "$py" convert-lance bench/lance_convert.sh
head=$(bench_head bench/lance_convert.sh "$work")
echo "# $head"
echo "# load before: $(uptime)"

# make_case CASE: writes the case's dataset under $work/src and sets ds
# (its directory), col (the payload column), sel (convert-lance's column
# flags), official (the official route's command, or "") and label.
make_case() {
  local c=$1 src="$work/src"
  rm -rf "$src"
  mkdir -p "$src"
  official="" sel="--column data" col=data
  case $c in
    binary)
      node "$root/fixtures/lance/bench.mjs" "$src" "$rows" "$size" 2.1 >/dev/null
      ds="$src/bench_2_1.lance" label="binary at 2.1, appends of 64 MiB (lancedb)"
      official="node '$root/fixtures/lance/official.mjs' '$ds' data '$work/off-out' >/dev/null";;
    one)
      ONE_FRAGMENT=1 node "$root/fixtures/lance/bench.mjs" "$src" "$rows" "$size" 2.1 >/dev/null
      ds="$src/bench_2_1.lance" label="binary at 2.1, one fragment (lancedb)";;
    blob2)
      node "$root/fixtures/lance/bench_blob2.mjs" "$src" "$rows" "$size"
      ds="$src/bench_blob2.lance" label="blob v2 at 2.2, appends of 64 MiB (lancedb)" sel="" col=blob;;
    managed)
      ds="$src/managed.lance" label="managed blob v2 at 2.2 (pylance 14.0.3)" sel="" col=blob
      "$py" "$root/fixtures/lance14/bench.py" "$ds" "$rows" "$size" managed 2>/dev/null
      official="'$py' '$root/fixtures/lance14/official.py' '$ds' blob '$work/off-out' >/dev/null 2>&1";;
    onepage)
      ds="$src/onepage.lance" label="large_binary at 2.2, one write_dataset: one full-zip page (pylance 14.0.3)"
      "$py" "$root/fixtures/lance14/bench.py" "$ds" "$rows" "$size" onepage 2>/dev/null;;
    batches64)
      ds="$src/batches64.lance" label="large_binary at 2.2, one write_dataset of 64-row batches (pylance 14.0.3)"
      "$py" "$root/fixtures/lance14/bench.py" "$ds" "$rows" "$size" batches64 2>/dev/null;;
  esac
}

# column_pages DATASET COLUMN prints the pages of COLUMN and their mean size
# in MiB (a blob column's pages hold descriptors; its payloads live in blob
# files).
column_pages() {
  "$bin" lance-inspect --json "$1" | python3 -c '
import json, sys
d = json.load(sys.stdin)
c = [c for c in d["columns"] if c["path"] == sys.argv[1]][0]
print(c["pages"], "%.2f" % (c["bytes"] / max(c["pages"], 1) / 1048576))' "$2"
}

rows_out=()

# case_run CASE: one dataset, the commands in turns.
case_run() {
  make_case "$1"
  warm "$ds"
  local bytes members pages mib
  bytes=$(du -sb "$ds" | cut -f1)
  read -r pages mib <<<"$(column_pages "$ds" "$col")"
  # One checked run of each converter first (measure_turns stops on a
  # failing command, but says less).
  # shellcheck disable=SC2086 # sel is empty or two words
  "$bin" convert-lance --quiet --yes $sel "$ds" "$work/out"
  "$bin" verify "$work/out/media" >/dev/null
  local shard
  shard=$(largest_zip "$work/out")
  members=$("$bin" ls --json "$work/out/media" | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["members"]))')
  rm -rf "$work/out"
  local bpsel="--column $col" bpok=""
  if [ -n "$blobpack" ]; then
    if "$blobpack" convert-lance --yes $bpsel "$ds" "$work/bp-out" >/dev/null 2>"$work/bp-err"; then
      bpok=1
    else
      echo "  blobpack convert-lance fails on this case (left out): $(tail -1 "$work/bp-err")"
    fi
    rm -rf "$work/bp-out"
  fi
  if [ -n "$official" ]; then
    eval "$official"
    "$bin" verify "$work/off-out/media" >/dev/null
    rm -rf "$work/off-out"
  fi
  BENCH_CLEAN="set_aside '$work/cp-out' '$work/out' '$work/nm-out' '$work/bp-out' '$work/off-out' '$work/base-out'"
  local files="find '$ds' -type f \\( -name '*.lance' -o -name '*.blob' \\) -exec openssl dgst -sha256 {} +"
  local -a cmds=(
    "cp -r '$ds' '$work/cp-out' && sync -f '$work/cp-out'"
    "$files"
    "'$bin' convert-lance --quiet --yes $sel '$ds' '$work/out'"
    "'$bin' convert-lance --quiet --yes --no-manifest $sel '$ds' '$work/nm-out'")
  local bpi="" offi="" basei=""
  if [ -n "$bpok" ]; then
    bpi=${#cmds[@]}
    cmds+=("'$blobpack' convert-lance --yes $bpsel '$ds' '$work/bp-out' >/dev/null")
  fi
  if [ -n "$official" ]; then
    offi=${#cmds[@]}
    cmds+=("$official")
  fi
  if [ -n "$base" ]; then
    basei=${#cmds[@]}
    cmds+=("'$base' convert-lance --quiet --yes $sel '$ds' '$work/base-out'")
  fi
  local -a m
  mapfile -t m < <(BENCH_CLEAN=$BENCH_CLEAN measure_turns "$runs" "${cmds[@]}")
  rm -rf "$work/cp-out" "$work/out" "$work/nm-out" "$work/bp-out" "$work/off-out" "$work/base-out" "$work/.trash" "$work/src"
  local tsync tsha tconv rss tnm rssnm l1 l2 lsync lsha lconv lnm cconv floor
  read -r tsync _ l1 l2 _ <<<"${m[0]}"; lsync="$l1-$l2"
  read -r tsha _ l1 l2 _ <<<"${m[1]}"; lsha="$l1-$l2"
  read -r tconv rss l1 l2 cconv <<<"${m[2]}"; lconv="$l1-$l2"
  read -r tnm rssnm l1 l2 _ <<<"${m[3]}"; lnm="$l1-$l2"
  floor=$(manifest_floor "$cconv" "$tsha" "$bytes" "$shard" "$tnm")
  local limit gb ok
  limit=$(printf '%s\n%s\n' "$tsync" "$tsha" | sort -g | tail -1)
  gb=$(printf '%.3f' "$(echo "scale=4; $bytes/1000000000" | bc -l)")
  ok=met; [ "$(echo "$rss > 128" | bc -l)" = 1 ] && ok="NOT met"
  echo "$1: $label: $rows x $size B, column $col in $pages page(s) of $mib MiB on average, $gb GB on disk, $members members packed, $runs round(s)"
  echo "  cp -r, then sync -f:      $tsync s  (load $lsync)"
  echo "  openssl dgst -sha256:     $tsha s  (load $lsha)"
  echo "  convert-lance:            $tconv s  ($(per_gb "$tconv" "$bytes") s/GB), peak RSS $rss MiB (target <= 128 MiB: $ok), machine CPU $cconv s, largest shard $shard B  (load $lconv)"
  echo "  convert-lance --no-manifest: $tnm s  ($(per_gb "$tnm" "$bytes") s/GB), peak RSS $rssnm MiB  (load $lnm)"
  local offcell="" bpcell=""
  if [ -n "$offi" ]; then
    local toff rssoff
    read -r toff rssoff l1 l2 _ <<<"${m[$offi]}"
    echo "  official route:           $toff s  ($(per_gb "$toff" "$bytes") s/GB), peak RSS $rssoff MiB  (load $l1-$l2); bpconvert is $(ratio "$toff" "$tconv")x it"
    offcell="$toff s, $rssoff MiB ($l1-$l2); $(ratio "$toff" "$tconv")x"
  fi
  if [ -n "$bpi" ]; then
    local tbp rssbp
    read -r tbp rssbp l1 l2 _ <<<"${m[$bpi]}"
    echo "  blobpack convert-lance:   $tbp s  ($(per_gb "$tbp" "$bytes") s/GB), peak RSS $rssbp MiB  (load $l1-$l2); bpconvert is $(ratio "$tbp" "$tconv")x blobpack"
    bpcell="$tbp s, $rssbp MiB ($l1-$l2); $(ratio "$tbp" "$tconv")x"
  fi
  if [ -n "$basei" ]; then
    local tbase rssbase
    read -r tbase rssbase l1 l2 _ <<<"${m[$basei]}"
    echo "  $base: $tbase s  ($(per_gb "$tbase" "$bytes") s/GB), peak RSS $rssbase MiB  (load $l1-$l2); limit/it: $(ratio "$limit" "$tbase")x; it/convert-lance: $(ratio "$tbase" "$tconv")x"
  fi
  echo "  limit/convert-lance: $(ratio "$limit" "$tconv")x (target >= 0.7); default/--no-manifest: $(ratio "$tconv" "$tnm")x (target <= 1.15; this machine allows ${floor}x)"
  rows_out+=("| $1: $label; $pages page(s) of $mib MiB ($gb GB), $runs round(s) | $tsync s ($lsync) | $tsha s ($lsha) | $tconv s, $(per_gb "$tconv" "$bytes") s/GB ($lconv) | $tnm s ($lnm) | $(ratio "$limit" "$tconv")x | $(ratio "$tconv" "$tnm")x (${floor}x) | $rss MiB ($ok) | $offcell | $bpcell |")
}

for c in "${cases[@]}"; do
  case_run "$c"
done
echo "# load after: $(uptime)"

{
  echo "Measured by $head; $turns_method; $manifest_note. $rows values of $size pseudo-random bytes a dataset, written by lancedb 0.31.0 (npm) or pylance $("$py" -c 'import lance; print(lance.__version__)' 2>/dev/null || echo '?'); blobpack ${bpver:-not installed}."
  echo
  echo "| case | \`cp -r\` + \`sync -f\` | \`openssl dgst -sha256\` | \`convert-lance\` | \`--no-manifest\` | limit / convert (target >= 0.7) | default / \`--no-manifest\` (target <= 1.15) | peak RSS (target <= 128 MiB) | official route; bpconvert / it | blobpack 0.2.0 \`convert-lance\`; bpconvert / blobpack |"
  echo "|---|---|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows_out[@]}"
} | perf_doc bench/lance_convert.sh
