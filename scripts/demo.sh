#!/usr/bin/env bash
# Packs a generated sample, verifies it with bpconvert and with unzip, and
# prints what was written.
set -euo pipefail
cd "$(dirname "$0")/.."
bin=bin/bpconvert
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/sample/images" "$work/sample/labels"
for i in $(seq -w 0 49); do
  head -c $((4096 + 10#$i * 997)) /dev/urandom > "$work/sample/images/$i.bin"
  echo "label $i" > "$work/sample/labels/$i.txt"
done
echo "== bpconvert pack (sample: 100 files)"
$bin pack "$work/sample" "$work/media" --max-pack-bytes 200KiB
echo "== bpconvert verify"
$bin verify "$work/media"
echo "== unzip -t"
for z in "$work"/media/*.zip; do unzip -tq "$z"; done
echo "== bpconvert ls (first 5)"
$bin ls "$work/media" | head -n 5
echo "== pack.manifest.json"
head -n 8 "$work/media/pack.manifest.json"
