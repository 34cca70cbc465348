#!/usr/bin/env python3
"""Writes bpconvert's release files reproducibly (Python standard library only).

    pack.py archive OUT.tar.gz|OUT.zip TREE
        An archive of the directory TREE, whose entries are TREE's own name and
        everything under it: entries sorted by path, every mtime set to
        SOURCE_DATE_EPOCH, owner and group 0 with no names, modes 0755 for
        directories and executables and 0644 for the rest, gzip header without
        a file name or time.

    pack.py wheel OUTDIR VERSION TAG TREE
        A platform wheel (https://packaging.python.org/specifications/binary-distribution-format/)
        named bpconvert-VERSION-py3-none-TAG.whl. TREE holds the wheel's
        .data directory contents: scripts/ (installed to the environment's bin
        directory), data/ (installed under its prefix) and licenses/ (put in
        .dist-info/licenses). No Python code: the programs are the scripts.
        Entries sorted, mtimes from SOURCE_DATE_EPOCH, RECORD last.

    pack.py image OUT.tar VERSION BASE APP
        A container image of two layers, BASE (a root filesystem directory)
        and APP (a directory whose contents go to /usr/local), as one tar
        that is both an OCI image layout (oci-layout, index.json, blobs/) and
        an archive `docker load` reads (manifest.json). Layers are gzipped
        tars with entries sorted, mtimes SOURCE_DATE_EPOCH, modes as on disk
        and owners as on disk in BASE, modes as in the archives and owner 0 in
        APP, home/bpconvert owned by 10001:10001, hard links kept as links. The configuration: entrypoint /usr/local/bin/bpconvert, user
        10001:10001 (bpconvert), working directory /home/bpconvert.

    pack.py pep440 GIT_DESCRIBE
        Prints the PEP 440 version of a git describe string: v1.2.0 -> 1.2.0,
        v1.2.0-3-gabc1234 -> 1.2.1.dev3+gabc1234, v0.0.0-N-gHASH (an untagged
        checkout) -> 0.0.0.devN+gHASH; -dirty adds .dirty to the local part.
"""

import base64
import gzip
import hashlib
import io
import json
import os
import re
import stat
import sys
import tarfile
import time
import zipfile

ZIP_EPOCH_MIN = 315532800  # 1980-01-01, the earliest time a zip entry holds


def epoch():
    v = os.environ.get("SOURCE_DATE_EPOCH")
    if not v:
        sys.exit("pack.py: SOURCE_DATE_EPOCH is not set")
    return int(v)


def walk(tree):
    """Yields (relative path, full path) of every entry under tree, sorted."""
    out = []
    for dirpath, dirnames, filenames in os.walk(tree):
        for name in dirnames + filenames:
            full = os.path.join(dirpath, name)
            out.append((os.path.relpath(full, tree).replace(os.sep, "/"), full))
    return sorted(out)


def mode_of(full):
    st = os.lstat(full)
    if stat.S_ISLNK(st.st_mode):
        sys.exit(f"pack.py: {full}: symbolic links are not packed")
    if stat.S_ISDIR(st.st_mode) or st.st_mode & 0o111:
        return st, 0o755
    return st, 0o644


def zip_time(t):
    return time.gmtime(max(t, ZIP_EPOCH_MIN))[:6]


def write_tar(out, tree, mtime):
    base = os.path.basename(os.path.normpath(tree))
    with open(out, "wb") as raw, \
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=mtime, compresslevel=6) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.GNU_FORMAT) as tf:
        for rel, full in [("", tree)] + walk(tree):
            st, mode = mode_of(full)
            ti = tarfile.TarInfo(base + ("/" + rel if rel else ""))
            ti.mtime, ti.mode, ti.uid, ti.gid, ti.uname, ti.gname = mtime, mode, 0, 0, "", ""
            if stat.S_ISDIR(st.st_mode):
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            else:
                ti.size = st.st_size
                with open(full, "rb") as f:
                    tf.addfile(ti, f)


def zip_entry(name, mode, mtime, is_dir=False):
    zi = zipfile.ZipInfo(name + ("/" if is_dir else ""), date_time=zip_time(mtime))
    zi.create_system = 3  # unix, so external_attr carries the mode
    zi.external_attr = ((stat.S_IFDIR if is_dir else stat.S_IFREG) | mode) << 16
    zi.compress_type = zipfile.ZIP_STORED if is_dir else zipfile.ZIP_DEFLATED
    return zi


def write_zip(out, tree, mtime):
    base = os.path.basename(os.path.normpath(tree))
    with zipfile.ZipFile(out, "w") as zf:
        for rel, full in [("", tree)] + walk(tree):
            st, mode = mode_of(full)
            name = base + ("/" + rel if rel else "")
            if stat.S_ISDIR(st.st_mode):
                zf.writestr(zip_entry(name, mode, mtime, True), b"")
            else:
                with open(full, "rb") as f:
                    zf.writestr(zip_entry(name, mode, mtime), f.read(), compresslevel=6)


