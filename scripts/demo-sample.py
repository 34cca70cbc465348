#!/usr/bin/env python3
"""demo-sample.py OUTDIR: writes the demo's WebDataset sample with Python's
tarfile: two shards of 50 samples, each a 32x32 PNG, a class label and JSON
metadata (fixed mtimes, so the bytes are the same on every run)."""
import io, json, os, struct, sys, tarfile, zlib

def png(w, h, seed):
    raw = b"".join(b"\x00" + b"".join(bytes(((x * 7 + y * 13 + seed) % 256, (x * seed) % 256, (y * 3 + seed) % 256))
                                      for x in range(w)) for y in range(h))
    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))

out = sys.argv[1]
os.makedirs(out)
for shard in range(2):
    with tarfile.open(os.path.join(out, f"train-{shard:06d}.tar"), "w", format=tarfile.USTAR_FORMAT) as tf:
        for i in range(50):
            key = f"{shard * 50 + i:06d}"
            for field, data in (("png", png(32, 32, shard * 50 + i)),
                                ("cls", str((shard * 50 + i) % 10).encode()),
                                ("json", json.dumps({"id": key, "caption": f"pattern {key}"}).encode())):
                ti = tarfile.TarInfo(f"{key}.{field}")
                ti.size, ti.mtime, ti.mode = len(data), 1700000000, 0o444
                tf.addfile(ti, io.BytesIO(data))
