#!/usr/bin/env bash
# Makes a release of bpconvert into DIST_DIR (default dist/), from the
# checked-out commit:
#   bpconvert-VERSION-OS-ARCH.tar.gz (.zip for windows)  the pure-Go CLI,
#       with its shell completions and manual pages
#   bpconvert-lerobot-VERSION-linux-amd64.tar.gz  bpconvert-lerobot with the
#       FFmpeg shared libraries it loads (unpacks over the linux-amd64 archive)
#   bpconvert-PEP440VERSION-py3-none-TAG.whl      one wheel per OS/arch
#   bpconvert-VERSION-linux-amd64.image.tar       the container image (an OCI
#       image layout that `docker load` also reads): both programs in
#       /usr/local, on Debian 12's C library
#   ffmpeg-5.1.9.tar.xz                           the source of the FFmpeg
#       libraries in the lerobot archive, the wheel and the image
#   *.cdx.json                                    a CycloneDX SBOM per archive
#   SHA256SUMS
# Every file depends only on the commit and the toolchain (Go, Debian 12's
# compiler and the packages of the image's base, both cached under
# ~/.cache/bpconvert): timestamps come from SOURCE_DATE_EPOCH (default: the
# commit time), archive entries are sorted and owned by 0.
#
# DIST_PLATFORMS (default: the six platforms `make lint` builds) limits the
# platforms; DIST_LEROBOT=0 leaves out bpconvert-lerobot and the image,
# DIST_IMAGE=0 the image.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
GO=${GO:-go}
out=${DIST_DIR:-dist}
platforms=${DIST_PLATFORMS:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64}
lerobot=${DIST_LEROBOT:-1}
image=${DIST_IMAGE:-$lerobot}
py=/usr/bin/python3
pack="$py $root/scripts/dist/pack.py"
cdx=$root/bin/cyclonedx-gomod

# The version: git describe of a tagged checkout; an untagged one is
# described as if v0.0.0 were its first commit (v0.0.0-N-gHASH).
if ! version=$(git describe --tags --dirty 2>/dev/null); then
  version="v0.0.0-$(git rev-list --count HEAD)-g$(git rev-parse --short HEAD)"
  git diff --quiet HEAD || version+=-dirty
fi
pyversion=$($pack pep440 "$version")
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct)}
# No VCS stamp: the version string names the revision, and the files do not
# depend on untracked files in the checkout.
export GOFLAGS="-trimpath -buildvcs=false"
ldflags="-s -w -X main.version=$version"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)

# wheel_tag OS ARCH: the wheel platform tag. Go's linux programs without cgo
# need no C library (any manylinux or musllinux system); with
# bpconvert-lerobot the linux x86-64 wheel needs Debian 12's glibc 2.36.
wheel_tag() {
  case $1/$2 in
    linux/amd64) if [ "$lerobot" = 1 ]; then echo manylinux_2_36_x86_64
                 else echo manylinux_2_17_x86_64.musllinux_1_1_x86_64; fi ;;
    linux/arm64) echo manylinux_2_17_aarch64.musllinux_1_1_aarch64 ;;
    darwin/amd64) echo macosx_12_0_x86_64 ;;
    darwin/arm64) echo macosx_12_0_arm64 ;;
    windows/amd64) echo win_amd64 ;;
    windows/arm64) echo win_arm64 ;;
    *) echo "dist: no wheel tag for $1/$2" >&2; return 1 ;;
  esac
}

