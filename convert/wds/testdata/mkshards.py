#!/usr/bin/env python3
"""Writes the tar shards that convert/wds tests read, at test time.

Usage: mkshards.py OUTDIR

Made with Python 3's tarfile (USTAR, GNU and PAX formats, names and types
set explicitly) and GNU tar 1.34 with the gzip, bzip2, xz and zstd command
line tools. Payloads are deterministic pseudo-random bytes. Layout:

  good/ustar.tar        USTAR: directory entries, "./" prefixes, a 0-byte
                        member, a 196-character name (prefix field), a name
                        without extension, JPEG-like payloads
  good/gnu.tar          GNU: 300-character name, non-ASCII names, a 3 MiB
                        member, a hard link and a relative symbolic link
  good/pax.tar          PAX: long non-ASCII name, a 6 MiB member, a chain of
                        symbolic links and a hard link to a symbolic link
  good/links.tar        GNU: a hard link and a symbolic link between
                        regular members, one of them 200 KiB
  gnutar/plain.tar      GNU tar --format=gnu --sort=name of tree/ ("./"
                        names, directories, a hard link, a symbolic link)
  gnutar/posix.tar.gz   GNU tar --format=posix -z
  gnutar/gnu.tar.bz2    GNU tar -j;  gnutar/gnu.tar.xz  GNU tar -J
  gnutar/gnu.tar.zst    GNU tar --zstd
  gnutar/gzip-named.tar gzip stream under a .tar name
  gnutar/gzip-padded.tgz gzip stream followed by 4 KiB of zeros
  gnutar/multi.tgz      two gzip members, each half of plain.tar
  gnutar/sparse-gnu.tar, gnutar/sparse-pax.tar   GNU tar --sparse: a 4 MiB
                        member with holes (GNU and PAX 1.0 sparse formats)
  dups/shard-000.tar, dups/shard-001.tar   the same keys in two shards
  bad/*                 one problem each (see BAD below)
"""
import gzip
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile

rng = random.Random(20261129)


def payload(n, jpeg=False):
    b = rng.randbytes(n)
    if jpeg and n >= 4:
        b = b"\xff\xd8\xff\xe0" + b[4:]
    return b


def reg(name, data):
    ti = tarfile.TarInfo(name)
    ti.size = len(data)
    ti.mtime = 1700000000
    ti.mode = 0o644
    return ti, data


def special(name, typ, linkname=""):
    ti = tarfile.TarInfo(name)
    ti.type = typ
    ti.linkname = linkname
    ti.mtime = 1700000000
    ti.mode = 0o755 if typ == tarfile.DIRTYPE else 0o644
    return ti, None


def write(path, fmt, entries):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with tarfile.open(path, "w", format=fmt, encoding="utf-8") as tf:
        for ti, data in entries:
            tf.addfile(ti, io.BytesIO(data) if data is not None else None)


