# Shared helpers for the benchmark scripts: timing with a median over runs,
# and a page-cache warm-up. Source it; it prints nothing by itself.

# set_aside PATH...: moves earlier outputs out of the way instead of deleting
# them, into a .trash directory beside them (removed with the work
# directory). Deleting gigabytes between timed runs makes the file system
# discard blocks and slows whichever command runs next (seen here: cp -r
# of 2 GB took 8-16 s right after a delete, 1-2 s otherwise; the root file
# system is mounted with online discard). Set aside, the baseline's copy
# has an effect too: the first command to write 2 GB after `cp -r` and
# `sync` of it (always the same one in a round, after openssl) pays 3-5 s
# more of kernel time, whatever it is. Deleting the copy instead (tried
# 2026-12-06) moved the cost to the next `cp -r` (200,000 files: 64.9 s
# instead of 9.5 s). measure_turns therefore changes the order of the
# commands from round to round.
set_aside() {
  local p
  for p in "$@"; do
    [ -e "$p" ] || continue
    local trash
    trash="$(dirname "$p")/.trash"
    mkdir -p "$trash"
    mv "$p" "$(mktemp -u -p "$trash")"
  done
}

# median prints the median of its arguments.
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# gen_shards DIR SHARDS MEMBERS SIZE: SHARDS tar files of MEMBERS members of
# SIZE bytes each, named like webdataset's ShardWriter output.
gen_shards() {
  python3 - "$@" <<'PY'
import io, os, sys, tarfile
d, nshards, n, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
os.makedirs(d, exist_ok=True)
block = os.urandom(size)
per = (n + nshards - 1) // nshards
i = 0
for s in range(nshards):
    with tarfile.open(os.path.join(d, f"train-{s:06d}.tar"), "w", format=tarfile.USTAR_FORMAT) as tf:
        for _ in range(per):
            if i == n:
                break
            ti = tarfile.TarInfo(f"{i:09d}.jpg")
            ti.size, ti.mtime, ti.mode = size, 1700000000, 0o444
            # vary the bytes per member without paying for os.urandom each time
            tf.addfile(ti, io.BytesIO(i.to_bytes(8, "little") + block[8:]))
            i += 1
PY
}

# now prints the time in seconds with nanoseconds.
now() { date +%s.%N; }

# time_runs N CMD...: runs CMD N times (after a clean-up hook, if
# BENCH_CLEAN is set to a command) and prints the median wall time in seconds.
time_runs() {
  local n=$1; shift
  local times=()
  for _ in $(seq "$n"); do
    if [ -n "${BENCH_CLEAN:-}" ]; then eval "$BENCH_CLEAN"; fi
    sync
    local t0 t1
    t0=$(now)
    "$@" >/dev/null
    t1=$(now)
    times+=("$(echo "$t1 - $t0" | bc -l)")
  done
  median "${times[@]}"
}

# warm reads every file under a path so the page cache holds it.
warm() { find "$1" -type f -exec cat {} + >/dev/null; }

# ratio A B prints A/B with two decimals.
ratio() { printf '%.2f\n' "$(echo "scale=4; $1 / $2" | bc -l)"; }

# peak_rss_mib CMD...: runs CMD once and prints its peak RSS in MiB.
peak_rss_mib() {
  python3 - "$@" <<'PY'
import resource, subprocess, sys
subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, check=True)
print(f"{resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024:.1f}")
PY
}