def record_hash(data):
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


METADATA = """Metadata-Version: 2.4
Name: bpconvert
Version: {version}
Summary: Converts ML datasets (WebDataset, Parquet and Hugging Face, LeRobot, Lance) into blob packs of stored zip shards
Home-page: https://github.com/bpconvert/bpconvert
Requires-Python: >=3.8
{license_files}Description-Content-Type: text/markdown

# bpconvert

This wheel installs the `bpconvert` program (a single native executable, no
Python code) into the environment's `bin` directory.{lerobot}

Run `bpconvert --help` for its commands.
"""

LEROBOT_NOTE = """ It also installs
`bpconvert-lerobot`, which `bpconvert convert-lerobot` runs to cut LeRobot
videos, with the FFmpeg shared libraries it needs under the environment's
`lib/bpconvert` directory (their licences and the source offer are in this
wheel's licenses)."""


def write_wheel(outdir, version, tag, tree):
    mtime = epoch()
    stem = f"bpconvert-{version}"
    files = []  # (archive name, bytes, mode)
    has_lerobot = False
    licenses = []
    for rel, full in walk(tree):
        st, mode = mode_of(full)
        if stat.S_ISDIR(st.st_mode):
            continue
        with open(full, "rb") as f:
            data = f.read()
        top, _, rest = rel.partition("/")
        if top in ("scripts", "data"):
            name = f"{stem}.data/{rel}"
            has_lerobot = has_lerobot or rel == "scripts/bpconvert-lerobot"
        elif top == "licenses":
            name = f"{stem}.dist-info/licenses/{rest}"
            licenses.append(rest)
        else:
            sys.exit(f"pack.py: {full}: not under scripts/, data/ or licenses/")
        files.append((name, data, mode))
    files.sort()
    meta = METADATA.format(version=version,
                           license_files="".join(f"License-File: {p}\n" for p in sorted(licenses)),
                           lerobot=LEROBOT_NOTE if has_lerobot else "")
    wheel = ("Wheel-Version: 1.0\nGenerator: bpconvert scripts/dist/pack.py\n"
             f"Root-Is-Purelib: false\nTag: py3-none-{tag}\n")
    for name, text in (("METADATA", meta), ("WHEEL", wheel)):
        files.append((f"{stem}.dist-info/{name}", text.encode(), 0o644))
    record_name = f"{stem}.dist-info/RECORD"
    record = "".join(f"{n},{record_hash(d)},{len(d)}\n" for n, d, _ in files) + f"{record_name},,\n"
    files.append((record_name, record.encode(), 0o644))
    out = os.path.join(outdir, f"{stem}-py3-none-{tag}.whl")
    with zipfile.ZipFile(out, "w") as zf:
        for name, data, mode in files:
            zf.writestr(zip_entry(name, mode, mtime), data, compresslevel=6)
    print(out)


IMAGE_USER = (10001, 10001)
IMAGE_OWNED = {"home/bpconvert"}  # paths in BASE the image user owns


def layer_tar(tree, prefix, mtime, normalize):
    """Returns the bytes of an uncompressed layer tar of tree, its entries
    named prefix + path (the directories of prefix included). With
    normalize, modes are those of the archives (0755 or 0644) rather than
    the ones on disk."""
    buf = io.BytesIO()
    seen = {}  # (dev, ino) -> first name, for hard links
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        parts = [p for p in prefix.strip("/").split("/") if p]
        for i in range(len(parts)):
            ti = tarfile.TarInfo("/".join(parts[:i + 1]) + "/")
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, mtime
            tf.addfile(ti)
        for rel, full in walk(tree):
            name = "/".join(parts + [rel])
            st = os.lstat(full)
            ti = tarfile.TarInfo(name)
            mode = stat.S_IMODE(st.st_mode)
            if normalize and not stat.S_ISLNK(st.st_mode):
                mode = mode_of(full)[1]
            ti.mtime, ti.mode, ti.uname, ti.gname = mtime, mode, "", ""
            if name in IMAGE_OWNED:
                ti.uid, ti.gid = IMAGE_USER
            elif not normalize:  # as the packages have them (/var/local: root:staff)
                ti.uid, ti.gid = st.st_uid, st.st_gid
            if stat.S_ISDIR(st.st_mode):
                ti.type = tarfile.DIRTYPE
                tf.addfile(ti)
            elif stat.S_ISLNK(st.st_mode):
                ti.type, ti.linkname = tarfile.SYMTYPE, os.readlink(full)
                tf.addfile(ti)
            elif stat.S_ISREG(st.st_mode):
                if st.st_nlink > 1 and (st.st_dev, st.st_ino) in seen:
                    ti.type, ti.linkname = tarfile.LNKTYPE, seen[(st.st_dev, st.st_ino)]
                    tf.addfile(ti)
                    continue
                seen[(st.st_dev, st.st_ino)] = name
                ti.size = st.st_size
                with open(full, "rb") as f:
                    tf.addfile(ti, f)
            else:
                sys.exit(f"pack.py: {full}: not a file, directory or symbolic link")
    return buf.getvalue()


