"""Decodes random frames of a converted LeRobot dataset through MediaRef and
compares them with the source dataset's own camera files decoded by the
ffmpeg CLI, which this script finds from the source's LeRobot metadata alone
(video_path, and for v3.0 each episode's file and from_timestamp): frame
frame_index of episode e is frame round(from_timestamp * fps) + frame_index
of its camera file in presentation order, as LeRobot's loader picks it.

    python mediaref_check.py DST SRC SEED CELLS MODE [SNIPPET]

MODE "ceil" decodes each cell of DST/video_frames.parquet as it is; "round"
decodes the source camera file (the blob, for v2.x) at round(pts * 1e9 *
time_base) with the pts and time base ffprobe reads, after checking that
the table holds ceil() of the same. Either way the table's rows must be the
source tables' (index, episode_index, frame_index), and its schema
MediaRef's Arrow form without Hugging Face metadata. SNIPPET, a file of Python that sets
`frame` from DST, e, i and c, is run for every cell too. In "ceil" mode
every cell's blob is also opened with blobpack's PackSet.open(uri) and the
file object handed to tensorcodec's VideoDecoder (the FFmpeg decoder
MediaRef uses), which decodes the frame played at pts_ns: the same pixels
again. Run it from a directory other than DST. Prints one JSON object.
"""

import glob
import json
import math
import os
import random
import subprocess
import sys
import tempfile
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from blobpack import PackSet
from mediaref import MediaRef
from tensorcodec.decoders import VideoDecoder

MEDIAREF = pa.struct({"uri": pa.string(), "pts_ns": pa.int64()})


def ffprobe_frames(path):
    """Presentation pts (ticks, sorted) and time base of the video stream."""
    out = subprocess.run(
        ["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=time_base:frame=pts",
         "-of", "json", path], capture_output=True, check=True, text=True).stdout
    doc = json.loads(out)
    num, den = doc["streams"][0]["time_base"].split("/")
    return sorted(int(f["pts"]) for f in doc["frames"]), Fraction(int(num), int(den))


