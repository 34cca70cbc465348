#!/usr/bin/env bash
# readme-data.sh [DIR]: writes the sample inputs the README's examples read
# into DIR (default: the current directory), which must not hold them yet:
#   shards/      a WebDataset (Python's tarfile)
#   hf/          a Hugging Face dataset with an Image() column (datasets)
#   data.lance   a Lance table with a binary image column (pylance)
#   lerobot-ds/  a LeRobot v3.0 dataset (camera files by the ffmpeg CLI,
#                tables by DuckDB: fixtures/parquet/lerobot.mjs)
# It needs what `make test` installs (the pinned Python environment, the
# fixture writers' npm packages, ffmpeg): run `make readme-data` for all of it.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-.}
mkdir -p "$dir"
cd "$dir"
for p in shards hf data.lance lerobot-ds; do
  if [ -e "$p" ]; then echo "readme-data: $PWD/$p exists already" >&2; exit 2; fi
done
py=${BPCONVERT_PYTHON:-$(bash "$repo/scripts/pyenv.sh" "$repo/scripts/requirements/test.txt")/bin/python}
"$py" "$repo/scripts/readme_data.py"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
node "$repo/fixtures/parquet/lerobot.mjs" "$tmp" >/dev/null
mv "$tmp/v3.0" lerobot-ds
echo "readme-data: wrote shards/ hf/ data.lance lerobot-ds/ in $PWD"