# go_licenses OS ARCH TAGS DEST: the licence files of every module linked
# into ./cmd/bpconvert for that platform and build tags, from the module
# cache, plus Go's own (its standard library and runtime are linked in).
go_licenses() {
  local dest=$4 n=0 mod dir f
  mkdir -p "$dest/go"
  cp "$($GO env GOROOT)/LICENSE" "$($GO env GOROOT)/PATENTS" "$dest/go/"
  while read -r mod dir; do
    mkdir -p "$dest/$mod"
    for f in "$dir"/LICENSE* "$dir"/LICENCE* "$dir"/COPYING* "$dir"/NOTICE* "$dir"/PATENTS*; do
      [ -f "$f" ] && cp "$f" "$dest/$mod/" && n=$((n + 1))
    done
    # A module without a licence file states its licence in its README
    # (github.com/mattn/go-localereader v0.0.1: MIT): ship that.
    if [ -z "$(ls -A "$dest/$mod")" ]; then
      for f in "$dir"/README*; do [ -f "$f" ] && cp "$f" "$dest/$mod/"; done
      if [ -z "$(ls -A "$dest/$mod")" ]; then
        echo "dist: module $mod ($dir) has no licence file and no README" >&2
        return 1
      fi
      echo "dist: module $mod has no licence file; its README is shipped instead" >&2
    fi
  done < <(GOOS=$1 GOARCH=$2 CGO_ENABLED=$([ -n "$3" ] && echo 1 || echo 0) \
             $GO list -deps -tags "$3" -f '{{with .Module}}{{if not .Main}}{{.Path}} {{.Dir}}{{end}}{{end}}' ./cmd/bpconvert | sort -u)
  chmod -R u+w "$dest"
}

