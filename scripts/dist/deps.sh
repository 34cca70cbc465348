#!/usr/bin/env bash
# Installs what `make dist` and `make test-dist` need beyond
# scripts/install-deps.sh, on Debian 12 (run as root); a no-op when all is
# there: skopeo and umoci (the image tests read and unpack the image with
# them; mmdebstrap and buildah build the Dockerfile on a Debian base made
# here), and an apt source for Debian's source packages, from which
# scripts/dist/ffmpeg.sh downloads FFmpeg's source (once; it is cached).
# Then apt-get update, so the image's base has Debian's current packages.
set -euo pipefail

need_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep 'install ok installed' >/dev/null; }

missing=()
for p in skopeo umoci mmdebstrap buildah; do need_pkg "$p" || missing+=("$p"); done
list=/etc/apt/sources.list.d/bpconvert-src.sources
if ! apt-cache showsrc ffmpeg 2>/dev/null | grep '^Package: ffmpeg' >/dev/null; then
  echo "dist-deps: adding Debian 12's source packages to apt ($list)" >&2
  cat >"$list" <<'EOF'
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
fi
# Always: the image's base takes the current versions of its Debian
# packages (security updates included), as a Dockerfile build does.
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "dist-deps: installing ${missing[*]}" >&2
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
