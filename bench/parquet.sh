#!/usr/bin/env bash
# Measures `bpconvert convert-parquet` against what this machine needs to
# make a durable, hashed copy of the same bytes, all in the same run with a
# warm page cache, in turns (one run of each command per round, medians):
#
#   limit = max(cp -r SRC X && sync -f X, openssl dgst -sha256 SRC/*.parquet)
#
# (a copy made durable, and the SHA-256 of the bytes at the fastest
# implementation here; both can run at once on two cores.) The same
# conversion with --no-manifest is timed too: the manifest's cost is
# default / --no-manifest (target <= 1.15; beside it the least cost this machine allows the run, manifest_floor in lib.sh). blobpack 0.2.0
# (pinned in the test virtual environment) converts the same table in the
# same rounds where it is installed; the script says so where it is not.
#
# Cases: a table written by pyarrow (fixtures/parquet/big.py) with an int64
# id, a caption string and a payload column "image" of PARQUET_PAYLOAD
# (default 51200) pseudo-random bytes a row, ROW_GROUP_ROWS (default 2000)
# rows a row group (about 100 MB), for each codec in PARQUET_CODECS
# (default "snappy zstd none") and each form in PARQUET_FORMS (default
# "plain hf"):
#   plain  image is binary: PARQUET_ROWS rows (default 20000, 1 GB);
#          bpconvert --column image, blobpack --column image
#   hf     image is a Hugging Face Image() struct<bytes, path>:
#          PARQUET_HF_ROWS rows (default 10000, 512 MB); bpconvert
#          --column image (the struct kept, bytes null, path the
#          reference), blobpack --field image bytes
# For each it prints the ratio limit / convert-parquet (target >= 0.5),
# seconds per GB, and peak RSS against the bound 2 x the largest row
# group's uncompressed size (total_byte_size in the footer) + 64 MiB, each
# with the one-minute load averages at the start of its runs (the machine
# may be shared: a figure measured under load is noisy; say so). Peak RSS
# is the largest resident set of the command and what it waits for
# (ru_maxrss).
#
# The figures also replace the bench/parquet.sh section of
# docs/performance.md (BENCH_DOC=path writes another file, BENCH_DOC=none
# none).
#
# BPCONVERT_BASE=path times another build of bpconvert in the same rounds
# (before / after a change); its figures are printed, not written to the doc.
#
# Knobs: RUNS (rounds, default 3), the sizes above, BENCH_DIR (default a new
# directory under ${TMPDIR:-/var/tmp}; it needs about 4 x the largest table),
# BPCONVERT (default bin/bpconvert, built by `make build`), BPCONVERT_PYTHON
# (default the interpreter of the environment scripts/pyenv.sh makes from
# scripts/requirements/test.txt). Needs python3, bc and openssl.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$root/bin/bpconvert}
base=${BPCONVERT_BASE:-}
runs=${RUNS:-3}
rows=${PARQUET_ROWS:-20000}
hfrows=${PARQUET_HF_ROWS:-10000}
payload=${PARQUET_PAYLOAD:-51200}
rgrows=${ROW_GROUP_ROWS:-2000}
read -r -a codecs <<<"${PARQUET_CODECS:-snappy zstd none}"
read -r -a forms <<<"${PARQUET_FORMS:-plain hf}"
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

for t in bc openssl python3; do
  command -v "$t" >/dev/null || { echo "bench/parquet.sh: $t is not on PATH" >&2; exit 1; }
done
if ! "$bin" convert-parquet --help >/dev/null 2>&1; then
  echo "bench/parquet.sh: $bin has no convert-parquet command (build it: make build)" >&2
  exit 2
fi
py=${BPCONVERT_PYTHON:-$(bash "$root/scripts/pyenv.sh" "$root/scripts/requirements/test.txt")/bin/python}
find_blobpack "$py" convert-parquet bench/parquet.sh
head=$(bench_head bench/parquet.sh "$work")
echo "# $head"
echo "# load before: $(uptime)"

rows_out=()