def good(out):
    e = [special("data/", tarfile.DIRTYPE)]
    for i in range(5):
        e.append(reg(f"data/{i:06d}.jpg", payload(rng.randint(1000, 20000), jpeg=True)))
        e.append(reg(f"data/{i:06d}.cls", f"{i % 3}\n".encode()))
        e.append(reg(f"data/{i:06d}.json", f'{{"i": {i}, "caption": "päx {i}"}}'.encode()))
    e.append(reg("./data/000005.jpg", payload(777, jpeg=True)))
    e.append(reg("./data/000005.cls", b"1\n"))
    e.append(reg("data/000006.cls", b""))
    e.append(reg("data/000006.txt", b"zero-byte cls above\n"))
    e.append(reg("deep/" + "x" * 120 + "/" + "y" * 66 + ".txt", b"long ustar name\n"))
    e.append(reg("README", b"no extension: packed, not in a sample\n"))
    write(os.path.join(out, "good/ustar.tar"), tarfile.USTAR_FORMAT, e)

    e = [
        reg("g/" + "a" * 293 + ".txt", b"gnu long name\n"),
        reg("ünï/čöđé-000001.jpg", payload(5000, jpeg=True)),
        reg("日本語/000002.txt", "テキスト\n".encode()),
        reg("big/000000.bin", payload(3 << 20)),
        reg("empty/000000.txt", b""),
        special("links/000001.jpg", tarfile.LNKTYPE, "ünï/čöđé-000001.jpg"),
        special("links/000002.txt", tarfile.SYMTYPE, "../日本語/000002.txt"),
    ]
    write(os.path.join(out, "good/gnu.tar"), tarfile.GNU_FORMAT, e)

    e = [
        reg("päx/" + "ü" * 120 + ".txt", "pax long non-ASCII name\n".encode()),
        reg("huge/000000.bin", payload(6 << 20)),
        reg("s/a.txt", b"chain target\n"),
        special("s/b.txt", tarfile.SYMTYPE, "a.txt"),
        special("s/c.txt", tarfile.SYMTYPE, "b.txt"),
        special("s/d.txt", tarfile.LNKTYPE, "s/c.txt"),
    ]
    write(os.path.join(out, "good/pax.tar"), tarfile.PAX_FORMAT, e)

    e = [
        reg("a.txt", b"first\n"),
        special("b.txt", tarfile.LNKTYPE, "a.txt"),
        reg("c.bin", payload(200 << 10)),
        special("d.bin", tarfile.SYMTYPE, "c.bin"),
        reg("e.txt", b"last\n"),
    ]
    write(os.path.join(out, "good/links.tar"), tarfile.GNU_FORMAT, e)


def gnutar(out):
    tree = os.path.join(out, "tree")
    os.makedirs(os.path.join(tree, "sub"))
    for i in range(3):
        with open(os.path.join(tree, f"{i:06d}.jpg"), "wb") as f:
            f.write(payload(rng.randint(2000, 9000), jpeg=True))
        with open(os.path.join(tree, f"{i:06d}.txt"), "wb") as f:
            f.write(f"caption {i}\n".encode())
    with open(os.path.join(tree, "sub", "000009.npy"), "wb") as f:
        f.write(b"\x93NUMPY" + payload(3000))
    os.link(os.path.join(tree, "000000.jpg"), os.path.join(tree, "sub", "hard.jpg"))
    os.symlink("../000001.txt", os.path.join(tree, "sub", "sym.txt"))
    d = os.path.join(out, "gnutar")
    os.makedirs(d)
    common = ["--sort=name", "--owner=0", "--group=0", "--mtime=@1700000000", "-C", tree]
    run = lambda *a: subprocess.run(list(a), check=True)
    run("tar", "--format=gnu", *common, "-cf", os.path.join(d, "plain.tar"), ".")
    run("tar", "--format=posix", *common, "-czf", os.path.join(d, "posix.tar.gz"), ".")
    run("tar", "--format=gnu", *common, "-cjf", os.path.join(d, "gnu.tar.bz2"), ".")
    run("tar", "--format=gnu", *common, "-cJf", os.path.join(d, "gnu.tar.xz"), ".")
    run("tar", "--format=gnu", *common, "--zstd", "-cf", os.path.join(d, "gnu.tar.zst"), ".")
    with open(os.path.join(d, "plain.tar"), "rb") as f:
        plain = f.read()
    with open(os.path.join(d, "gzip-named.tar"), "wb") as f:
        f.write(gzip.compress(plain, mtime=0))
    with open(os.path.join(d, "gzip-padded.tgz"), "wb") as f:
        f.write(gzip.compress(plain, mtime=0) + bytes(4096))
    half = len(plain) // 2
    with open(os.path.join(d, "multi.tgz"), "wb") as f:
        f.write(gzip.compress(plain[:half], mtime=0) + gzip.compress(plain[half:], mtime=0))
    shutil.rmtree(tree)

    # Sparse members: a 4 MiB file with two data extents, then a plain one.
    sp = os.path.join(out, "sparse")
    os.makedirs(sp)
    with open(os.path.join(sp, "000000.bin"), "wb") as f:
        f.write(payload(5000))
        f.seek(2 << 20)
        f.write(payload(7000))
        f.truncate(4 << 20)
    with open(os.path.join(sp, "000001.txt"), "wb") as f:
        f.write(b"after the sparse member\n")
    common = ["--sort=name", "--owner=0", "--group=0", "--mtime=@1700000000", "--sparse", "-C", sp]
    run("tar", "--format=gnu", *common, "-cf", os.path.join(d, "sparse-gnu.tar"), "000000.bin", "000001.txt")
    run("tar", "--format=posix", *common, "-cf", os.path.join(d, "sparse-pax.tar"), "000000.bin", "000001.txt")
    shutil.rmtree(sp)


