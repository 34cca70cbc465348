"""Read a convert-lance output with pylance and resolve its references.

The converted table is a Lance dataset whose payload columns hold strings such as
"zip://img/000000000042.bin::media/pack-0000.zip"; blobpack's PackSet (or any zip
reader) turns each into the payload with one positioned read:

    import lance, blobpack
    ds = lance.dataset("out/table.lance")
    packs = blobpack.PackSet("out/media")
    refs = ds.take([3, 14, 15], columns=["img"]).column("img").to_pylist()
    payloads = [packs.read(r) for r in refs]

Run as a program:  python pylance_refs.py DST COLUMN [--check SRC.lance] [--n 1000]
It takes N random rows of COLUMN, resolves them and prints the time; with --check it
asserts that every payload equals the value of the same row of the source dataset.
"""

import argparse
import os
import random
import time

import blobpack
import lance


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dst")
    ap.add_argument("column")
    ap.add_argument("--check", help="the source Lance dataset")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=25)
    a = ap.parse_args()
    ds = lance.dataset(os.path.join(a.dst, "table.lance"))
    rows = random.Random(a.seed).choices(range(ds.count_rows()), k=a.n)
    refs = ds.take(rows, columns=[a.column]).column(a.column).to_pylist()
    start = time.perf_counter()
    with blobpack.PackSet(os.path.join(a.dst, "media")) as packs:
        payloads = [None if r is None else packs.read(r) for r in refs]
    took = time.perf_counter() - start
    if a.check:
        want = lance.dataset(a.check).take(rows, columns=[a.column]).column(a.column).to_pylist()
        bad = [r for r, got, w in zip(rows, payloads, want) if got != w]
        assert not bad, "rows %s differ from the source" % bad[:5]
    print("pylance + PackSet: %d random references resolved in %.1f ms (%.1f ms per 1,000)%s"
          % (a.n, took * 1e3, took * 1e6 / a.n, ", every payload equal to the source" if a.check else ""))


if __name__ == "__main__":
    main()
