"""Read a dataset that bpconvert converted, with Hugging Face datasets alone.

    python read_hf.py DST [--n 1000] [--seed 0]

DST is the output of `bpconvert convert-parquet` (loaded with
datasets.load_dataset(DST)) or of a save_to_disk source (loaded with
datasets.load_from_disk(DST)). Its Image() and Audio() features are the
source's: each value's path is a zip:// reference into DST/media/, which
datasets opens through fsspec like any other path. With references written
under `--ref-base DST` (an absolute path) this works from any directory;
with the default, relative references run it from DST.

It prints the features, then reads the payloads of N random rows of every
Image()/Audio() column (datasets' embed_table_storage, which reads each
path as push_to_hub does) and prints one JSON line: references read, bytes,
seconds.
"""
import argparse, json, os, random, time

import datasets
from datasets.table import embed_table_storage


def load(dst):
    if os.path.exists(os.path.join(dst, "state.json")) or os.path.exists(os.path.join(dst, "dataset_dict.json")):
        return datasets.load_from_disk(dst)
    return datasets.load_dataset(dst, split="train")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dst")
    ap.add_argument("--n", type=int, default=1000, help="random rows to read (default 1000)")
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args()
    ds = load(a.dst)
    if isinstance(ds, datasets.DatasetDict):
        ds = ds[next(iter(ds))]
    print(ds.features)
    media = [k for k, f in ds.features.items() if isinstance(f, (datasets.Image, datasets.Audio))]
    rows = random.Random(a.seed).choices(range(len(ds)), k=a.n)
    table = ds.data.table.select(media).take(rows)
    start = time.perf_counter()
    embedded = embed_table_storage(table)  # opens every path: zip://KEY::.../media/pack-NNNN.zip
    seconds = time.perf_counter() - start
    refs = nbytes = 0
    for col in media:
        for v in embedded.column(col).to_pylist():
            if v is not None and v["bytes"] is not None:
                refs += 1
                nbytes += len(v["bytes"])
    print(json.dumps({"rows": a.n, "columns": media, "refs": refs, "bytes": nbytes, "seconds": round(seconds, 3)}))


if __name__ == "__main__":
    main()
