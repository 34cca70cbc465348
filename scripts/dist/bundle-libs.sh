#!/usr/bin/env bash
# bundle-libs.sh PROGRAM FFMPEG LIBDIR LICDIR
#
# Copies the FFmpeg shared libraries PROGRAM loads, from FFMPEG (the build
# scripts/dist/ffmpeg.sh prints), into LIBDIR under their sonames, and
# FFmpeg's licence and source offer into LICDIR. PROGRAM gets the search path
# $ORIGIN/../lib/bpconvert (DT_RPATH, which the dynamic loader also uses for
# the libraries' own dependencies and which it searches before
# LD_LIBRARY_PATH and the system's directories); the libraries find each
# other through $ORIGIN. Fails if PROGRAM or a library needs any other library
# than those and the C library every glibc 2.36 system has, or a glibc symbol
# version above 2.36 (the wheel's manylinux_2_36 tag).
set -euo pipefail
prog=$1 ffmpeg=$2 libdir=$3 licdir=$4
mkdir -p "$libdir" "$licdir"

# The C runtime the manylinux_2_36 platform guarantees.
system='^(linux-vdso\.so\.1|ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libgcc_s\.so\.1)$'

list=$(LD_LIBRARY_PATH=$ffmpeg/lib ldd "$prog")
if grep -q 'not found' <<<"$list"; then
  echo "bundle-libs: $prog: a library is missing: $(grep 'not found' <<<"$list")" >&2
  exit 1
fi
while read -r soname path; do
  [[ ${soname##*/} =~ $system ]] && continue
  case $path in
    "$ffmpeg"/lib/*) install -m 0644 "$(readlink -f "$path")" "$libdir/$soname"
                     patchelf --set-rpath '$ORIGIN' "$libdir/$soname" ;;
    *) echo "bundle-libs: $prog loads $soname from $path, which is neither FFmpeg's build nor the C library" >&2
       exit 1 ;;
  esac
done < <(awk '{ if ($2 == "=>") print $1, $3; else print $1, $1 }' <<<"$list" | sort -u)
patchelf --force-rpath --set-rpath '$ORIGIN/../lib/bpconvert' "$prog"
cp "$ffmpeg"/share/doc/ffmpeg/* "$licdir/"

# Highest glibc symbol version any of these files needs.
max=$(for f in "$prog" "$libdir"/*; do objdump -T "$f"; done | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
echo "bundle-libs: $(ls "$libdir" | wc -l) libraries, $(du -sh "$libdir" | cut -f1), highest glibc symbol version $max" >&2
if [ "$(printf '%s\n2.36\n' "$max" | sort -V | tail -1)" != 2.36 ]; then
  echo "bundle-libs: needs glibc $max, above manylinux_2_36" >&2
  exit 1
fi