# sbom PROGRAM OUT [FFMPEG]: the CycloneDX SBOM of a built program (its
# modules and their versions as Go recorded them in it, the standard library
# included), made reproducible: no serial number, the timestamp
# SOURCE_DATE_EPOCH's. With FFMPEG (the build ffmpeg.sh printed), FFmpeg is
# added as a component, with its licence and its source tarball's hash.
sbom() {
  "$cdx" bin -json -noserial -std -version "$version" -output "$work/sbom.json" "$1" 2>"$work/sbom.log" \
    || { cat "$work/sbom.log" >&2; return 1; }
  $py - "$work/sbom.json" "$2" "${3:-}" <<'PY'
import glob, hashlib, json, os, re, sys, time
doc = json.load(open(sys.argv[1]))
doc.setdefault("metadata", {})["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(os.environ["SOURCE_DATE_EPOCH"])))
if sys.argv[3]:
    src = glob.glob(os.path.join(sys.argv[3], "src", "ffmpeg-*.tar.xz"))[0]
    ver = re.fullmatch(r"ffmpeg-(.+)\.tar\.xz", os.path.basename(src)).group(1)
    digest = hashlib.sha256(open(src, "rb").read()).hexdigest()
    doc.setdefault("components", []).append({
        "type": "library", "bom-ref": "pkg:generic/ffmpeg@" + ver, "name": "ffmpeg", "version": ver,
        "description": "libavcodec, libavformat, libavutil, libavdevice, libavfilter, libswscale (shared, LGPL build)",
        "licenses": [{"license": {"id": "LGPL-2.1-or-later"}}],
        "purl": "pkg:generic/ffmpeg@%s?download_url=https://ffmpeg.org/releases/ffmpeg-%s.tar.xz" % (ver, ver),
        "hashes": [{"alg": "SHA-256", "content": digest}],
    })
json.dump(doc, open(sys.argv[2], "w"), indent=2, sort_keys=True)
PY
}

doc_files() { # DEST: the README beside the licences
  mkdir -p "$1"
  cp README.md "$1/"
}

# extras SHARE: the shell completions and manual pages, made by a build of
# the CLI for this machine, into SHARE (share/ of an archive or of the
# image's /usr/local), where shells and man look for them under a prefix.
host=$work/host/bpconvert
$GO build -ldflags "$ldflags" -o "$host" ./cmd/bpconvert
extras() {
  local share=$1
  mkdir -p "$share/bash-completion/completions" "$share/zsh/site-functions" \
    "$share/fish/vendor_completions.d" "$share/man/man1"
  "$host" completion bash >"$share/bash-completion/completions/bpconvert"
  "$host" completion zsh >"$share/zsh/site-functions/_bpconvert"
  "$host" completion fish >"$share/fish/vendor_completions.d/bpconvert.fish"
  "$host" man "$share/man/man1" >/dev/null
  [ -n "$(ls -A "$share/man/man1")" ] || { echo "dist: bpconvert man wrote no page" >&2; return 1; }
}

for p in $platforms; do
  os=${p%/*} arch=${p#*/}
  exe=bpconvert; [ "$os" = windows ] && exe=bpconvert.exe
  name=bpconvert-$version-$os-$arch
  tree=$work/archive/$name
  echo "dist: $name" >&2
  mkdir -p "$tree/bin"
  GOOS=$os GOARCH=$arch CGO_ENABLED=0 $GO build -ldflags "$ldflags" -o "$tree/bin/$exe" ./cmd/bpconvert
  doc_files "$tree/share/doc/bpconvert"
  extras "$tree/share"
  go_licenses "$os" "$arch" "" "$tree/share/doc/bpconvert/licenses"
  ext=tar.gz; [ "$os" = windows ] && ext=zip
  $pack archive "$out/$name.$ext" "$tree"
  sbom "$tree/bin/$exe" "$out/$name.cdx.json"

  # The wheel: the same program as a script, the same licences.
  wtree=$work/wheel/$os-$arch
  mkdir -p "$wtree/scripts"
  cp "$tree/bin/$exe" "$wtree/scripts/"
  cp -r "$tree/share/doc/bpconvert/licenses" "$wtree/licenses"
  if [ "$p" = linux/amd64 ] && [ "$lerobot" = 1 ]; then
    lname=bpconvert-lerobot-$version-$os-$arch
    ltree=$work/lerobot/$name   # same top directory: unpacks over the CLI's
    mkdir -p "$ltree/bin"
    echo "dist: $lname" >&2
    # Linked with the LGPL FFmpeg build (made once, cached), found
    # through pkg-config as go-astiav asks for it.
    ffmpeg=$(bash scripts/dist/ffmpeg.sh)
    PKG_CONFIG_PATH=$ffmpeg/lib/pkgconfig CGO_ENABLED=1 \
      $GO build -ldflags "$ldflags" -tags lerobot -o "$ltree/bin/bpconvert-lerobot" ./cmd/bpconvert
    # Before bundle-libs.sh sets its library path: Go's build information
    # is read from the program as the linker wrote it.
    sbom "$ltree/bin/bpconvert-lerobot" "$out/$lname.cdx.json" "$ffmpeg"
    bash scripts/dist/bundle-libs.sh "$ltree/bin/bpconvert-lerobot" "$ffmpeg" "$ltree/lib/bpconvert" "$ltree/share/doc/bpconvert-lerobot/licenses/ffmpeg"
    cp "$ffmpeg"/src/ffmpeg-*.tar.xz "$out/"
    go_licenses "$os" "$arch" lerobot "$ltree/share/doc/bpconvert-lerobot/licenses"
    $pack archive "$out/$lname.tar.gz" "$ltree"
    cp "$ltree/bin/bpconvert-lerobot" "$wtree/scripts/"
    mkdir -p "$wtree/data/lib"
    cp -r "$ltree/lib/bpconvert" "$wtree/data/lib/"
    cp -r "$ltree/share/doc/bpconvert-lerobot/licenses/." "$wtree/licenses/"
  fi
  $pack wheel "$out" "$pyversion" "$(wheel_tag "$os" "$arch")" "$wtree" >/dev/null

  # The image: both linux/amd64 archives in /usr/local over the base.
  if [ "$p" = linux/amd64 ] && [ "$image" = 1 ]; then
    echo "dist: $name.image.tar" >&2
    base=$(bash scripts/dist/image-base.sh)
    app=$work/image/usr-local
    mkdir -p "$app"
    cp -a "$tree/." "$ltree/." "$app/"
    $pack image "$out/$name.image.tar" "$version" "$base" "$app" >/dev/null
  fi
done

(cd "$out" && sha256sum -- * >SHA256SUMS.tmp && grep -v ' SHA256SUMS.tmp$' SHA256SUMS.tmp >SHA256SUMS && rm SHA256SUMS.tmp)
echo "dist: $version ($pyversion) in $out:" >&2
(cd "$out" && ls -l) >&2
