#!/usr/bin/env bash
# The demo: writes a small WebDataset sample with Python's tarfile (two
# shards of PNG images, labels and JSON metadata), shows bpconvert's plan for
# it, converts it into blob packs plus samples.parquet, verifies the packs
# with bpconvert and with unzip, and lists what was written.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${BPCONVERT_BIN:-bin/bpconvert}  # an installed bpconvert: its absolute path
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

python3 scripts/demo-sample.py "$work/shards"

echo "== the sample: $(ls "$work/shards" | tr '\n' ' ')(written by Python's tarfile)"
echo
echo "== bpconvert convert-wds --dry-run (the plan; nothing is written)"
$bin convert-wds "$work/shards" "$work/dataset" --dry-run
echo "== bpconvert convert-wds --inline cls,json"
$bin convert-wds "$work/shards" "$work/dataset" --inline cls,json --yes --quiet --json
echo
echo "== bpconvert verify"
$bin verify "$work/dataset/media"
echo "== unzip -t"
for z in "$work"/dataset/media/*.zip; do unzip -tq "$z"; done
echo "== bpconvert ls (first 6 members)"
$bin ls "$work/dataset/media" | sed -n 1,6p  # sed reads to the end: no SIGPIPE under pipefail
echo "== written"
(cd "$work/dataset" && find . -type f | sort)
