#!/usr/bin/env bash
# Installs what a release ships, as a user would, and runs it (make test-dist):
#  1. `make dist` for linux/amd64 into dist/, twice (the second into a
#     temporary directory): both SHA256SUMS must be identical.
#  2. The linux x86-64 wheel installed with pip --no-index into a fresh
#     virtual environment; the linux/amd64 archives unpacked into an empty
#     directory. Each runs, with only its own bin directory, /usr/bin and /bin
#     on PATH (no Go) and Debian's FFmpeg libraries hidden (an empty file
#     mounted over each, in a private mount namespace):
#     scripts/demo.sh; convert-wds and verify --against on the demo sample;
#     convert-lerobot --yes and verify --against on a LeRobot v3.0 dataset
#     (fixtures/parquet/lerobot.mjs: ffmpeg CLI videos, DuckDB tables). The
#     dynamic loader's log (LD_DEBUG=libs) must show every library outside
#     the C runtime loaded from the installation's lib/bpconvert, and those
#     must be the LGPL build (libavutil's licence string).
#  3. The image: skopeo reads its configuration both as an OCI archive and
#     as a docker archive (what `docker load` reads): entrypoint
#     /usr/local/bin/bpconvert, a user other than root. umoci unpacks its
#     layers into a directory, which runs the same conversions under chroot
#     as that user, with /proc and /dev mounted as a container runtime does.
#  4. The libav package's tests (every codec and container they cover: H.264
#     with and without B-frames, HEVC, AV1, MPEG-4 Part 2 in MP4) linked
#     with the FFmpeg build the release bundles instead of Debian's.
#  5. The archive and the image hold the shell completions (bash, zsh,
#     fish) and the manual pages.
#  6. The Dockerfile, built with buildah from the release's archives on a
#     Debian 12 base made by mmdebstrap, gives the image's file system,
#     entrypoint and user.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
GO=${GO:-go}
t0=$(date +%s)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "test-dist: FAIL: $*" >&2; exit 1; }

export DIST_PLATFORMS=linux/amd64
# TEST_DIST_REUSE=1 tests the files already in dist/ (while changing this
# script); the reproducibility check is then left out.
if [ "${TEST_DIST_REUSE:-}" != 1 ]; then
  bash scripts/dist/dist.sh
  t1=$(date +%s)
  DIST_DIR=$work/dist2 bash scripts/dist/dist.sh 2>/dev/null
  diff dist/SHA256SUMS "$work/dist2/SHA256SUMS" || fail "two builds of one commit differ"
  echo "test-dist: reproducible: two builds give the same SHA256SUMS ($(wc -l <dist/SHA256SUMS) files)"
  rm -rf "$work/dist2"
