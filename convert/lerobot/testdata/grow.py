"""grow.py OUT --version v3.0|v2.1 --files GROUPS --cache DIR [--size WxH]

Writes OUT, a small LeRobot dataset laid out the way LeRobot lays out a
dataset that received episodes over time, for the tests of
convert-lerobot --append. Run it again with more episodes to get the same
dataset after new episodes were recorded: every episode is encoded once
(ffmpeg CLI, kept in --cache), so the episodes already present keep their
packets, as they do when LeRobot adds episodes.

GROUPS lists the episodes per file, files separated by "/", e.g. "0,1,2/3,4"
(v3.0: data/chunk-000/file-000.parquet, the camera files file-000.mp4 and
the episode metadata file-000.parquet hold episodes 0-2; file-001 holds 3-4).
Growing "0,1,2/3,4" into "0,1,2/3,4,5" is LeRobot adding episode 5 to the
last files (its data file and episode metadata written again with the new
rows, its camera files concatenated again by packet copy); into
"0,1,2/3,4/5,6" it adds new files. v2.x has one file per episode; GROUPS
only gives the episodes.

--size WxH makes larger camera files: frames of that size with ffmpeg's
noise filter over them (-vf noise=alls=40:allf=t), so they hardly compress
(tests that count the bytes an append reads use them); 96x64 by default.

Cameras: observation.images.top, libx264 with B-frames (-g 10), and
observation.images.wrist, mpeg4 -g 10; each episode encoded alone and the
episodes of a v3.0 file concatenated with the concat demuxer (-c copy,
+faststart) as LeRobot does, from/to_timestamp the cumulative stream
durations (ffprobe). Tables are written by pyarrow (scripts/requirements/
test.txt pins it), metadata shaped like LeRobot's (v2.1: huggingface/lerobot
v0.3.3; v3.0: as fixtures/parquet/lerobot.mjs describes). Episodes 5 and
later carry a second task, so meta/tasks grows too.

Made with: Python 3, pyarrow (pinned), ffmpeg/ffprobe 5.1 (Debian 12).
"""
import argparse
import json
import os
import shutil
import subprocess

import pyarrow as pa
import pyarrow.parquet as pq

FPS = 10
SIZE = "96x64"
LENGTHS = [12, 15, 9, 14, 11, 13, 10, 12, 11, 9]
SOURCES = ["testsrc", "smptebars", "mandelbrot", "rgbtestsrc", "testsrc2", "yuvtestsrc"]
TASKS = ["push the block to the target", "stack the two cubes"]
TOP = "observation.images.top"
WRIST = "observation.images.wrist"
ENC = {
    TOP: "-c:v libx264 -preset medium -g 10 -keyint_min 10 -sc_threshold 0 -pix_fmt yuv420p",
    WRIST: "-c:v mpeg4 -g 10 -bf 0 -q:v 5 -pix_fmt yuv420p",
}
CODEC = {TOP: "h264", WRIST: "mpeg4"}


def ff(*args):
    subprocess.run(["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-y", *args], check=True)


def encode(cache, key, ep):
    """Returns the episode's camera file, encoding it once."""
    out = os.path.join(cache, f"{key}-{SIZE}-{ep}.mp4")
    if not os.path.exists(out):
        tmp = out + ".tmp.mp4"
        noise = ["-vf", "noise=alls=40:allf=t"] if SIZE != "96x64" else []
        ff("-f", "lavfi", "-i", f"{SOURCES[ep % len(SOURCES)]}=size={SIZE}:rate={FPS}", *noise,
           "-frames:v", str(LENGTHS[ep]), *ENC[key].split(), "-movflags", "+faststart", tmp)
        os.rename(tmp, out)
    return out


def duration(path):
    s = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "stream=duration",
                        "-of", "csv=p=0", path], check=True, capture_output=True, text=True).stdout
    return float(s.strip())


def concat(files, out):
    """Concatenates files by packet copy into out; returns [from, to] per file."""
    os.makedirs(os.path.dirname(out), exist_ok=True)
    lst = out + ".ffconcat"
    spans, acc = [], 0.0
    with open(lst, "w") as f:
        f.write("ffconcat version 1.0\n")
        for p in files:
            f.write(f"file '{p}'\n")
            d = duration(p)
            spans.append((acc, acc + d))
            acc += d
    ff("-f", "concat", "-safe", "0", "-i", lst, "-c", "copy", "-movflags", "+faststart", out)
    os.remove(lst)
    return spans


def task_of(ep):
    return 0 if ep < 5 else 1


