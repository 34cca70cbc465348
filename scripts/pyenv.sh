#!/usr/bin/env bash
# pyenv.sh REQFILE: makes (once) the Python virtual environment that REQFILE,
# a pip requirements file with exact versions and hashes, describes, and
# prints its directory. The environment lives outside the source tree, under
# ${BPCONVERT_VENV_ROOT:-$HOME/.cache/bpconvert}, in a directory named after
# the file and its SHA-256, so a changed file gets a new environment and every
# checkout of the same file shares one. A half-made environment (a killed
# install) has no .complete marker and is made again. A lock beside it lets
# several checkouts ask for the same environment at once.
set -euo pipefail
req=${1:?usage: pyenv.sh REQFILE}
root=${BPCONVERT_VENV_ROOT:-$HOME/.cache/bpconvert}
name=$(basename "$req" .txt)
sum=$(sha256sum "$req" | cut -c1-12)
dir="$root/venv-$name-$sum"
mkdir -p "$root"
exec 9>"$dir.lock"
flock 9
if [ ! -f "$dir/.complete" ]; then
  rm -rf "$dir"
  echo "pyenv: creating $dir from $req" >&2
  python3 -m venv "$dir" >&2
  "$dir/bin/pip" install -q --disable-pip-version-check --no-input --require-hashes --only-binary=:all: -r "$req" >&2
  touch "$dir/.complete"
fi
echo "$dir"