def sha256(data):
    return "sha256:" + hashlib.sha256(data).hexdigest()


def write_image(out, version, base, app):
    mtime = epoch()
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime))
    blobs = []  # (digest, bytes)
    layers, diff_ids = [], []
    for tree, prefix, normalize in ((base, "", False), (app, "usr/local", True)):
        raw = layer_tar(tree, prefix, mtime, normalize)
        gz = io.BytesIO()
        with gzip.GzipFile(filename="", mode="wb", fileobj=gz, mtime=mtime, compresslevel=6) as g:
            g.write(raw)
        data = gz.getvalue()
        diff_ids.append(sha256(raw))
        layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                       "digest": sha256(data), "size": len(data)})
        blobs.append((sha256(data), data))
    config = {
        "created": created,
        "architecture": "amd64",
        "os": "linux",
        "config": {
            "User": "%d:%d" % IMAGE_USER,
            "Entrypoint": ["/usr/local/bin/bpconvert"],
            "Cmd": ["--help"],
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/home/bpconvert"],
            "WorkingDir": "/home/bpconvert",
            "Labels": {
                "org.opencontainers.image.title": "bpconvert",
                "org.opencontainers.image.version": version,
                "org.opencontainers.image.source": "https://github.com/bpconvert/bpconvert",
            },
        },
        "rootfs": {"type": "layers", "diff_ids": diff_ids},
        "history": [
            {"created": created, "created_by": "scripts/dist/image-base.sh: Debian 12 run-time packages"},
            {"created": created, "created_by": "scripts/dist/dist.sh: bpconvert and bpconvert-lerobot in /usr/local"},
        ],
    }
    cdata = json.dumps(config, sort_keys=True, separators=(",", ":")).encode()
    blobs.append((sha256(cdata), cdata))
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                   "digest": sha256(cdata), "size": len(cdata)},
        "layers": layers,
    }
    mdata = json.dumps(manifest, sort_keys=True, separators=(",", ":")).encode()
    blobs.append((sha256(mdata), mdata))
    tag = version.replace("+", "_")
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "digest": sha256(mdata), "size": len(mdata),
            "annotations": {"org.opencontainers.image.ref.name": tag,
                            "io.containerd.image.name": "bpconvert:" + tag},
        }],
    }
    docker = [{"Config": "blobs/sha256/" + sha256(cdata)[7:],
               "RepoTags": ["bpconvert:" + tag],
               "Layers": ["blobs/sha256/" + d[7:] for d in (l["digest"] for l in layers)]}]
    files = [("oci-layout", b'{"imageLayoutVersion":"1.0.0"}'),
             ("index.json", json.dumps(index, sort_keys=True, separators=(",", ":")).encode()),
             ("manifest.json", json.dumps(docker, sort_keys=True, separators=(",", ":")).encode())]
    files += sorted(("blobs/sha256/" + d[7:], b) for d, b in dict(blobs).items())
    with open(out, "wb") as raw, tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tf:
        for dname in ("blobs/", "blobs/sha256/"):
            ti = tarfile.TarInfo(dname)
            ti.type, ti.mode, ti.mtime = tarfile.DIRTYPE, 0o755, mtime
            tf.addfile(ti)
        for name, data in files:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mode, ti.mtime = len(data), 0o644, mtime
            tf.addfile(ti, io.BytesIO(data))
    print(tag)


def pep440(describe):
    m = re.fullmatch(r"v?(\d+)\.(\d+)\.(\d+)(?:-(\d+)-g([0-9a-f]+))?(-dirty)?", describe)
    if not m:
        sys.exit(f"pack.py: git describe {describe!r} is not vMAJOR.MINOR.PATCH[-N-gHASH][-dirty]")
    major, minor, patch, n, rev, dirty = m.groups()
    local = []
    if n and int(n) > 0:
        if (major, minor, patch) != ("0", "0", "0"):
            patch = str(int(patch) + 1)
        v = f"{major}.{minor}.{patch}.dev{n}"
        local.append("g" + rev)
    else:
        v = f"{major}.{minor}.{patch}"
    if dirty:
        local.append("dirty")
    return v + ("+" + ".".join(local) if local else "")


def main(argv):
    if len(argv) == 4 and argv[1] == "archive":
        out, tree = argv[2], argv[3]
        if out.endswith(".tar.gz"):
            write_tar(out, tree, epoch())
        elif out.endswith(".zip"):
            write_zip(out, tree, epoch())
        else:
            sys.exit(f"pack.py: {out}: name must end in .tar.gz or .zip")
    elif len(argv) == 6 and argv[1] == "wheel":
        write_wheel(*argv[2:])
    elif len(argv) == 6 and argv[1] == "image":
        write_image(*argv[2:])
    elif len(argv) == 3 and argv[1] == "pep440":
        print(pep440(argv[2]))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