def ffmpeg_frames(path, h, w):
    """Every frame of the file in presentation order, rgb24."""
    out = subprocess.run(
        ["ffmpeg", "-nostdin", "-v", "error", "-i", path, "-vsync", "0", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
        capture_output=True, check=True).stdout
    return np.frombuffer(out, np.uint8).reshape(-1, h, w, 3)


def episodes_v3(src, keys):
    eps = {}
    for f in sorted(glob.glob(os.path.join(src, "meta", "episodes", "*", "*.parquet"))):
        for r in pq.read_table(f).to_pylist():
            eps[r["episode_index"]] = {k: (r[f"videos/{k}/chunk_index"], r[f"videos/{k}/file_index"],
                                           r[f"videos/{k}/from_timestamp"]) for k in keys}
    return eps


def main():
    dst, src, seed, cells, mode = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
    snippet = open(sys.argv[6]).read() if len(sys.argv) > 6 else None
    assert os.path.realpath(os.getcwd()) != os.path.realpath(dst), "run from a directory other than DST"
    info = json.load(open(os.path.join(src, "meta", "info.json")))
    fps = info["fps"]
    keys = sorted(k for k, v in info["features"].items() if v["dtype"] == "video")
    v3 = info["codebase_version"] == "v3.0"
    eps = episodes_v3(src, keys) if v3 else None

    table = pq.read_table(os.path.join(dst, "video_frames.parquet"))
    schema = table.schema
    problems = []
    if schema.metadata and b"huggingface" in schema.metadata:
        problems.append("schema carries huggingface metadata")
    for name, typ in [("index", pa.int64()), ("episode_index", pa.int64()), ("frame_index", pa.int64())]:
        if schema.field(name).type != typ:
            problems.append(f"{name} is {schema.field(name).type}")
    for k in keys:
        if schema.field(k).type != MEDIAREF:
            problems.append(f"{k} is {schema.field(k).type}, not MediaRef's {MEDIAREF}")
    rows = table.to_pylist()
    # Hugging Face datasets loads it as plain structs, without mediaref.hf.
    import datasets
    with tempfile.TemporaryDirectory() as cache:
        hf = datasets.load_dataset("parquet", data_files=os.path.join(dst, "video_frames.parquet"), split="train",
                                   cache_dir=cache)
        if hf.num_rows != len(rows) or hf[len(rows) - 1][keys[0]] != rows[-1][keys[0]]:
            problems.append("datasets reads other rows")
    # One row per data row of the source tables, in index order.
    cols = ["index", "episode_index", "frame_index"]
    data = pa.concat_tables(pq.read_table(f, columns=cols) for f in sorted(
        glob.glob(os.path.join(src, "data", "**", "*.parquet"), recursive=True))).sort_by("index")
    if table.select(cols).to_pydict() != data.to_pydict():
        problems.append("the rows (index, episode_index, frame_index) are not the source tables' data rows")

    def source(e, k):
        if v3:
            chunk, file, frm = eps[e][k]
            rel = info["video_path"].format(video_key=k, chunk_index=chunk, file_index=file)
            return os.path.join(src, rel), round(frm * fps)
        rel = info["video_path"].format(video_key=k, episode_chunk=e // info["chunks_size"], episode_index=e)
        return os.path.join(src, rel), 0

    decoded, probed, opened = {}, {}, {}
    packs = PackSet(os.path.join(dst, "media"), ref_base="")  # any base: absolute references too
    rng = random.Random(seed)
    checked, mismatches, details = 0, 0, []
    for _ in range(cells):
        r, k = rng.choice(rows), rng.choice(keys)
        e, i, cell = r["episode_index"], r["frame_index"], r[k]
        checked += 1
        path, first = source(e, k)
        if path not in decoded:
            h, w = info["features"][k]["shape"][:2]
            decoded[path] = ffmpeg_frames(path, h, w)
        want = decoded[path][first + i]
        if cell is None:
            mismatches += 1
            details.append(f"episode {e} {k} frame {i}: null cell")
            continue
        uri = cell["uri"].replace("::media/", f"::{dst}/media/")
        pts_ns = cell["pts_ns"]
        if mode == "round":
            if path not in probed:
                probed[path] = ffprobe_frames(path)
            ticks, tb = probed[path]
            exact = ticks[first + i] * tb * 10**9
            if math.ceil(exact) != pts_ns:
                problems.append(f"episode {e} {k} frame {i}: pts_ns {pts_ns}, ceil of the stream's {math.ceil(exact)}")
            uri, pts_ns = path, round(exact)
        got = MediaRef(uri=uri, pts_ns=pts_ns).to_ndarray()
        ok = got.shape == want.shape and np.array_equal(got, want)
        if mode == "ceil":
            if cell["uri"] not in opened:
                f = packs.open(cell["uri"])
                opened[cell["uri"]] = (f, VideoDecoder(f, dimension_order="NHWC"))
            via = opened[cell["uri"]][1].get_frame_played_at(pts_ns / 1e9).data
            if via.shape != want.shape or not np.array_equal(via, want):
                problems.append(f"episode {e} {k} frame {i}: PackSet.open + VideoDecoder decodes another frame")
        if snippet is not None:
            scope = {"DST": dst, "e": e, "i": i, "c": k}
            exec(snippet, scope)
            if not np.array_equal(scope["frame"], want):
                problems.append(f"episode {e} {k} frame {i}: the snippet's frame differs from the source's")
        if not ok:
            mismatches += 1
            if len(details) < 5:
                details.append(f"episode {e} {k} frame {i} at {pts_ns} ns")
    print(json.dumps({"checked": checked, "mismatches": mismatches, "details": details, "problems": problems,
                      "rows": len(rows)}))


main()
