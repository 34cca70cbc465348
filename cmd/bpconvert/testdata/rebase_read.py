# rebase_read.py KIND SRC DST: reads the converted dataset DST from the
# working directory this script is started in (not DST's root) with the
# readers a user has, and compares every payload with the source SRC, read
# by its own library (tarfile, datasets, pylance). KIND is the README's
# sample: wds (SRC a directory of WebDataset tars), hf (SRC a Hugging Face
# dataset with an Image() column) or lance (SRC a Lance table with a binary
# "image" column, converted with --column image). Readers: DuckDB selects
# the references, blobpack's PackSet reads them from DST/media, fsspec
# opens each reference as it is when it names its shard by an absolute path
# (joined to DST otherwise), Hugging Face datasets decodes the Image()
# column when the references are absolute, pylance reads the Lance table.
# Prints one JSON object: the readers used, payloads checked, mismatches.
import glob, io, json, os, sys, tarfile
import duckdb, fsspec
from blobpack import PackSet

kind, src, dst = sys.argv[1], os.path.abspath(sys.argv[2]), os.path.abspath(sys.argv[3])
assert os.path.realpath(os.getcwd()) != os.path.realpath(dst), "run from a directory other than DST"
packs = PackSet(os.path.join(dst, "media"), ref_base="")  # any base: the references may name the root by an absolute path
rep = {"readers": ["packset", "fsspec"], "checked": 0, "mismatches": [], "absolute": None}


def fsspec_read(ref):
    key, shard = ref[len("zip://"):].split("::", 1)
    rep["absolute"] = os.path.isabs(shard)
    if not os.path.isabs(shard):
        ref = f"zip://{key}::{os.path.join(dst, shard)}"
    with fsspec.open(ref, "rb") as f:
        return f.read()


def check(what, ref, want):
    rep["checked"] += 1
    if packs.read(ref) != want:
        rep["mismatches"].append(f"{what}: PackSet reads other bytes")
    if fsspec_read(ref) != want:
        rep["mismatches"].append(f"{what}: fsspec reads other bytes")


if kind == "wds":
    want = {}
    for p in sorted(glob.glob(os.path.join(src, "*.tar"))):
        with tarfile.open(p) as tf:
            for m in tf.getmembers():
                if m.isfile():
                    want[m.name] = tf.extractfile(m).read()
    rep["readers"].append("duckdb")
    rows = duckdb.sql(f"SELECT __key__, png, cls FROM '{dst}/samples.parquet' ORDER BY __key__").fetchall()
    for key, png, cls in rows:
        check(key + ".png", png, want[key + ".png"])
        check(key + ".cls", cls, want[key + ".cls"])
elif kind == "hf":
    import datasets
    source = datasets.load_dataset(src, split="train")
    raw = source.cast_column("image", datasets.Image(decode=False))
    rep["readers"].append("duckdb")
    rows = duckdb.sql(f"SELECT image.path FROM '{dst}/data/*.parquet'").fetchall()
    for i, (ref,) in enumerate(rows):
        check(f"row {i}", ref, raw[i]["image"]["bytes"])
    if rep["absolute"]:
        rep["readers"].append("datasets")
        out = datasets.load_dataset(dst, split="train")
        for i in range(len(out)):
            rep["checked"] += 1
            a, b = out[i]["image"], source[i]["image"]
            if a.size != b.size or a.tobytes() != b.tobytes():
                rep["mismatches"].append(f"row {i}: datasets decodes another image")
elif kind == "lance":
    import lance
    want = {r["id"]: r["image"] for r in lance.dataset(src).to_table(columns=["id", "image"]).to_pylist()}
    rep["readers"].append("pylance")
    for r in lance.dataset(os.path.join(dst, "table.lance")).to_table(columns=["id", "image"]).to_pylist():
        check(f"id {r['id']}", r["image"], want[r["id"]])
else:
    sys.exit(f"unknown kind {kind}")
print(json.dumps(rep))
