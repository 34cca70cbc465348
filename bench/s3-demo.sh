#!/usr/bin/env bash
# The object-storage run end to end, at size: a WebDataset of WDS_MB MB
# (default 2000) in one bucket is converted into another bucket with less
# local disk than the dataset, the S3 server is stopped in the middle and
# restarted, the rerun resumes from what the store holds, `verify s3://…
# --against s3://…` checks every payload, and a Python process with no
# bpconvert (pyarrow, fsspec and s3fs from the pinned test environment)
# resolves REFS random references through s3fs and compares them with the
# source tars read through s3fs too. Prints what it measured: the largest
# staging directory seen (sampled every 0.1 s) against the dataset's size
# and the stated bound, shards kept across the restart, time and peak RSS.
#
# Needs bin/bpconvert, bin/versitygw, bin/s3copy (go build -o bin/s3copy
# ./bench/s3copy) and the test environment (make pyenv); about 3 x WDS_MB
# MB free in BENCH_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
gw=${VERSITYGW:-$here/../bin/versitygw}
s3copy=${S3COPY:-$here/../bin/s3copy}
py=${BPCONVERT_PYTHON:-$(bash "$here/../scripts/pyenv.sh" "$here/../scripts/requirements/test.txt")/bin/python}
mb=${WDS_MB:-2000}
refs=${REFS:-1000}
shard_mb=${SHARD_MB:-64}
for p in "$bin" "$gw" "$s3copy" "$py"; do
  [ -x "$p" ] || { echo "bench/s3-demo.sh: $p is missing" >&2; exit 2; }
done
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work/gw/src" "$work/gw/dst" "$work/staging"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
key=DEMOKEY$RANDOM
secret=demosecret$RANDOM$RANDOM
gwpid=
start_gw() {
  ROOT_ACCESS_KEY=$key ROOT_SECRET_KEY=$secret "$gw" --port "127.0.0.1:$port" posix "$work/gw" >>"$work/gw.log" 2>&1 &
  gwpid=$!
  for _ in $(seq 100); do
    python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && return
    sleep 0.1
  done
  echo "bench/s3-demo.sh: versitygw did not start" >&2; exit 1
}
stop_gw() { kill "$gwpid" 2>/dev/null || true; wait "$gwpid" 2>/dev/null || true; }
trap 'stop_gw; rm -rf "$work"' EXIT
export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1 \
  AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_EC2_METADATA_DISABLED=true \
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
start_gw
echo "# bench/s3-demo.sh: $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), versitygw on 127.0.0.1:$port"

member=102400
count=$((mb * 1000000 / member))
gen_shards "$work/tars" 20 "$count" "$member"
bytes=$(du -sb "$work/tars" | cut -f1)
"$s3copy" up "$work/tars" s3://src/wds
rm -rf "$work/tars" # the dataset now lives only in the bucket
echo "## source: s3://src/wds, $count members of $member B in 20 tars ($bytes bytes); no local copy"

# Staging is sampled while the conversion runs.
peak=0
sample() {
  while kill -0 "$1" 2>/dev/null; do
    s=$( (du -sb "$work/staging" 2>/dev/null || true) | cut -f1)
    if [ "${s:-0}" -gt "$peak" ]; then peak=$s; fi
    sleep 0.1
  done
  echo "$peak"
}
conv=("$bin" convert-wds --yes --quiet --json --max-pack-bytes "${shard_mb}MB" --staging "$work/staging" s3://src/wds s3://dst/ds)
t0=$(now)
"${conv[@]}" >"$work/run1.json" 2>"$work/run1.err" &
cpid=$!
sample "$cpid" >"$work/peak1" &
spid=$!
# Stop the server once a third of the shards are in the store.
want=$((bytes / (shard_mb * 1000000) / 3))
for _ in $(seq 6000); do
  n=$( (find "$work/gw/dst/ds/media" -name 'pack-*.zip' 2>/dev/null || true) | wc -l)
  [ "$n" -ge "$want" ] && break
  kill -0 "$cpid" 2>/dev/null || break
  sleep 0.1
done
stop_gw
set +e; wait "$cpid"; rc1=$?; set -e
wait "$spid"
kept=$( (find "$work/gw/dst/ds/media" -name 'pack-*.zip' 2>/dev/null || true) | wc -l)
echo "first run: server stopped with $kept shards in the store; exit $rc1: $(head -c 300 "$work/run1.err" | tr '\n' ' ')"
[ "$rc1" -ne 0 ] || { echo "bench/s3-demo.sh: the run ended before the server stopped; lower SHARD_MB" >&2; exit 1; }
start_gw
"${conv[@]}" >"$work/run2.json" 2>"$work/run2.err" &
cpid=$!
sample "$cpid" >"$work/peak2" &
spid=$!
set +e; wait "$cpid"; rc2=$?; set -e
wait "$spid"
t1=$(now)
[ "$rc2" -eq 0 ] || { echo "bench/s3-demo.sh: the rerun failed: $(cat "$work/run2.err")" >&2; exit 1; }
peak=$(sort -n "$work/peak1" "$work/peak2" | tail -1)
summary() {
  python3 -c 'import json, sys
d = json.loads(sys.stdin.read().strip().splitlines()[-1])
u = d.get("upload", {})
print("%s members, %s shards, %s bytes uploaded, staging bound %s bytes" % (d["blobs"], d["shards"], u.get("bytes"), u.get("staging_bound_bytes")))'
}
echo "rerun: exit 0, $(summary <"$work/run2.json")"
echo "staging: largest seen $peak bytes against a $bytes-byte dataset ($(ratio "$peak" "$bytes") of it); $(echo "scale=1; ($t1 - $t0) / 1" | bc) s for both runs and the restart"

"$bin" verify s3://dst/ds --against s3://src/wds 2>&1 | tail -2

"$py" - "$refs" <<'PY'
import io, json, os, random, sys, tarfile, time
import fsspec, pyarrow.parquet as pq
n = int(sys.argv[1])
opts = {"key": os.environ["AWS_ACCESS_KEY_ID"], "secret": os.environ["AWS_SECRET_ACCESS_KEY"],
        "client_kwargs": {"endpoint_url": os.environ["AWS_ENDPOINT_URL_S3"], "region_name": "us-east-1"}}
fs = fsspec.filesystem("s3", **opts)
with fs.open("dst/ds/samples.parquet") as f:
    table = pq.read_table(f)
refs = [r for r in table.column("jpg").to_pylist() if r]
random.seed(1)
pick = random.sample(refs, min(n, len(refs)))
# The source bytes of the chosen members, read from the tars through s3fs.
want_keys = {r.split("::")[0][len("zip://"):] for r in pick}
src = {}
for path in fs.ls("src/wds"):
    with fs.open(path, block_size=8 << 20) as f, tarfile.open(fileobj=f, mode="r|") as tf:
        for m in tf:
            if m.name in want_keys:
                src[m.name] = tf.extractfile(m).read()
t = time.perf_counter()
for r in pick:
    member, shard = r.split("::")
    url = f"{member}::s3://dst/ds/{shard}"
    with fsspec.open(url, s3=opts) as f:
        got = f.read()
    assert got == src[member[len("zip://"):]], r
dt = time.perf_counter() - t
print(f"s3fs: {len(pick)} random references resolved through fsspec+s3fs and equal to the source members, {dt / len(pick) * 1000:.1f} ms each")
PY