# measure_turns N CMD...: each CMD is a shell command; the commands take
# turns, one run of each per round for N rounds (BENCH_CLEAN and sync
# before each run), so that all of them meet the same state of the page
# cache (set-aside outputs of earlier runs fill it, and the kernel reclaims
# pages while the next run writes: run one after another, the later
# commands are slowed). The order changes from round to round as the rows
# of a balanced Latin square (Williams): over K rounds for K commands
# (2K when K is odd) every command takes every place once and follows
# every other command once, so a cost one command leaves to the next (see
# set_aside) falls on each in turn instead of always on the same one. For
# each command it prints one line, in the order given:
#   MEDIAN_SECONDS PEAK_RSS_MIB LOAD_MIN LOAD_MAX MEDIAN_MACHINE_CPU
# where the peak RSS is the largest of its runs (ru_maxrss of the command
# and what it waits for), the loads are the one-minute load averages read
# as its runs started, and the machine CPU is the busy time of all cores
# while it ran (seconds from /proc/stat: user, nice, system, irq, softirq
# and steal; so the kernel's writeback of its files counts, and so would
# anything else running then). A command that fails stops the script. The
# script's functions are exported, so commands and BENCH_CLEAN may call
# them. BENCH_LOG=path appends a line per run to that file: round, command
# number, wall, user and system CPU seconds (of the command and what it
# waits for), the machine's busy CPU seconds, the one-minute load, and the
# command.
measure_turns() {
  local f
  for f in $(declare -F | awk '{print $3}'); do export -f "${f?}"; done
  python3 - "$@" <<'PY'
import os, statistics, subprocess, sys, time
n, cmds = int(sys.argv[1]), sys.argv[2:]
clean = os.environ.get("BENCH_CLEAN", "")
log = open(os.environ["BENCH_LOG"], "a") if os.environ.get("BENCH_LOG") else None
times = [[] for _ in cmds]
rss = [0.0] * len(cmds)
cpu = [[] for _ in cmds]
hz = os.sysconf("SC_CLK_TCK")


def busy():
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / hz


loads = [[] for _ in cmds]
k = len(cmds)
first, lo, hi = [0], 1, k - 1
while len(first) < k:
    if len(first) % 2:
        first.append(lo)
        lo += 1
    else:
        first.append(hi)
        hi -= 1
rows = [[(x + r) % k for x in first] for r in range(k)]
if k % 2:
    rows += [row[::-1] for row in rows]
for r in range(n):
    for i in rows[r % len(rows)]:
        c = cmds[i]
        if clean:
            subprocess.run(["bash", "-c", clean], check=True)
        os.sync()
        loads[i].append(os.getloadavg()[0])
        b0, t0 = busy(), time.monotonic()
        p = subprocess.Popen(["bash", "-c", c], stdout=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        times[i].append(time.monotonic() - t0)
        cpu[i].append(busy() - b0)
        if log:
            print(f"{r} {i} {times[i][-1]:.3f} {ru.ru_utime:.3f} {ru.ru_stime:.3f} {cpu[i][-1]:.2f} {loads[i][-1]:.2f} {c}", file=log, flush=True)
        if os.waitstatus_to_exitcode(status) != 0:
            sys.exit(f"measure_turns: failed ({os.waitstatus_to_exitcode(status)}): {c}")
        rss[i] = max(rss[i], ru.ru_maxrss / 1024)
for i in range(len(cmds)):
    print(f"{statistics.median(times[i]):.3f} {rss[i]:.1f} {min(loads[i]):.2f} {max(loads[i]):.2f} {statistics.median(cpu[i]):.2f}")
PY
}

# perf_doc NAME: replaces the section of the performance doc
# (BENCH_DOC, default docs/performance.md beside bench/; "none" skips it)
# between the lines "<!-- NAME begin -->" and "<!-- NAME end -->" with
# standard input, adding the section at the end where it is missing.
perf_doc() {
  local doc=${BENCH_DOC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)/docs/performance.md}
  local body
  body=$(cat)
  if [ "$doc" = none ]; then return; fi
  BENCH_DOC_BODY=$body python3 - "$1" "$doc" <<'PY'
import os, sys
name, doc = sys.argv[1], sys.argv[2]
body = os.environ["BENCH_DOC_BODY"].rstrip("\n") + "\n"
begin, end = f"<!-- {name} begin -->\n", f"<!-- {name} end -->\n"
text = open(doc).read() if os.path.exists(doc) else "# Performance\n"
i, j = text.find(begin), text.find(end)
if i >= 0 and j > i:
    text = text[: i + len(begin)] + body + text[j:]
else:
    text = text.rstrip("\n") + "\n\n" + begin + body + end
os.makedirs(os.path.dirname(doc) or ".", exist_ok=True)
tmp = doc + ".tmp"
with open(tmp, "w") as f:
    f.write(text)
os.replace(tmp, doc)
PY
}

# secs SECONDS prints seconds with three decimals (0.192, not .192426248),
# as the tables perf_doc writes show them.
secs() { printf '%.3f\n' "$1"; }

# per_gb SECONDS BYTES prints seconds per GB (10^9 bytes), two decimals.
per_gb() { printf '%.2f\n' "$(echo "scale=4; $1 * 1000000000 / $2" | bc -l)"; }

# bench_head SCRIPT WORK: the line that says where and when SCRIPT (its
# path under bench/) measures: the commit, the date, the cores and the
# device of the work directory.
bench_head() {
  local rev
  rev=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --short HEAD 2>/dev/null || echo unknown)
  echo "$1 at $rev, $(date -u +%Y-%m-%d), $(nproc) cores, work dir on $(df --output=source "$2" | tail -1)"
}

# largest_zip DIR prints the size in bytes of the largest .zip under DIR
# (0 where there is none).
largest_zip() { { echo 0; find "$1" -name '*.zip' -printf '%s\n'; } | sort -g | tail -1; }

# manifest_floor CPU SHA BYTES SHARD NOMANIFEST prints the least cost of the
# manifest (default / --no-manifest, two decimals, at least 1) that this
# machine allows the default run: it cannot end before its CPU (CPU, the
# machine's busy seconds while it ran, from measure_turns) is spread over
# every core, nor before the SHA-256 of its largest shard (SHARD bytes of
# BYTES, hashed in order on one core at openssl's speed: SHA seconds for
# BYTES), nor before the --no-manifest run (NOMANIFEST seconds).
manifest_floor() {
  python3 - "$@" "$(nproc)" <<'PY'
import sys
cpu, sha, total, shard, nm, cores = (float(x) for x in sys.argv[1:7])
print(f"{max(cpu / cores, sha * shard / total, nm) / nm:.2f}")
PY
}

# manifest_note is how the scripts say what manifest_floor allows.
manifest_note='the least manifest cost this machine allows the default run (in parentheses) is max(busy CPU seconds of all cores while it ran / cores, SHA-256 of its largest shard at openssl'"'"'s speed, the `--no-manifest` time) / the `--no-manifest` time'

# turns_method is how the scripts that time commands in turns say they
# measured, after bench_head's line.
turns_method="medians of the rounds, commands in turns (their order balanced over the rounds), warm page cache; load: one-minute load averages at the start of the runs (min-max)"

# find_blobpack PYTHON COMMAND SCRIPT: sets blobpack to the blobpack CLI
# installed beside PYTHON and bpver to its version when it has COMMAND;
# otherwise says so (SCRIPT names the caller) and sets both empty, so the
# caller leaves blobpack's column empty.
find_blobpack() {
  blobpack="$(dirname "$1")/blobpack" bpver=""
  if [ -x "$blobpack" ] && "$blobpack" "$2" --help >/dev/null 2>&1; then
    bpver=$("$blobpack" --version 2>&1 | tail -1)
  else
    echo "$3: blobpack with $2 is not installed beside $1: its column is left empty"
    blobpack=""
  fi
}
