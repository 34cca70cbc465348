#!/usr/bin/env bash
# ffmpeg.sh: builds (once) the FFmpeg shared libraries that the released
# bpconvert-lerobot links, and prints the directory they are installed in
# (lib/, include/, lib/pkgconfig/, share/doc/ with the licence and the
# source offer, src/ with the source tarball).
#
# FFmpeg 5.1 (the version go-astiav v0.16.0 builds against), from Debian 12's
# source package (its upstream tarball, unmodified: apt-get source checks it
# against Debian's signed index), configured under the LGPL version 2.1 or
# later only (no --enable-gpl, no --enable-nonfree, no external library) with
# just what bpconvert-lerobot calls: it reads camera files and writes MP4
# files by packet copy, so it needs the demuxers, parsers and bitstream
# filters of the containers and codecs LeRobot datasets use, the mp4 muxer,
# the file protocol, and decoders for the codecs whose stream parameters
# avformat_find_stream_info may have to decode (a stream whose header has no
# frame size). libavdevice, libavfilter and libswscale are built with nothing
# in them: go-astiav links them.
#
# The build lives under ${BPCONVERT_CACHE:-$HOME/.cache/bpconvert}, in a
# directory named after a hash of this script and the compiler, binutils and
# C library versions: CI rebuilds it only when one of those changes. A lock
# lets several checkouts ask for it at once; a half-made build has no
# .complete marker and is made again.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD

FFMPEG_DEBIAN_VERSION=7:5.1.9-0+deb12u1
FFMPEG_UPSTREAM=5.1.9
FFMPEG_ORIG_SHA256=d9b593bb2ba93d4b50f74177e0cdcd41747e708596367deed0c30348a71dd176

# The configuration. --prefix names where the libraries would be installed
# on a system; the build is installed under the cache with DESTDIR, so the
# libraries do not carry the cache's path.
configure_flags=(
  --prefix=/usr/local
  --enable-shared --disable-static --enable-pic
  --disable-programs --disable-doc --disable-debug
  --disable-autodetect --disable-network --disable-x86asm
  --disable-everything --disable-swresample --disable-postproc
  --enable-protocol=file
  --enable-demuxer=mov,matroska,avi,ivf,obu,h264,hevc,m4v
  --enable-muxer=mp4,mov
  --enable-parser=h264,hevc,av1,vp8,vp9,mpeg4video
  --enable-decoder=h264,hevc,vp8,vp9,mpeg4
  --enable-bsf=h264_mp4toannexb,hevc_mp4toannexb,vp9_superframe,vp9_superframe_split,av1_frame_merge,av1_frame_split,extract_extradata,mpeg4_unpack_bframes,null
)

cache=${BPCONVERT_CACHE:-$HOME/.cache/bpconvert}
toolchain=$(dpkg-query -W -f='${Package} ${Version}\n' gcc-12 binutils libc6-dev make 2>/dev/null)
key=$( { cat "$0"; echo "$toolchain"; } | sha256sum | cut -c1-12)
dir=$cache/ffmpeg-$FFMPEG_UPSTREAM-lgpl-$key
mkdir -p "$cache"
exec 9>"$dir.lock"
flock 9
if [ -f "$dir/.complete" ]; then
  echo "$dir"
  exit 0
fi
rm -rf "$dir"
echo "ffmpeg: building FFmpeg $FFMPEG_UPSTREAM (LGPL) into $dir" >&2
t0=$(date +%s)

# The source: Debian's source package, downloaded once.
srcdir=$cache/src
orig=$srcdir/ffmpeg_$FFMPEG_UPSTREAM.orig.tar.xz
mkdir -p "$srcdir"
if ! echo "$FFMPEG_ORIG_SHA256  $orig" | sha256sum -c --quiet - >/dev/null 2>&1; then
  if ! apt-cache showsrc ffmpeg 2>/dev/null | grep -x "Version: $FFMPEG_DEBIAN_VERSION" >/dev/null; then
    echo "ffmpeg: apt knows no source package ffmpeg=$FFMPEG_DEBIAN_VERSION;" \
      "add a deb-src line for bookworm and bookworm-security (scripts/dist/deps.sh does) and run apt-get update" >&2
    exit 1
  fi
  (cd "$srcdir" && apt-get source --download-only -qq "ffmpeg=$FFMPEG_DEBIAN_VERSION" >/dev/null 2>&1)
  echo "$FFMPEG_ORIG_SHA256  $orig" | sha256sum -c --quiet - || { echo "ffmpeg: $orig: unexpected checksum" >&2; exit 1; }
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -xJf "$orig" -C "$work"
b=$work/ffmpeg-$FFMPEG_UPSTREAM
# Built in its source tree, so the compiler sees relative paths only (and
# the configuration string the libraries hold names no temporary directory).
(
  cd "$b"
  ./configure "${configure_flags[@]}" >"$work/configure.log" 2>&1 \
    || { tail -30 "$work/configure.log" >&2; exit 1; }
  make -j"$(nproc)" >"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
  make install DESTDIR="$work/destdir" >>"$work/make.log" 2>&1 || { tail -30 "$work/make.log" >&2; exit 1; }
)
mkdir -p "$dir"
cp -a "$work/destdir/usr/local/." "$dir/"
rm -rf "$dir/share/ffmpeg" # the examples
# pkg-config finds the build where it is.
sed -i "s|^prefix=.*|prefix=$dir|" "$dir"/lib/pkgconfig/*.pc

# The licence, the source and the offer beside the libraries.
mkdir -p "$dir/share/doc/ffmpeg" "$dir/src"
cp "$b/COPYING.LGPLv2.1" "$b/LICENSE.md" "$dir/share/doc/ffmpeg/"
cp "$orig" "$dir/src/ffmpeg-$FFMPEG_UPSTREAM.tar.xz"
{
  echo "The FFmpeg libraries shipped with bpconvert-lerobot (libavcodec, libavformat,"
  echo "libavutil, libavdevice, libavfilter, libswscale) are FFmpeg $FFMPEG_UPSTREAM, free software"
  echo "under the GNU Lesser General Public License version 2.1 or later"
  echo "(COPYING.LGPLv2.1, LICENSE.md). They were built without any GPL, non-free or"
  echo "external component, from the unmodified upstream source:"
  echo
  echo "  ffmpeg-$FFMPEG_UPSTREAM.tar.xz  sha256 $FFMPEG_ORIG_SHA256"
  echo
  echo "That tarball is published with each bpconvert release beside this archive,"
  echo "at https://ffmpeg.org/releases/ffmpeg-$FFMPEG_UPSTREAM.tar.xz and in Debian 12's source"
  echo "package ffmpeg $FFMPEG_DEBIAN_VERSION (apt-get source ffmpeg=$FFMPEG_DEBIAN_VERSION)."
  echo "It was configured with"
  echo
  echo "  ./configure ${configure_flags[*]}"
  echo
  echo "and built with $(gcc -dumpfullversion) (Debian 12) by scripts/dist/ffmpeg.sh of bpconvert."
  echo "bpconvert-lerobot loads them as shared libraries from the lib/bpconvert"
  echo "directory beside its bin directory; any compatible build of FFmpeg 5.1 with"
  echo "the same library names may replace them there."
} >"$dir/share/doc/ffmpeg/SOURCE-OFFER.txt"
touch "$dir/.complete"
echo "ffmpeg: built in $(( $(date +%s) - t0 )) s: $(du -sh "$dir/lib" | cut -f1) of libraries" >&2
echo "$dir"
