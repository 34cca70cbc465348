#!/usr/bin/env bash
# Measures bpconvert with object storage against the AWS SDK's own transfer
# manager moving the same bytes (bench/s3copy: same part size, 16 MiB, and
# the same parts in flight, 8), on a versitygw S3 server started on a free
# loopback port with its buckets on this machine's disk. In turns, medians
# of RUNS runs:
#   1. local -> s3: convert-wds of WDS_MB MB of tars (default 2000; 20
#      shards of 100 KiB members, Python's tarfile) into a bucket, against
#      s3copy up of the tars;
#   2. s3 -> s3: convert-wds from the bucket into another prefix, against
#      s3copy down then up of the tars;
#   3. s3 -> local: convert-wds from the bucket to a local directory,
#      against s3copy down of the tars followed by sync (convert-wds syncs
#      what it writes), and against the plainest download, one GetObject
#      per object streamed into its file (s3copy get), followed by sync.
# Ratios are baseline time / bpconvert time (1.0: as fast as the copy).
# Peak RSS is the largest of each command's runs, beside the bound
# 64 MiB + part size x parts in flight. The server runs on the same two
# cores and hashes every byte it receives (MD5 for ETags): it is part of
# what every command here pays.
#
# The figures also replace the bench/s3.sh section of docs/performance.md
# (BENCH_DOC=path writes another file, BENCH_DOC=none none).
#
# Needs bin/bpconvert, bin/versitygw and bin/s3copy (make build, make test
# or: go build -o bin/s3copy ./bench/s3copy), python3, bc; about
# 5 x WDS_MB MB free in BENCH_DIR.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
bin=${BPCONVERT:-$here/../bin/bpconvert}
gw=${VERSITYGW:-$here/../bin/versitygw}
s3copy=${S3COPY:-$here/../bin/s3copy}
runs=${RUNS:-3}
mb=${WDS_MB:-2000}
shards=${WDS_SHARDS:-20}
for p in "$bin" "$gw" "$s3copy"; do
  [ -x "$p" ] || { echo "bench/s3.sh: $p is missing (make build; make test builds versitygw; go build -o bin/s3copy ./bench/s3copy)" >&2; exit 2; }
done
work=${BENCH_DIR:-$(mktemp -d -p "${TMPDIR:-/var/tmp}")}
mkdir -p "$work/gw/src" "$work/gw/dst"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
key=BENCHKEY$RANDOM
secret=benchsecret$RANDOM$RANDOM
ROOT_ACCESS_KEY=$key ROOT_SECRET_KEY=$secret "$gw" --port "127.0.0.1:$port" posix "$work/gw" >"$work/gw.log" 2>&1 &
gwpid=$!
trap 'kill $gwpid 2>/dev/null; wait $gwpid 2>/dev/null; rm -rf "$work"' EXIT
export AWS_ACCESS_KEY_ID=$key AWS_SECRET_ACCESS_KEY=$secret AWS_REGION=us-east-1 \
  AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_EC2_METADATA_DISABLED=true \
  AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
for _ in $(seq 100); do
  python3 -c "import socket; socket.create_connection(('127.0.0.1', $port), 0.2)" 2>/dev/null && break
  sleep 0.1
done
echo "# bench/s3.sh: $(nproc) cores, runs=$runs, load $(cut -d' ' -f1-3 /proc/loadavg), versitygw on 127.0.0.1:$port, disk $(df --output=source "$work" | tail -1)"

member=102400
count=$((mb * 1000000 / member))
gen_shards "$work/tars" "$shards" "$count" "$member"
bytes=$(du -sb "$work/tars" | cut -f1)
"$s3copy" up "$work/tars" s3://src/wds
echo "## $count members of $member B in $shards shards ($bytes bytes)"

