"""Writes the sample inputs the README's examples read, into the current
directory: shards/ (a WebDataset of PNG images, labels and JSON metadata,
written by Python's tarfile), hf/ (a Hugging Face dataset with an Image()
column, written by datasets), data.lance (a Lance table with a binary image
column, written by pylance). The LeRobot sample (lerobot-ds/) is written by
scripts/readme-data.sh with the LeRobot fixture writer.

Run with the test environment's Python (scripts/pyenv.sh), which has
datasets, pyarrow and pylance pinned.
"""

import io
import json
import os
import struct
import sys
import tarfile
import zlib


def png(w, h, seed):
    """A small RGB PNG whose pixels depend on seed."""
    raw = b"".join(
        b"\x00" + b"".join(bytes(((x * 7 + y * 13 + seed) % 256, (x * seed) % 256, (y * 3 + seed) % 256)) for x in range(w))
        for y in range(h)
    )

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def webdataset(out, shards=2, per_shard=50):
    """shards/train-NNNNNN.tar: KEY.png, KEY.cls and KEY.json per sample."""
    os.makedirs(out)
    for shard in range(shards):
        path = os.path.join(out, f"train-{shard:06d}.tar")
        with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tf:
            for i in range(per_shard):
                n = shard * per_shard + i
                key = f"{n:06d}"
                for field, data in (
                    ("png", png(32, 32, n)),
                    ("cls", str(n % 10).encode()),
                    ("json", json.dumps({"id": key, "caption": f"pattern {key}"}).encode()),
                ):
                    ti = tarfile.TarInfo(f"{key}.{field}")
                    ti.size, ti.mtime, ti.mode = len(data), 1700000000, 0o444
                    tf.addfile(ti, io.BytesIO(data))


def hf_dataset(out, rows=64):
    """hf/data/train-00000-of-00001.parquet with an Image() column."""
    import datasets

    datasets.disable_progress_bars()

    feats = datasets.Features({"image": datasets.Image(), "label": datasets.ClassLabel(names=["a", "b", "c"])})
    ds = datasets.Dataset.from_dict(
        {"image": [{"bytes": png(24, 24, i), "path": f"img-{i:04d}.png"} for i in range(rows)], "label": [i % 3 for i in range(rows)]},
        features=feats,
    )
    os.makedirs(os.path.join(out, "data"))
    ds.to_parquet(os.path.join(out, "data", "train-00000-of-00001.parquet"))


def lance_table(out, rows=64):
    """data.lance: id, caption and a plain binary image column."""
    import lance
    import pyarrow as pa

    t = pa.table(
        {
            "id": pa.array(range(rows), pa.int64()),
            "caption": [f"pattern {i}" for i in range(rows)],
            "image": pa.array([png(24, 24, i) for i in range(rows)], pa.binary()),
        }
    )
    lance.write_dataset(t, out)


def main():
    what = sys.argv[1:] or ["shards", "hf", "data.lance"]
    for w in what:
        {"shards": webdataset, "hf": hf_dataset, "data.lance": lance_table}[w](w)


if __name__ == "__main__":
    main()
