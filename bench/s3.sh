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
#      what it writes).
# Ratios are baseline time / bpconvert time (1.0: as fast as the copy).
# Peak RSS of each convert-wds run in the last round is printed with the
# summary's part size and parts in flight. The server runs on the same two
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
load_start=$(cut -d' ' -f1-3 /proc/loadavg)
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
conv="$bin convert-wds --yes --quiet --staging $work/staging"
IFS=" " read -r t_up t_conv_up t_ss_base t_conv_ss t_down t_conv_down < <(time_turns "$runs" \
  "\"$s3copy\" up \"$work/tars\" s3://dst/copy-\$(next)" \
  "$conv \"$work/tars\" s3://dst/conv-\$(next)" \
  "\"$s3copy\" down s3://src/wds \"$work/down\" && \"$s3copy\" up \"$work/down\" s3://dst/copy2-\$(next)" \
  "$conv s3://src/wds s3://dst/conv2-\$(next)" \
  "\"$s3copy\" down s3://src/wds \"$work/down\" && sync" \
  "$bin convert-wds --yes --quiet s3://src/wds \"$work/out\"" | tr '\n' ' '; echo)
[ -n "${t_conv_down:-}" ] || { echo "bench/s3.sh: a timed command failed" >&2; exit 1; }
load_end=$(cut -d' ' -f1-3 /proc/loadavg)
r_up=$(ratio "$t_up" "$t_conv_up"); r_ss=$(ratio "$t_ss_base" "$t_conv_ss"); r_down=$(ratio "$t_down" "$t_conv_down")
echo "local -> s3: s3copy up $t_up s, convert-wds $t_conv_up s: ratio $r_up (target >= 0.8)"
echo "s3 -> s3:    s3copy down+up $t_ss_base s, convert-wds $t_conv_ss s: ratio $r_ss (target >= 0.7)"
echo "s3 -> local: s3copy down+sync $t_down s, convert-wds $t_conv_down s: ratio $r_down (target >= 0.8)"
eval "$BENCH_CLEAN"
rss_up=$(peak_rss_mib $conv "$work/tars" s3://dst/rss-up)
rss_ss=$(peak_rss_mib $conv s3://src/wds s3://dst/rss-ss)
rss_down=$(peak_rss_mib "$bin" convert-wds --yes --quiet s3://src/wds "$work/out-rss")
rss_copy=$(peak_rss_mib "$s3copy" up "$work/tars" s3://dst/rss-copy)
echo "peak RSS: convert-wds local->s3 $rss_up MiB, s3->s3 $rss_ss MiB, s3->local $rss_down MiB; s3copy up $rss_copy MiB (bound: 64 MiB + 16 MiB x 8 parts in flight = 192 MiB)"
{
  echo "\`bash bench/s3.sh\` ($(date -u +%Y-%m-%d), $(nproc) cores, medians of $runs alternating runs, load $load_start at the start and $load_end at the end; versitygw on loopback with its buckets on this disk, on the same cores): convert-wds of $count members of $member B in $shards shards ($bytes bytes) against the AWS SDK's transfer manager moving the same bytes (bench/s3copy, 16 MiB parts, 8 in flight). Ratio = copy time / convert time."
  echo
  echo "| direction | copy baseline | s | convert-wds s | ratio | target | peak RSS |"
  echo "|---|---|---|---|---|---|---|"
  echo "| local -> s3 | s3copy up | $t_up | $t_conv_up | $r_up | >= 0.8 | $rss_up MiB (s3copy $rss_copy MiB) |"
  echo "| s3 -> s3 | s3copy down + up | $t_ss_base | $t_conv_ss | $r_ss | >= 0.7 | $rss_ss MiB |"
  echo "| s3 -> local | s3copy down + sync | $t_down | $t_conv_down | $r_down | >= 0.8 | $rss_down MiB |"
  echo
  echo "RSS bound: 64 MiB + 16 MiB x 8 parts in flight = 192 MiB."
} | perf_doc bench/s3.sh