# A fresh prefix per run (the commands run in subshells).
next() { date +%s%N; }
BENCH_CLEAN='rm -rf "$work/gw/dst/"* "$work/out" "$work/down" "$work/staging"; mkdir -p "$work/staging"'
export work
conv="$bin convert-wds --yes --quiet --staging $work/staging"
mapfile -t m < <(BENCH_CLEAN=$BENCH_CLEAN measure_turns "$runs" \
  "\"$s3copy\" up \"$work/tars\" s3://dst/copy-\$(next)" \
  "$conv \"$work/tars\" s3://dst/conv-\$(next)" \
  "\"$s3copy\" down s3://src/wds \"$work/down\" && \"$s3copy\" up \"$work/down\" s3://dst/copy2-\$(next)" \
  "$conv s3://src/wds s3://dst/conv2-\$(next)" \
  "\"$s3copy\" down s3://src/wds \"$work/down\" && sync" \
  "\"$s3copy\" get s3://src/wds \"$work/down\" && sync" \
  "$bin convert-wds --yes --quiet s3://src/wds \"$work/out\"")
[ "${#m[@]}" = 7 ] || { echo "bench/s3.sh: a timed command failed" >&2; exit 1; }
# field I J: field J (1: median s, 2: peak RSS MiB, 3-4: load min-max) of command I.
field() { echo "${m[$1]}" | cut -d' ' -f"$2"; }
loads() { echo "$(field "$1" 3)-$(field "$1" 4)"; }
cell() { echo "$(field "$1" 1) s ($(loads "$1"))"; }
r_up=$(ratio "$(field 0 1)" "$(field 1 1)")
r_ss=$(ratio "$(field 2 1)" "$(field 3 1)")
r_down=$(ratio "$(field 4 1)" "$(field 6 1)")
r_get=$(ratio "$(field 5 1)" "$(field 6 1)")
bound=192
rss_ok() { if [ "$(echo "$1 <= $bound" | bc -l)" = 1 ]; then echo met; else echo MISSED; fi; }
echo "local -> s3: s3copy up $(field 0 1) s, convert-wds $(field 1 1) s: ratio $r_up (target >= 0.8)"
echo "s3 -> s3:    s3copy down+up $(field 2 1) s, convert-wds $(field 3 1) s: ratio $r_ss (target >= 0.7)"
echo "s3 -> local: s3copy down+sync $(field 4 1) s, get+sync $(field 5 1) s, convert-wds $(field 6 1) s: ratios $r_down, $r_get (target >= 0.8)"
echo "peak RSS: convert-wds local->s3 $(field 1 2) MiB, s3->s3 $(field 3 2) MiB, s3->local $(field 6 2) MiB; s3copy up $(field 0 2) MiB (bound: 64 MiB + 16 MiB x 8 parts in flight = $bound MiB)"
{
  echo "Measured by $(bench_head bench/s3.sh "$work"); medians of $runs rounds, commands in turns (their order balanced over the rounds); load: one-minute load averages at the start of the runs (min-max). versitygw v1.8.0 on loopback, its buckets on this disk, on the same two cores (it hashes every byte it receives). convert-wds of $count members of $member B in $shards tar shards ($bytes bytes) against the same bytes moved by the AWS SDK: its transfer manager (bench/s3copy up/down: 16 MiB parts, 8 in flight, as bpconvert uploads) and a plain GetObject per object, streamed into its file (s3copy get). Ratio = copy time / convert time."
  echo
  echo "| direction | baseline | baseline time | \`convert-wds\` | ratio (target) | peak RSS (bound $bound MiB) |"
  echo "|---|---|---|---|---|---|"
  echo "| local -> s3 | \`s3copy up\` | $(cell 0) | $(cell 1) | ${r_up}x (>= 0.8) | $(field 1 2) MiB, $(rss_ok "$(field 1 2)") (s3copy up $(field 0 2) MiB) |"
  echo "| s3 -> s3 | \`s3copy down\`, then \`up\` | $(cell 2) | $(cell 3) | ${r_ss}x (>= 0.7) | $(field 3 2) MiB, $(rss_ok "$(field 3 2)") |"
  echo "| s3 -> local | \`s3copy down\` + \`sync\` | $(cell 4) | $(cell 6) | ${r_down}x (>= 0.8) | $(field 6 2) MiB, $(rss_ok "$(field 6 2)") |"
  echo "| s3 -> local | \`s3copy get\` + \`sync\` (plain GetObject) | $(cell 5) | (same runs) | ${r_get}x (>= 0.8) | |"
} | perf_doc bench/s3.sh
