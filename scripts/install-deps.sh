#!/usr/bin/env bash
# Installs what bpconvert's build, demo and tests need on a fresh Debian 12
# machine (run as root). A no-op when everything is present.
set -euo pipefail

need_cmd() { command -v "$1" >/dev/null 2>&1; }
need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep 'install ok installed' >/dev/null; }

# gcc and pkg-config for cgo; patchelf for the release (scripts/dist); ffmpeg (CLI for video fixtures) and the six
# libav*-dev packages go-astiav v0.16.0 links against; zip tools and zstd for
# cross-checking packs and compressed shards; tmux for terminal tests;
# python3-fsspec for the test of the fsspec loader pattern (examples/fsspec);
# python3-venv for the pinned Python test environment (scripts/pyenv.sh);
# groff-base to format the man pages bpconvert writes.
pkgs=(gcc pkg-config patchelf ffmpeg libavcodec-dev libavdevice-dev libavfilter-dev
      libavformat-dev libavutil-dev libswscale-dev unzip zip zstd tmux
      xz-utils bzip2 python3 python3-venv python3-fsspec groff-base)
missing=()
for p in "${pkgs[@]}"; do need_pkg "$p" || missing+=("$p"); done
# Node.js and npm write the Lance and parquet fixtures. A machine may carry
# Node.js from another source that bundles npm; only install when absent.
need_cmd node || missing+=(nodejs)
need_cmd npm || missing+=(npm)

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! need_cmd go; then
  if [ -x /usr/local/go/bin/go ]; then
    echo "install-deps: Go is at /usr/local/go/bin; add it to PATH" >&2
  else
    echo "install-deps: Go 1.26 is required (go.mod) and is not installed" >&2
  fi
  exit 1
fi