def frames_table(eps, start):
    """The data rows of eps (in order), index counted from start[ep]."""
    cols = {"observation.state": [], "action": [], "timestamp": [], "frame_index": [], "episode_index": [],
            "index": [], "task_index": []}
    for ep in eps:
        for fi in range(LENGTHS[ep]):
            cols["observation.state"].append([fi * 0.5, float(ep)])
            cols["action"].append([fi * 0.25, float(-ep)])
            cols["timestamp"].append(fi / FPS)
            cols["frame_index"].append(fi)
            cols["episode_index"].append(ep)
            cols["index"].append(start[ep] + fi)
            cols["task_index"].append(task_of(ep))
    return pa.table({
        "observation.state": pa.array(cols["observation.state"], pa.list_(pa.float32())),
        "action": pa.array(cols["action"], pa.list_(pa.float32())),
        "timestamp": pa.array(cols["timestamp"], pa.float32()),
        "frame_index": pa.array(cols["frame_index"], pa.int64()),
        "episode_index": pa.array(cols["episode_index"], pa.int64()),
        "index": pa.array(cols["index"], pa.int64()),
        "task_index": pa.array(cols["task_index"], pa.int64()),
    })


SCALARS = {
    "observation.state": {"dtype": "float32", "shape": [2], "names": {"motors": ["x", "y"]}},
    "action": {"dtype": "float32", "shape": [2], "names": {"motors": ["x", "y"]}},
    "timestamp": {"dtype": "float32", "shape": [1], "names": None},
    "frame_index": {"dtype": "int64", "shape": [1], "names": None},
    "episode_index": {"dtype": "int64", "shape": [1], "names": None},
    "index": {"dtype": "int64", "shape": [1], "names": None},
    "task_index": {"dtype": "int64", "shape": [1], "names": None},
}


def video_feature(key):
    w, h = map(int, SIZE.split("x"))
    return {"dtype": "video", "shape": [h, w, 3], "names": ["height", "width", "channels"],
            "info": {"video.height": h, "video.width": w, "video.codec": CODEC[key], "video.pix_fmt": "yuv420p",
                     "video.is_depth_map": False, "video.fps": FPS, "video.channels": 3, "has_audio": False}}


def write_json(path, obj):
    with open(path, "w") as f:
        f.write(json.dumps(obj, indent=4) + "\n")


def stats(eps):
    n = sum(LENGTHS[e] for e in eps)
    return {"action": {"min": [0.0, float(-max(eps))], "max": [3.5, 0.0], "mean": [1.0, -len(eps) / 2], "std": [1.0, 1.5],
                       "count": [n]}}