def dups(out):
    for s in range(2):
        e = []
        for i in range(3):
            e.append(reg(f"{i:06d}.jpg", payload(600 + 100 * s, jpeg=True)))
            e.append(reg(f"{i:06d}.cls", f"{s}\n".encode()))
        write(os.path.join(out, f"dups/shard-{s:03d}.tar"), tarfile.USTAR_FORMAT, e)


# BAD lists the shards with one problem each: file name -> entries (or a
# function writing the file).
def bad(out):
    d = os.path.join(out, "bad")
    os.makedirs(d)
    simple = {
        "dup-within.tar": [reg("a.jpg", b"1"), reg("a.cls", b"2"), reg("a.jpg", b"3")],
        "dotdot.tar": [reg("ok.txt", b"1"), reg("../evil.txt", b"2")],
        "absolute.tar": [reg("/abs/evil.txt", b"2")],
        "symlink-out.tar": [reg("a.txt", b"1"), special("b.txt", tarfile.SYMTYPE, "../../etc/passwd")],
        "symlink-abs.tar": [reg("a.txt", b"1"), special("b.txt", tarfile.SYMTYPE, "/etc/passwd")],
        "symlink-forward.tar": [special("b.txt", tarfile.SYMTYPE, "a.txt"), reg("a.txt", b"1")],
        "hardlink-missing.tar": [reg("a.txt", b"1"), special("b.txt", tarfile.LNKTYPE, "nope.txt")],
        "fifo.tar": [reg("a.txt", b"1"), special("pipe.txt", tarfile.FIFOTYPE)],
        "chardev.tar": [special("null.dev", tarfile.CHRTYPE)],
        "split-sample.tar": [reg("a.jpg", b"1"), reg("b.jpg", b"2"), reg("a.cls", b"3")],
        "dup-field.tar": [reg("a.jpg", b"1"), reg("a.JPG", b"2")],
        "backslash.tar": [reg("a\\b.txt", b"1")],
    }
    for name, e in simple.items():
        write(os.path.join(d, name), tarfile.GNU_FORMAT, e)

    # A shard cut in the middle of a 100 KiB member's payload.
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
        for ti, data in [reg("000000.txt", b"first\n"), reg("000001.bin", payload(100 << 10))]:
            tf.addfile(ti, io.BytesIO(data))
    whole = buf.getvalue()
    with open(os.path.join(d, "truncated.tar"), "wb") as f:
        f.write(whole[: 1024 + 512 + 50000])
    # The same shard without its end-of-archive blocks: cut right after the
    # last member's padded payload.
    end = 1024 + 512 + (100 << 10)
    with open(os.path.join(d, "no-end.tar"), "wb") as f:
        f.write(whole[:end])
    # A gzip stream with damaged deflate data.
    gz = bytearray(gzip.compress(whole, mtime=0))
    for i in range(200, 260):
        gz[i] ^= 0x5A
    with open(os.path.join(d, "corrupt.tar.gz"), "wb") as f:
        f.write(gz)
    # A gzip stream cut short.
    with open(os.path.join(d, "cut.tar.gz"), "wb") as f:
        f.write(gzip.compress(whole, mtime=0)[:3000])
    with open(os.path.join(d, "not-a-tar.tar"), "wb") as f:
        f.write(payload(4096))
    open(os.path.join(d, "empty.tar"), "wb").close()


def main():
    out = sys.argv[1]
    good(out)
    gnutar(out)
    dups(out)
    bad(out)


if __name__ == "__main__":
    main()
