"""blobpack's PackSet inside DataLoader-style worker processes.

PyTorch's DataLoader gives each worker process a copy of the dataset object, which
then reads the samples of the batches it is handed. A PackSet pickles its member
index and no file descriptors, so it travels to workers as part of the dataset and
each worker opens its own descriptors:

    class Images(torch.utils.data.Dataset):
        def __init__(self, refs, pack_dir):
            self.refs, self.packs = refs, blobpack.PackSet(pack_dir)
        def __len__(self): return len(self.refs)
        def __getitem__(self, i): return self.packs.read(self.refs[i])

    loader = torch.utils.data.DataLoader(Images(refs, "out/media"), num_workers=2, batch_size=32)

PyTorch is too heavy to pin for the tests, so this program mimics that pattern with a
multiprocessing pool (spawned workers, so the dataset is pickled as DataLoader pickles
it under the spawn start method): each worker receives the dataset once and maps
batches of indices to payloads.

Run as a program:  python packset_loader.py DST TABLE COLUMN [--check SRC_TABLE] [--n 1000]
TABLE is a parquet table of the dataset (read with pyarrow); it reads N random rows
of COLUMN through 2 workers in batches of 32 and prints the time; with --check it
asserts that every payload equals the same row of the source table.
"""

import argparse
import multiprocessing
import os
import random
import time

import blobpack
import pyarrow.parquet as pq


class Payloads:
    """A map-style dataset: index to payload bytes, through a PackSet."""

    def __init__(self, refs, pack_dir):
        self.refs = refs
        self.packs = blobpack.PackSet(pack_dir)

    def __len__(self):
        return len(self.refs)

    def __getitem__(self, i):
        ref = self.refs[i]
        return None if ref is None else self.packs.read(ref)


_dataset = None


def _init(dataset):
    global _dataset
    _dataset = dataset


def _batch(indices):
    return [_dataset[i] for i in indices]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dst")
    ap.add_argument("table")
    ap.add_argument("column")
    ap.add_argument("--check")
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--seed", type=int, default=25)
    a = ap.parse_args()
    refs = pq.read_table(os.path.join(a.dst, a.table), columns=[a.column]).column(a.column).to_pylist()
    dataset = Payloads(refs, os.path.join(a.dst, "media"))
    rows = random.Random(a.seed).choices(range(len(refs)), k=a.n)
    batches = [rows[i:i + a.batch] for i in range(0, len(rows), a.batch)]
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(a.workers, initializer=_init, initargs=(dataset,)) as pool:
        pool.map(abs, range(a.workers))  # start the workers before timing
        start = time.perf_counter()
        payloads = [p for b in pool.map(_batch, batches, chunksize=1) for p in b]
        took = time.perf_counter() - start
    if a.check:
        want = pq.read_table(a.check, columns=[a.column]).column(a.column).to_pylist()
        bad = [r for r, got in zip(rows, payloads) if got != want[r]]
        assert not bad, "rows %s differ from the source" % bad[:5]
    print("PackSet in %d loader workers: %d random references read in %.1f ms (%.1f ms per 1,000)%s"
          % (a.workers, a.n, took * 1e3, took * 1e6 / a.n, ", every payload equal to the source" if a.check else ""))


if __name__ == "__main__":
    main()