# case_run FORM CODEC: one table, the commands in turns.
case_run() {
  local form=$1 codec=$2
  local n=$rows sel=(--column image) bsel=(--column image)
  if [ "$form" = hf ]; then
    n=$hfrows bsel=(--field image bytes)
  fi
  local src="$work/src"
  rm -rf "$src"
  mkdir -p "$src"
  local rgmax
  rgmax=$("$py" "$root/fixtures/parquet/big.py" "$src/table.parquet" "$n" "$payload" "$rgrows" "$codec" "$form")
  warm "$src"
  local bytes
  bytes=$(stat -c %s "$src/table.parquet")
  # One checked run of each converter first (measure_turns stops on a
  # failing command, but says less).
  "$bin" convert-parquet --quiet --yes "${sel[@]}" "$src" "$work/out"
  "$bin" verify "$work/out/media" >/dev/null
  local shard
  shard=$(largest_zip "$work/out")
  rm -rf "$work/out"
  BENCH_CLEAN="set_aside '$work/cp-out' '$work/out' '$work/nm-out' '$work/bp-out' '$work/base-out'"
  local -a cmds=(
    "cp -r '$src' '$work/cp-out' && sync -f '$work/cp-out'"
    "openssl dgst -sha256 '$src'/*.parquet"
    "'$bin' convert-parquet --quiet --yes ${sel[*]} '$src' '$work/out'"
    "'$bin' convert-parquet --quiet --yes --no-manifest ${sel[*]} '$src' '$work/nm-out'")
  local bi=4 basei=""
  if [ -n "$blobpack" ]; then
    # --field takes every argument after it: the selection goes last
    cmds+=("'$blobpack' convert-parquet --yes '$src' '$work/bp-out' ${bsel[*]} >/dev/null")
  fi
  if [ -n "$base" ]; then
    basei=${#cmds[@]}
    cmds+=("'$base' convert-parquet --quiet --yes ${sel[*]} '$src' '$work/base-out'")
  fi
  local -a m
  mapfile -t m < <(BENCH_CLEAN=$BENCH_CLEAN measure_turns "$runs" "${cmds[@]}")
  rm -rf "$work/cp-out" "$work/out" "$work/nm-out" "$work/bp-out" "$work/base-out" "$work/.trash"
  local tsync tsha tconv rss tbp="" rssbp="" l1 l2 lsync lsha lconv lbp="" cconv
  read -r tsync _ l1 l2 _ <<<"${m[0]}"; lsync="$l1-$l2"
  read -r tsha _ l1 l2 _ <<<"${m[1]}"; lsha="$l1-$l2"
  read -r tconv rss l1 l2 cconv <<<"${m[2]}"; lconv="$l1-$l2"
  local tnm floor
  read -r tnm _ _ _ _ <<<"${m[3]}"
  floor=$(manifest_floor "$cconv" "$tsha" "$bytes" "$shard" "$tnm")
  if [ -n "$blobpack" ]; then
    read -r tbp rssbp l1 l2 _ <<<"${m[$bi]}"; lbp="$l1-$l2"
  fi
  local limit gb bound ok
  limit=$(printf '%s\n%s\n' "$tsync" "$tsha" | sort -g | tail -1)
  gb=$(printf '%.3f' "$(echo "scale=4; $bytes/1000000000" | bc -l)")
  bound=$(printf '%.1f' "$(echo "scale=4; (2 * $rgmax + 64 * 1048576) / 1048576" | bc -l)")
  ok=met; [ "$(echo "$rss > $bound" | bc -l)" = 1 ] && ok="NOT met"
  local rgmib
  rgmib=$(printf '%.1f' "$(echo "scale=4; $rgmax/1048576" | bc -l)")
  echo "$form $codec: $n rows x $payload B in row groups of $rgrows rows ($rgmib MiB uncompressed, largest), $gb GB of parquet, $runs round(s)"
  echo "  cp -r, then sync -f:  $tsync s  (load $lsync)"
  echo "  openssl dgst -sha256: $tsha s  (load $lsha)"
  echo "  convert-parquet:      $tconv s  ($(per_gb "$tconv" "$bytes") s/GB), peak RSS $rss MiB, bound $bound MiB: $ok, machine CPU $cconv s, largest shard $shard B  (load $lconv)"
  local bpcell=""
  if [ -n "$blobpack" ]; then
    echo "  blobpack convert-parquet: $tbp s  ($(per_gb "$tbp" "$bytes") s/GB), peak RSS $rssbp MiB  (load $lbp); bpconvert is $(ratio "$tbp" "$tconv")x blobpack"
    bpcell="$tbp s, $rssbp MiB ($lbp); $(ratio "$tbp" "$tconv")x"
  fi
  if [ -n "$basei" ]; then
    local tbase rssbase
    read -r tbase rssbase l1 l2 _ <<<"${m[$basei]}"
    echo "  $base: $tbase s  ($(per_gb "$tbase" "$bytes") s/GB), peak RSS $rssbase MiB  (load $l1-$l2); limit/it: $(ratio "$limit" "$tbase")x; it/convert-parquet: $(ratio "$tbase" "$tconv")x"
  fi
  echo "  --no-manifest:        $tnm s; manifest cost $(ratio "$tconv" "$tnm")x (target <= 1.15; this machine allows ${floor}x)"
  echo "  limit/convert-parquet: $(ratio "$limit" "$tconv")x (target >= 0.5)"
  rows_out+=("| $form, $codec: $n x $payload B, row groups of $rgmib MiB ($gb GB), $runs round(s) | $tsync s ($lsync) | $tsha s ($lsha) | $tconv s, $(per_gb "$tconv" "$bytes") s/GB ($lconv) | $(ratio "$limit" "$tconv")x | $tnm s; $(ratio "$tconv" "$tnm")x (${floor}x) | $rss MiB (bound $bound MiB: $ok) | $bpcell |")
}

for form in "${forms[@]}"; do
  for codec in "${codecs[@]}"; do
    case_run "$form" "$codec"
  done
done
echo "# load after: $(uptime)"

{
  echo "Measured by $head; $turns_method; $manifest_note. Tables written by pyarrow ($("$py" -c 'import pyarrow; print(pyarrow.__version__)')) with fixtures/parquet/big.py; blobpack ${bpver:-not installed}."
  echo
  echo "| case | \`cp -r\` + \`sync -f\` | \`openssl dgst -sha256\` | \`convert-parquet\` | limit / convert (target >= 0.5) | \`--no-manifest\`; manifest cost default / \`--no-manifest\` (target <= 1.15) | peak RSS (bound 2 x row group + 64 MiB) | blobpack 0.2.0 \`convert-parquet\`; bpconvert / blobpack |"
  echo "|---|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows_out[@]}"
} | perf_doc bench/parquet.sh