fi
t1=${t1:-$t0}
(cd dist && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match dist/"
python3 - dist/bpconvert-lerobot-v*-linux-amd64.cdx.json dist/ffmpeg-*.tar.xz <<'PY' || fail "the lerobot SBOM does not name the FFmpeg build"
import hashlib, json, sys
comps = [c for c in json.load(open(sys.argv[1])).get("components", []) if c["name"] == "ffmpeg"]
assert len(comps) == 1, comps
assert comps[0]["licenses"] == [{"license": {"id": "LGPL-2.1-or-later"}}], comps[0]["licenses"]
assert comps[0]["hashes"][0]["content"] == hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest()
assert sys.argv[2].endswith("/ffmpeg-%s.tar.xz" % comps[0]["version"]), (sys.argv[2], comps[0]["version"])
PY
t2=$(date +%s)

# Inputs, written by independent tools before anything is hidden.
python3 scripts/demo-sample.py "$work/shards"
node fixtures/parquet/lerobot.mjs "$work/lerobot" >/dev/null
lerobot=$work/lerobot/v3.0

# Debian's FFmpeg libraries, to hide.
hide=$(ls /usr/lib/x86_64-linux-gnu/lib{avcodec,avformat,avutil,avfilter,avdevice,swscale,swresample,postproc}.so.* 2>/dev/null | xargs -r readlink -f | sort -u)
[ -n "$hide" ] || fail "no system FFmpeg libraries found to hide"

# run_installed BINDIR LIBDIR: the checks, in a mount namespace where every
# file in $hide is an empty file, with PATH=BINDIR:/usr/bin:/bin.
run_installed() {
  local bindir=$1 libdir=$2 out=$work/out-$RANDOM
  mkdir -p "$out"
  unshare -m --propagation private env -i HOME="$work" PATH="$bindir:/usr/bin:/bin" \
    HIDE="$hide" LIBDIR="$libdir" OUT="$out" SHARDS="$work/shards" LEROBOT="$lerobot" \
    BPCONVERT_BIN="$bindir/bpconvert" bash -euo pipefail -c '
      for f in $HIDE; do mount --bind /dev/null "$f"; done
      ! command -v go >/dev/null || { echo "go is on PATH"; exit 1; }
      ! /usr/bin/ffprobe -version >/dev/null 2>&1 || { echo "the system FFmpeg libraries still load"; exit 1; }
      [ "$(command -v bpconvert)" = "$BPCONVERT_BIN" ]
      bpconvert version
      LD_DEBUG=libs bpconvert-lerobot version 2>"$OUT/ld.log" >/dev/null
      LIBDIR=$(realpath "$LIBDIR")
      awk "/calling init: /{print \$NF}" "$OUT/ld.log" | xargs realpath | sort -u >"$OUT/loaded"
      n=$(grep -c "^$LIBDIR/" "$OUT/loaded")
      bad=$(grep -v "^$LIBDIR/" "$OUT/loaded" | grep -Ev "/(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libgcc_s|libstdc\+\+)\.so(\.[0-9]+)+$" || true)
      [ -z "$bad" ] || { echo "loaded from outside $LIBDIR: $bad"; exit 1; }
      grep -q "^$LIBDIR/libavcodec.so.59$" "$OUT/loaded" || { echo "libavcodec not loaded from $LIBDIR"; exit 1; }
      grep -aq "LGPL version 2.1 or later" "$LIBDIR/libavutil.so.57" || { echo "$LIBDIR/libavutil.so.57 is not an LGPL build"; exit 1; }
      ! grep -aq -- "--enable-gpl" "$LIBDIR/libavutil.so.57" || { echo "$LIBDIR/libavutil.so.57 was configured with --enable-gpl"; exit 1; }
      echo "bpconvert-lerobot loaded $n libraries, all from $LIBDIR"
      bash scripts/demo.sh >"$OUT/demo.log"
      bpconvert convert-wds --yes --quiet "$SHARDS" "$OUT/wds"
      bpconvert verify "$OUT/wds" --against "$SHARDS"
      bpconvert convert-lerobot --yes --quiet "$LEROBOT" "$OUT/lerobot"
      bpconvert verify "$OUT/lerobot" --against "$LEROBOT"
      ls "$OUT/lerobot/media"/*.zip >/dev/null
    ' || fail "$3"
  rm -rf "$out"
}

# check_extras BPCONVERT SHARE WHAT: BPCONVERT makes shell completions, and
# SHARE holds them for bash, zsh and fish and the manual pages.
check_extras() {
  "$1" completion bash >/dev/null 2>&1 || fail "$3: bpconvert completion bash fails"
  local f
  for f in bash-completion/completions/bpconvert zsh/site-functions/_bpconvert fish/vendor_completions.d/bpconvert.fish man/man1/bpconvert.1; do
    [ -s "$2/$f" ] || fail "$3: no $f"
  done
  bash -c ". '$2/bash-completion/completions/bpconvert' && complete -p bpconvert" >/dev/null || fail "$3: bash cannot load the completion"
}

# The wheel, into a fresh virtual environment.
whl=$(ls dist/bpconvert-*-py3-none-manylinux_2_36_x86_64.whl)
/usr/bin/python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --no-index --disable-pip-version-check "$whl"
[ -x "$work/venv/bin/bpconvert" ] && [ -x "$work/venv/bin/bpconvert-lerobot" ] || fail "the wheel did not install both programs into bin/"
run_installed "$work/venv/bin" "$work/venv/lib/bpconvert" "the wheel"
echo "test-dist: the wheel $(basename "$whl") ($(du -m "$whl" | cut -f1) MB) installs and runs"
t3=$(date +%s)

# The archives, unpacked into an empty directory.
mkdir "$work/unpacked"
for a in dist/bpconvert-v*-linux-amd64.tar.gz dist/bpconvert-lerobot-v*-linux-amd64.tar.gz; do
  tar -xzf "$a" -C "$work/unpacked"
done
top=$(ls "$work/unpacked")
run_installed "$work/unpacked/$top/bin" "$work/unpacked/$top/lib/bpconvert" "the archives"
check_extras "$work/unpacked/$top/bin/bpconvert" "$work/unpacked/$top/share" "the archive"
echo "test-dist: the archives unpack and run"
t4=$(date +%s)

# The image: its configuration as skopeo reads it, then its layers unpacked
# by umoci and run under chroot.
img=$(ls dist/bpconvert-v*-linux-amd64.image.tar)
for transport in oci-archive docker-archive; do
  skopeo inspect --config "$transport:$img" >"$work/config.json" || fail "skopeo cannot read $img as $transport"
  python3 - "$work/config.json" <<'PY' || fail "$img ($transport): the configuration is not as shipped"
import json, sys
c = json.load(open(sys.argv[1]))["config"]
assert c.get("Entrypoint") == ["/usr/local/bin/bpconvert"], c.get("Entrypoint")
user = c.get("User", "")
assert user and user.split(":")[0] not in ("0", "root"), user
print(user)
PY
done
user=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["config"]["User"])' "$work/config.json")
mkdir "$work/oci"
tar -xf "$img" -C "$work/oci"
ref=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["manifests"][0]["annotations"]["org.opencontainers.image.ref.name"])' "$work/oci/index.json")
umoci raw unpack --image "$work/oci:$ref" "$work/rootfs" || fail "umoci cannot unpack $img"
rootfs=$work/rootfs
[ ! -e "$rootfs/bin/sh" ] || fail "the image has a shell"
if find "$rootfs" -name 'libav*' | grep -v "^$rootfs/usr/local/lib/bpconvert/" | grep . >/dev/null; then
  fail "the image has FFmpeg libraries outside /usr/local/lib/bpconvert"
fi
mkdir -p "$rootfs/in/shards" "$rootfs/in/lerobot" "$rootfs/out"
chown "$user" "$rootfs/out"
unshare -m --propagation private env -i PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin HOME=/home/bpconvert ROOTFS="$rootfs" SHARDS="$work/shards" LEROBOT="$lerobot" U="$user" bash -euo pipefail -c '
  mount --bind "$SHARDS" "$ROOTFS/in/shards"
  mount --bind "$LEROBOT" "$ROOTFS/in/lerobot"
  mount --rbind /proc "$ROOTFS/proc"
  mount --rbind /dev "$ROOTFS/dev"
  # The entrypoint, as the image user, in the image root (no shell there).
  run() { chroot --userspec="$U" "$ROOTFS" /usr/local/bin/bpconvert "$@"; }
  run version
  run convert-wds --yes --quiet /in/shards /out/wds
  run verify /out/wds --against /in/shards
  run convert-lerobot --yes --quiet /in/lerobot /out/lerobot
  run verify /out/lerobot --against /in/lerobot
' || fail "the image"
ls "$rootfs/out/lerobot/media"/*.zip >/dev/null || fail "the image wrote no LeRobot packs"
check_extras "$rootfs/usr/local/bin/bpconvert" "$rootfs/usr/local/share" "the image"
echo "test-dist: the image $(basename "$img") ($(du -m "$img" | cut -f1) MB) unpacks and runs as $user"
rm -rf "${rootfs:?}/in" "$rootfs/out"
t5=$(date +%s)

# The video package's tests against the bundled FFmpeg build: the minimal
# configuration has every demuxer, parser and muxer they use.
ffmpeg=$(bash scripts/dist/ffmpeg.sh)
PKG_CONFIG_PATH=$ffmpeg/lib/pkgconfig CGO_LDFLAGS="-Wl,-rpath,$ffmpeg/lib" \
  $GO test -c -o "$work/libav.test" ./convert/lerobot/video/libav/
ldd "$work/libav.test" | grep "libavformat.so.59 => $ffmpeg/lib/" >/dev/null || fail "the libav tests are not linked with $ffmpeg"
(cd convert/lerobot/video/libav && "$work/libav.test" -test.count=1) || fail "the libav tests with the bundled FFmpeg build"
echo "test-dist: the libav tests pass with the bundled FFmpeg build"
t6=$(date +%s)

# The Dockerfile, built by buildah from the release archives, on a
# debian:bookworm-slim made here (no registry): mmdebstrap's minbase with
# CA certificates, made once and cached under ~/.cache/bpconvert, named
# after its command. Its file system must be the image's: the same paths,
# modes, owners, link targets and file contents.
# (mmdebstrap SUITE TARGET MIRROR...: the target before the mirrors.)
slim_cmd=(mmdebstrap --quiet --variant=minbase --include=ca-certificates bookworm)
slim_mirrors=("deb http://deb.debian.org/debian bookworm main" "deb http://deb.debian.org/debian-security bookworm-security main")
slim=${BPCONVERT_CACHE:-$HOME/.cache/bpconvert}/debian-bookworm-slim-$(printf '%s\n' "${slim_cmd[@]}" "${slim_mirrors[@]}" | sha256sum | cut -c1-12).tar
if [ ! -f "$slim" ]; then
  "${slim_cmd[@]}" "${slim%.tar}.tmp.tar" "${slim_mirrors[@]}" || fail "mmdebstrap could not make a Debian 12 base for the Dockerfile"
  mv "${slim%.tar}.tmp.tar" "$slim"
fi
ba=(buildah --root "$work/storage" --runroot "$work/run" --storage-driver vfs)
c=$("${ba[@]}" from scratch)
tar -xf "$slim" -C "$("${ba[@]}" mount "$c")"
"${ba[@]}" commit -q "$c" docker.io/library/debian:bookworm-slim >/dev/null
"${ba[@]}" bud -q --pull=never --isolation chroot -t localhost/bpconvert-dockerfile . >/dev/null || fail "buildah cannot build the Dockerfile"
cfg=$("${ba[@]}" inspect --type image --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.User}}' localhost/bpconvert-dockerfile)
[ "$cfg" = "[/usr/local/bin/bpconvert] $user" ] || fail "the Dockerfile's image: entrypoint and user $cfg, the release image's [/usr/local/bin/bpconvert] $user"
built=$("${ba[@]}" mount "$("${ba[@]}" from localhost/bpconvert-dockerfile)")
list() { (cd "$1" && find . -mindepth 1 -printf '%p %m %U %G %l\n' | LC_ALL=C sort); }
diff <(list "$rootfs") <(list "$built") >&2 || fail "the Dockerfile's image has other paths, modes, owners or links than the release image"
diff -r --no-dereference "$rootfs" "$built" >&2 || fail "the Dockerfile's image has other file contents than the release image"
"${ba[@]}" rm -a >/dev/null
"${ba[@]}" rmi -a -f >/dev/null 2>&1 || true
echo "test-dist: the Dockerfile builds the release image's file system"
t7=$(date +%s)
echo "test-dist: ok: dist $((t1 - t0)) s, second dist and checks $((t2 - t1)) s, wheel $((t3 - t2)) s, archives $((t4 - t3)) s, image $((t5 - t4)) s, libav tests $((t6 - t5)) s, Dockerfile $((t7 - t6)) s"
