#!/usr/bin/env bash
# bundle-libs.sh PROGRAM LIBDIR LICDIR
#
# Copies the shared libraries PROGRAM loads (the FFmpeg libraries of Debian
# 12 and everything they load in turn, as ldd lists them) into LIBDIR under
# their sonames, except the C runtime every glibc 2.36 system has (glibc's
# libraries, libgcc_s, libstdc++). PROGRAM gets the search path
# $ORIGIN/../lib/bpconvert (DT_RPATH, which the dynamic loader also uses for
# the libraries' own dependencies and which it searches before
# LD_LIBRARY_PATH and the system's directories); a copied library that
# carries a search path of its own gets $ORIGIN instead. Into LICDIR go the
# Debian copyright file of every package a library comes from and
# SOURCE-OFFER.txt, which names each package's source and where to get it.
# Fails if any file needs a glibc symbol version above 2.36.
set -euo pipefail
prog=$1 libdir=$2 licdir=$3
mkdir -p "$libdir" "$licdir/debian"

# The C runtime the manylinux_2_36 platform guarantees.
system='^(ld-linux-x86-64\.so\.2|libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|librt\.so\.1|libresolv\.so\.2|libutil\.so\.1|libnsl\.so\.1|libgcc_s\.so\.1|libstdc\+\+\.so\.6)$'

ldd "$prog" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u >"$libdir.list"
if grep -q 'not found' < <(ldd "$prog"); then
  echo "bundle-libs: $prog: a library is missing: $(ldd "$prog" | grep 'not found')" >&2
  exit 1
fi
declare -A pkgs=()
while read -r soname path; do
  [[ $soname =~ $system ]] && continue
  install -m 0644 "$(readlink -f "$path")" "$libdir/$soname"
  if [ -n "$(patchelf --print-rpath "$libdir/$soname")" ]; then
    patchelf --set-rpath '$ORIGIN' "$libdir/$soname"
  fi
  pkg=$(dpkg-query -S "$path" 2>/dev/null || dpkg-query -S "$(readlink -f "$path")")
  pkg=${pkg%%:*}
  pkgs[$pkg]=1
done <"$libdir.list"
rm "$libdir.list"
patchelf --force-rpath --set-rpath '$ORIGIN/../lib/bpconvert' "$prog"

# Licences and the source offer, package by package (sorted).
{
  echo "bpconvert-lerobot is linked with FFmpeg's libraries as Debian 12 builds them"
  echo "(configured with --enable-gpl, so the GNU GPL version 2 or later applies to"
  echo "them as combined; FFmpeg alone is LGPL-2.1-or-later), and lib/bpconvert holds"
  echo "those shared libraries and the libraries they load, unmodified except for"
  echo "their library search path (patchelf). Each may be replaced by a compatible"
  echo "build of the same soname."
  echo
  echo "The complete corresponding source of every library is that of the Debian"
  echo "source package and version below, available from"
  echo "https://snapshot.debian.org/package/SOURCE/VERSION/ and with"
  echo "\`apt-get source SOURCE=VERSION\` on Debian 12. The copyright and licence of"
  echo "each binary package is in debian/PACKAGE.copyright beside this file."
  echo
  printf '%-40s %-32s %s\n' "binary package" "source package" "version"
  for pkg in $(printf '%s\n' "${!pkgs[@]}" | sort); do
    IFS=$'\t' read -r src ver < <(dpkg-query -W -f='${source:Package}\t${source:Version}\n' "$pkg")
    printf '%-40s %-32s %s\n' "$pkg" "$src" "$ver"
    cp -L "/usr/share/doc/$pkg/copyright" "$licdir/debian/$pkg.copyright"
  done
} >"$licdir/SOURCE-OFFER.txt"

# Highest glibc symbol version any of these files needs.
max=$(for f in "$prog" "$libdir"/*; do objdump -T "$f"; done | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -1)
echo "bundle-libs: $(ls "$libdir" | wc -l) libraries, $(du -sh "$libdir" | cut -f1), highest glibc symbol version $max" >&2
if [ "$(printf '%s\n2.36\n' "$max" | sort -V | tail -1)" != 2.36 ]; then
  echo "bundle-libs: needs glibc $max, above manylinux_2_36" >&2
  exit 1
fi
