"""Query a converted table with DuckDB and resolve each reference with one read.

DuckDB reads the table's reference strings like any column; a small resolver turns
"zip://KEY::media/pack-0000.zip" into bytes with Python's zipfile, which lists each
shard's central directory once, then one positioned read per reference (the local
header and the payload in one os.pread):

    import duckdb
    refs = duckdb.sql("SELECT img FROM 'out/part-00000.parquet' WHERE label = 3").fetchall()
    r = Resolver("out")
    payloads = [r.read(ref) for (ref,) in refs]

Run as a program:  python duckdb_refs.py DST TABLE COLUMN [--check SRC_TABLE] [--n 1000]
It selects N random rows of COLUMN with DuckDB, resolves them and prints the time;
with --check it asserts that every payload equals the same row of the source table
(read by DuckDB too).
"""

import argparse
import os
import random
import struct
import time
import zipfile

import duckdb

PREFIX = "zip://"
LOCAL = struct.Struct("<4s5H3L2H")  # local file header, 30 bytes


class Resolver:
    """Reads references relative to a dataset root: one pread per payload."""

    def __init__(self, root):
        self.root = root
        self.shards = {}  # shard path -> (fd, {key: (header offset, name length, size)})

    def _shard(self, path):
        s = self.shards.get(path)
        if s is None:
            full = os.path.join(self.root, path)
            with zipfile.ZipFile(full) as z:
                index = {}
                for i in z.infolist():
                    if i.compress_type != zipfile.ZIP_STORED:
                        raise ValueError("%s: %s is not STORED" % (path, i.filename))
                    index[i.filename] = (i.header_offset, len(i.orig_filename.encode("utf-8")), i.file_size)
            s = self.shards[path] = (os.open(full, os.O_RDONLY), index)
        return s

    def read(self, ref):
        if isinstance(ref, dict):  # a Hugging Face Image/Audio/Video struct: the reference is its path
            ref = ref.get("path")
        if not isinstance(ref, str) or not ref.startswith(PREFIX) or "::" not in ref:
            raise ValueError("not a blob reference: %r" % ref)
        key, path = ref[len(PREFIX):].split("::", 1)
        fd, index = self._shard(path)
        off, name_len, size = index[key]
        slack = 64  # room for a local extra field (writers rarely put one there)
        buf = os.pread(fd, LOCAL.size + name_len + slack + size, off)
        sig, _, _, _, _, _, _, _, _, n, e = LOCAL.unpack_from(buf)
        if sig != b"PK\x03\x04":
            raise ValueError("%s: no local header for %s" % (path, key))
        start = LOCAL.size + n + e
        if start + size > len(buf):  # a larger extra field: read again
            buf = os.pread(fd, start + size, off)
        return buf[start:start + size]

    def close(self):
        for fd, _ in self.shards.values():
            os.close(fd)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dst")
    ap.add_argument("table")
    ap.add_argument("column")
    ap.add_argument("--check")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=25)
    a = ap.parse_args()
    con = duckdb.connect()
    table = os.path.join(a.dst, a.table)
    total = con.execute("SELECT count(*) FROM read_parquet(?)", [table]).fetchone()[0]
    rows = random.Random(a.seed).choices(range(total), k=a.n)
    q = "SELECT file_row_number, %s FROM read_parquet(?, file_row_number = true) WHERE file_row_number IN (SELECT unnest(?::BIGINT[]))" % a.column
    picked = dict(con.execute(q, [table, sorted(set(rows))]).fetchall())
    refs = [picked[row] for row in rows]
    start = time.perf_counter()
    r = Resolver(a.dst)
    payloads = [None if ref is None or (isinstance(ref, dict) and ref.get("path") is None) else r.read(ref) for ref in refs]
    r.close()
    took = time.perf_counter() - start
    if a.check:
        want = dict(con.execute(q, [a.check, sorted(set(rows))]).fetchall())
        def source_bytes(v):  # a source cell: bytes, or a Hugging Face struct holding them
            v = v.get("bytes") if isinstance(v, dict) else v
            return None if v is None else bytes(v)

        bad = [row for row, got in zip(rows, payloads) if got != source_bytes(want[row])]
        assert not bad, "rows %s differ from the source" % bad[:5]
    print("DuckDB + zipfile resolver: %d random references resolved in %.1f ms (%.1f ms per 1,000)%s"
          % (a.n, took * 1e3, took * 1e6 / a.n, ", every payload equal to the source" if a.check else ""))


if __name__ == "__main__":
    main()
