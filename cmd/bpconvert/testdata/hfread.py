# hfread.py SRC DST CWD [disk]: loads the converted dataset DST with Hugging
# Face datasets (load_dataset(DST), or load_from_disk(DST) for a
# save_to_disk dataset, from the working directory CWD), compares its
# features with those of the source SRC, decodes every Image() and compares
# the pixels with the source's, reads every payload back through datasets'
# own embed_table_storage (which opens each path through fsspec, as
# push_to_hub does) and compares the bytes, and prints a JSON report.
import hashlib, io, json, os, sys
import datasets, pyarrow.parquet as pq, PIL.Image
from datasets.table import embed_table_storage

src, dst, cwd = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2]), sys.argv[3]
disk = sys.argv[4:] == ["disk"]
load = datasets.load_from_disk if disk else (lambda d: datasets.load_dataset(d, split="train"))
source = load(src)
os.chdir(cwd)
rep = {"features": str(load(dst).features), "source_features": str(source.features),
       "payloads": 0, "decoded": 0, "mismatches": [], "error": None}
try:
    out = load(dst)
    raw_src = source.cast_column("image", datasets.Image(decode=False)).cast_column("frames", datasets.List(datasets.Image(decode=False)))
    embedded = embed_table_storage(out.data.table).to_pylist()
    for i, (s, o) in enumerate(zip(raw_src, out)):
        if s["image"] is not None:
            want = PIL.Image.open(io.BytesIO(s["image"]["bytes"]))
            if o["image"].tobytes() != want.tobytes() or o["image"].size != want.size:
                rep["mismatches"].append("row %d: image decodes differently" % i)
            rep["decoded"] += 1
        elif o["image"] is not None:
            rep["mismatches"].append("row %d: null image became %r" % (i, o["image"]))
        e = embedded[i]
        pairs = [("audio", s["audio"]["bytes"], e["audio"]["bytes"])]
        if s["image"] is not None:
            pairs.append(("image", s["image"]["bytes"], e["image"]["bytes"]))
        pairs += [("frames[%d]" % j, f["bytes"], g["bytes"]) for j, (f, g) in enumerate(zip(s["frames"], e["frames"]))]
        if len(s["frames"]) != len(e["frames"]):
            rep["mismatches"].append("row %d: %d frames, source %d" % (i, len(e["frames"]), len(s["frames"])))
        for name, a, b in pairs:
            rep["payloads"] += 1
            if a != b:
                rep["mismatches"].append("row %d: %s differs" % (i, name))
    # the binary column holds references: fsspec reads each as it is
    import fsspec
    for i, (s, o) in enumerate(zip(source, out)):
        with fsspec.open(o["thumb"], "rb") as f:
            rep["payloads"] += 1
            if f.read() != s["thumb"]:
                rep["mismatches"].append("row %d: thumb differs" % i)
    if "image_path" in out.features:  # --keep-path
        rep["kept_paths"] = 0
        for i, (s, o) in enumerate(zip(raw_src, out)):
            want = [s["image"]["path"] if s["image"] else None] + [f["path"] for f in s["frames"]]
            got = [o["image_path"]] + o["frames_path"]
            if got != want:
                rep["mismatches"].append("row %d: kept paths %r, source %r" % (i, got, want))
            rep["kept_paths"] += len(got)
    if not disk:
        sch, ssch = pq.read_schema(os.path.join(dst, "data.parquet")), pq.read_schema(os.path.join(src, "data.parquet"))
        rep["field_metadata"] = {f.name: str(f.metadata) for f in sch if f.metadata}
        rep["same_fields"] = [f.name for f in sch if f.name in ssch.names and ssch.field(f.name).equals(f, check_metadata=True)]
except Exception as e:
    rep["error"] = "%s: %s" % (type(e).__name__, str(e)[:300])
print(json.dumps(rep))
