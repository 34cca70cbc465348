#!/usr/bin/env bash
# image-base.sh: makes (once) the root filesystem under the container
# image's bpconvert layer and prints its directory: the Debian 12 packages
# the two programs need at run time and nothing else (no shell, no package
# manager): the C library (bpconvert-lerobot and its FFmpeg libraries link
# it; bpconvert needs nothing), libgcc (which the C library loads for thread
# cancellation), the CA certificates (S3 over HTTPS), the time zones and
# netbase's /etc/services. /etc/passwd and /etc/group name root and the user
# the image runs as (bpconvert, 10001:10001).
#
# The packages are downloaded by apt-get download from the machine's Debian
# 12 sources and unpacked with dpkg-deb; their maintainer scripts do not run
# (the one that matters, ca-certificates', concatenates the certificates into
# /etc/ssl/certs/ca-certificates.crt: done here). /var/lib/dpkg/status lists
# them, so image scanners see their versions; their copyright files stay.
# The result lives under ${BPCONVERT_CACHE:-$HOME/.cache/bpconvert}, named
# after a hash of this script (the package list) and of the package files
# (their versions) that apt's lists name: a rebuild of the image reuses it,
# and it is made again when the list changes or Debian updates a package
# (after apt-get update, which scripts/dist/deps.sh runs).
set -euo pipefail
umask 022
cd "$(dirname "$0")/../.."

packages=(base-files libc6 libgcc-s1 ca-certificates tzdata netbase)
# Unpacked but not kept: documentation other than copyright files, locales,
# the C library's character-set converters (gconv: iconv, which neither
# program uses), lintian overrides.
drop=(usr/share/man usr/share/info usr/share/locale usr/share/lintian
      usr/lib/x86_64-linux-gnu/gconv usr/share/bug usr/share/common-licenses/GPL
      usr/share/base-files/dot.bashrc usr/share/base-files/dot.profile usr/share/base-files/dot.profile.md5sums)

cache=${BPCONVERT_CACHE:-$HOME/.cache/bpconvert}
# Named after this script and the packages' files apt would download now
# (names with versions): a Debian update of one of them makes a new base.
uris=$(apt-get download --print-uris "${packages[@]}" 2>/dev/null | awk '{print $2, $4}' | sort)
[ -n "$uris" ] || { echo "image-base: apt-get download --print-uris ${packages[*]} printed nothing" >&2; exit 1; }
key=$( { cat "$0"; echo "$uris"; } | sha256sum | cut -c1-12)
dir=$cache/image-base-$key
mkdir -p "$cache"
exec 9>"$dir.lock"
flock 9
if [ -f "$dir/.complete" ]; then
  echo "$dir/rootfs"
  exit 0
fi
rm -rf "$dir"
echo "image-base: downloading ${packages[*]} into $dir" >&2
mkdir -p "$dir/debs" "$dir/rootfs"
(cd "$dir/debs" && apt-get download -qq "${packages[@]}" >/dev/null 2>&1) \
  || { echo "image-base: apt-get download ${packages[*]} failed" >&2; exit 1; }
r=$dir/rootfs
status=$dir/status
: >"$status"
for deb in $(ls "$dir/debs"/*.deb | sort); do
  dpkg-deb -x "$deb" "$r"
  { dpkg-deb -f "$deb" Package; echo "Status: install ok installed"
    dpkg-deb -f "$deb" Priority Section Installed-Size Maintainer Architecture Multi-Arch Source Version Depends Pre-Depends Description Homepage
    echo; } >>"$status"
done
# Debian 12 is merged-/usr: /bin, /lib, /lib64 and /sbin are links into /usr
# (the packages ship files under /lib; move them).
for d in bin lib lib64 sbin; do
  if [ -d "$r/$d" ] && [ ! -L "$r/$d" ]; then
    mkdir -p "$r/usr/$d"
    cp -a "$r/$d/." "$r/usr/$d/"
    rm -rf "${r:?}/$d"
  fi
  mkdir -p "$r/usr/$d"
  ln -s "usr/$d" "$r/$d"
done
for p in "${drop[@]}"; do rm -rf "${r:?}/$p"; done
find "$r/usr/share/doc" -type f ! -name copyright -delete
find "$r/usr/share/doc" -type l -delete
find "$r/usr/share/doc" -depth -type d -empty -delete

# What the maintainer scripts would have written.
mkdir -p "$r/etc/ssl/certs" "$r/var/lib/dpkg" "$r/tmp" "$r/home/bpconvert" "$r/var/tmp" "$r/proc" "$r/sys" "$r/dev"
(cd "$r/usr/share/ca-certificates" && find . -name '*.crt' | LC_ALL=C sort | while read -r c; do sed -e '$a\' "$c"; done) \
  >"$r/etc/ssl/certs/ca-certificates.crt"
ln -sf /usr/share/zoneinfo/Etc/UTC "$r/etc/localtime"
echo Etc/UTC >"$r/etc/timezone"
cp "$status" "$r/var/lib/dpkg/status"
cat >"$r/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/usr/sbin/nologin
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
bpconvert:x:10001:10001:bpconvert:/home/bpconvert:/usr/sbin/nologin
EOF
cat >"$r/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
bpconvert:x:10001:
EOF
mkdir -p "$r/root"
chmod 1777 "$r/tmp" "$r/var/tmp"
chmod 0700 "$r/root"
cat >"$r/usr/share/doc/SOURCES.txt" <<'EOF'
The Debian 12 packages in this image are listed with their source package and
version in /var/lib/dpkg/status; their copyright and licence files are in
/usr/share/doc/PACKAGE/copyright. The complete source of each is Debian's
source package of that version: `apt-get source SOURCE=VERSION` on Debian 12,
or https://snapshot.debian.org/package/SOURCE/VERSION/.
EOF
rm -rf "$dir/debs"
touch "$dir/.complete"
echo "image-base: $(du -sh "$r" | cut -f1) in $r" >&2
echo "$r"