def write_v3(out, groups, cache):
    eps = [e for g in groups for e in g]
    start, acc = {}, 0
    for e in eps:
        start[e] = acc
        acc += LENGTHS[e]
    spans = {}
    for fi, g in enumerate(groups):
        for key in (TOP, WRIST):
            sp = concat([encode(cache, key, e) for e in g], os.path.join(out, "videos", key, "chunk-000", f"file-{fi:03d}.mp4"))
            for e, s in zip(g, sp):
                spans[(key, e)] = (fi, s)
        path = os.path.join(out, "data", "chunk-000", f"file-{fi:03d}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(frames_table(g, start), path)
    os.makedirs(os.path.join(out, "meta", "episodes", "chunk-000"), exist_ok=True)
    for fi, g in enumerate(groups):
        rows = {"episode_index": [], "length": [], "data/chunk_index": [], "data/file_index": [],
                "dataset_from_index": [], "dataset_to_index": []}
        for key in (TOP, WRIST):
            for c in ("chunk_index", "file_index", "from_timestamp", "to_timestamp"):
                rows[f"videos/{key}/{c}"] = []
        rows["tasks"], rows["meta/episodes/chunk_index"], rows["meta/episodes/file_index"] = [], [], []
        for e in g:
            rows["episode_index"].append(e)
            rows["length"].append(LENGTHS[e])
            rows["data/chunk_index"].append(0)
            rows["data/file_index"].append(fi)
            rows["dataset_from_index"].append(start[e])
            rows["dataset_to_index"].append(start[e] + LENGTHS[e])
            for key in (TOP, WRIST):
                vf, (a, b) = spans[(key, e)]
                rows[f"videos/{key}/chunk_index"].append(0)
                rows[f"videos/{key}/file_index"].append(vf)
                rows[f"videos/{key}/from_timestamp"].append(a)
                rows[f"videos/{key}/to_timestamp"].append(b)
            rows["tasks"].append([TASKS[task_of(e)]])
            rows["meta/episodes/chunk_index"].append(0)
            rows["meta/episodes/file_index"].append(fi)
        types = {k: (pa.float64() if k.endswith("_timestamp") else pa.list_(pa.string()) if k == "tasks" else pa.int64()) for k in rows}
        pq.write_table(pa.table({k: pa.array(v, types[k]) for k, v in rows.items()}),
                       os.path.join(out, "meta", "episodes", "chunk-000", f"file-{fi:03d}.parquet"))
    tasks = sorted({task_of(e) for e in eps})
    pq.write_table(pa.table({"task_index": pa.array(tasks, pa.int64()), "task": pa.array([TASKS[t] for t in tasks])}),
                   os.path.join(out, "meta", "tasks.parquet"))
    write_json(os.path.join(out, "meta", "stats.json"), stats(eps))
    write_json(os.path.join(out, "meta", "info.json"), {
        "codebase_version": "v3.0", "robot_type": "fixture", "total_episodes": len(eps), "total_frames": acc,
        "total_tasks": len(tasks), "chunks_size": 1000, "data_files_size_in_mb": 100, "video_files_size_in_mb": 200,
        "fps": FPS, "splits": {"train": f"0:{len(eps)}"},
        "data_path": "data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet",
        "video_path": "videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4",
        "features": {TOP: video_feature(TOP), WRIST: video_feature(WRIST), **SCALARS},
    })


def write_v2(out, groups, cache):
    eps = [e for g in groups for e in g]
    start, acc = {}, 0
    for e in eps:
        start[e] = acc
        acc += LENGTHS[e]
    for e in eps:
        path = os.path.join(out, "data", "chunk-000", f"episode_{e:06d}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(frames_table([e], start), path)
        for key in (TOP, WRIST):
            v = os.path.join(out, "videos", "chunk-000", key, f"episode_{e:06d}.mp4")
            os.makedirs(os.path.dirname(v), exist_ok=True)
            shutil.copyfile(encode(cache, key, e), v)
    meta = os.path.join(out, "meta")
    os.makedirs(meta, exist_ok=True)
    with open(os.path.join(meta, "episodes.jsonl"), "w") as f:
        for e in eps:
            f.write(json.dumps({"episode_index": e, "tasks": [TASKS[task_of(e)]], "length": LENGTHS[e]}) + "\n")
    with open(os.path.join(meta, "tasks.jsonl"), "w") as f:
        for t in sorted({task_of(e) for e in eps}):
            f.write(json.dumps({"task_index": t, "task": TASKS[t]}) + "\n")
    with open(os.path.join(meta, "episodes_stats.jsonl"), "w") as f:
        for e in eps:
            f.write(json.dumps({"episode_index": e, "stats": stats([e])}) + "\n")
    write_json(os.path.join(meta, "info.json"), {
        "codebase_version": "v2.1", "robot_type": "fixture", "total_episodes": len(eps), "total_frames": acc,
        "total_tasks": len({task_of(e) for e in eps}), "total_videos": 2 * len(eps), "total_chunks": 1,
        "chunks_size": 1000, "fps": FPS, "splits": {"train": f"0:{len(eps)}"},
        "data_path": "data/chunk-{episode_chunk:03d}/episode_{episode_index:06d}.parquet",
        "video_path": "videos/chunk-{episode_chunk:03d}/{video_key}/episode_{episode_index:06d}.mp4",
        "features": {TOP: video_feature(TOP), WRIST: video_feature(WRIST), **SCALARS},
    })


def main():
    global SIZE
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--version", required=True, choices=["v3.0", "v2.1"])
    ap.add_argument("--files", required=True)
    ap.add_argument("--cache", required=True)
    ap.add_argument("--size", default=SIZE)
    a = ap.parse_args()
    SIZE = a.size
    a.out, a.cache = os.path.abspath(a.out), os.path.abspath(a.cache)
    groups = [[int(e) for e in g.split(",")] for g in a.files.split("/")]
    eps = [e for g in groups for e in g]
    if eps != list(range(len(eps))):
        ap.error("episodes must be 0, 1, 2... in file order")
    os.makedirs(a.cache, exist_ok=True)
    tmp = a.out + ".new"
    shutil.rmtree(tmp, ignore_errors=True)
    (write_v3 if a.version == "v3.0" else write_v2)(tmp, groups, a.cache)
    # Replace what changed, file by file, so files LeRobot would not touch
    # keep their bytes and times; remove files the new layout lacks.
    for root, _, files in os.walk(tmp):
        for name in files:
            src = os.path.join(root, name)
            dst = os.path.join(a.out, os.path.relpath(src, tmp))
            if os.path.exists(dst) and open(dst, "rb").read() == open(src, "rb").read():
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            os.replace(src, dst)
    shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
