#!/usr/bin/env python3
"""Lists a tar shard with Python's tarfile, independently of the Go code.

Usage: tarlist.py SHARD [SHARD...]

Prints one JSON document: for each shard, its members in archive order, each
with name, type ("file", "dir", "link", "symlink", "other"), size, the
offset of its first header block in the uncompressed stream (tarfile's
TarInfo.offset), link target, and, for files and links, the SHA-256 of the
bytes tarfile extracts (links resolved by tarfile itself); then the samples
WebDataset would make of the regular members and links (webdataset's
base_plus_ext regex and group_by_keys, on names without leading "./").

Compression: tarfile handles gzip, bzip2 and xz; zstd (Python < 3.14) is
decompressed with the zstd command line tool into a temporary file first.
Made for: Python 3.11 tarfile, zstd 1.5.
"""
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile

KEYRE = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")
META = re.compile(r"__[^/]*__($|/)")


def kind(ti):
    if ti.isreg():
        return "file"
    if ti.isdir():
        return "dir"
    if ti.islnk():
        return "link"
    if ti.issym():
        return "symlink"
    return "other"


def strip(name):
    while name.startswith("./"):
        name = name[2:].lstrip("/")
    return name


def listing(path):
    with open(path, "rb") as f:
        magic = f.read(4)
    tmp = None
    if magic == b"\x28\xb5\x2f\xfd":
        tmp = tempfile.NamedTemporaryFile(suffix=".tar", delete=False)
        subprocess.run(["zstd", "-dc", path], stdout=tmp, check=True)
        tmp.close()
        path = tmp.name
    try:
        out = []
        with tarfile.open(path, "r:*") as tf:
            for ti in tf.getmembers():
                m = {"name": ti.name, "type": kind(ti), "size": ti.size,
                     "offset": ti.offset, "linkname": ti.linkname}
                if m["type"] in ("file", "link", "symlink"):
                    try:
                        data = tf.extractfile(ti).read()
                        m["sha256"] = hashlib.sha256(data).hexdigest()
                        m["size"] = len(data)
                    except (KeyError, AttributeError, tarfile.TarError):
                        m["sha256"] = None  # a link tarfile cannot resolve
                out.append(m)
        return out
    finally:
        if tmp is not None:
            os.unlink(tmp.name)


def samples(members):
    rows, cur = [], None
    for m in members:
        if m["type"] not in ("file", "link", "symlink") or m.get("sha256") is None:
            continue
        name = strip(m["name"])
        if META.match(name):
            continue
        mt = KEYRE.match(name)
        if not mt:
            continue
        key, field = mt.group(1), mt.group(2).lower()
        if cur is None or cur["__key__"] != key:
            cur = {"__key__": key, "fields": {}}
            rows.append(cur)
        cur["fields"][field] = name
    return rows


def main():
    doc = {}
    for p in sys.argv[1:]:
        members = listing(p)
        doc[p] = {"members": members, "samples": samples(members)}
    json.dump(doc, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
