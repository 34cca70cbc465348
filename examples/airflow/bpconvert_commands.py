"""Commands, exit-code rules and a runner for bpconvert under Airflow.

Kept free of Airflow imports so the commands a DAG runs can be built,
printed and tested anywhere.

Exit codes (bpconvert --help lists them):
  0    done, or already done (a retry of a finished task)       -> success
  2    usage: bad flag, destination holds other output (for
       --append: made with other options), finalize with a part
       missing or stale                                          -> fail, no retry
  3    invalid input: a corrupt or truncated source; for
       --append, a source the destination holds that changed
       or disappeared                                            -> fail, no retry
  1, 130, 143 and anything else: a failure or a stop that a
       retry can recover from (after SIGTERM the retry resumes
       from the complete shards; another append that committed
       first is met by a rerun)                                  -> fail, retry
"""

import json
import logging
import os
import subprocess
import sys
import tempfile
from urllib.parse import unquote, urlparse

#: Exit codes after which retrying cannot help.
NO_RETRY = {2: "usage error or conflicting destination", 3: "invalid input"}


def part_command(bpconvert, converter, sources, dst, part, parts, extra=()):
    """The argv of part `part` (1-based) of `parts` of a split conversion."""
    return [bpconvert, converter, *sources, dst, "--part", f"{part}/{parts}", "--yes", *extra]


def location(uri):
    """What bpconvert is given for an Asset's URI: the path of a file://
    URI, any other URI (s3://bucket/prefix) as it is."""
    parsed = urlparse(uri)
    return unquote(parsed.path) if parsed.scheme == "file" else uri


def append_command(bpconvert, converter, sources, dst, extra=()):
    """The argv that converts into dst what its record does not hold yet
    (everything when dst is absent); exit 0 with already_done when nothing
    is new."""
    return [bpconvert, converter, *sources, dst, "--append", "--yes", "--json", *extra]


def finalize_command(bpconvert, dst):
    """The argv that joins the parts into dst."""
    return [bpconvert, "finalize", dst]


def verify_command(bpconvert, dst, sources):
    """The argv that checks dst, and every payload against the sources."""
    return [bpconvert, "verify", dst, "--against", "::".join(sources)]


def outcome(returncode):
    """'ok', 'retry' or 'fail' for a bpconvert exit code."""
    if returncode == 0:
        return "ok"
    if returncode in NO_RETRY:
        return "fail"
    return "retry"


class BpconvertFailed(Exception):
    """A bpconvert run that did not succeed: its exit code, what to do
    about it ('fail' or 'retry'), and the error and hint it reported."""

    def __init__(self, argv, returncode, summary):
        self.argv, self.returncode, self.summary = argv, returncode, summary
        self.outcome = outcome(returncode)
        self.error = summary.get("error") or f"exited {returncode} without a summary"
        self.hint = summary.get("hint", "")
        message = f"bpconvert {argv[1]} exited {returncode}: {self.error}"
        if self.hint:
            message += f" (hint: {self.hint})"
        if self.outcome == "fail":
            message += f"; {NO_RETRY[returncode]}, not retried"
        super().__init__(message)


def log_line(log, line):
    """Log one line of bpconvert's output at the level it deserves."""
    if line.startswith("bpconvert: error:") or line.startswith("bpconvert: interrupted"):
        log.error("%s", line)
    elif line.startswith("bpconvert: hint:") or line.startswith("bpconvert: warning:"):
        log.warning("%s", line)
    else:
        log.info("%s", line)


def run(argv, log=None):
    """Run bpconvert, streaming its output (stdout and stderr, as it
    happens) to log; return its JSON summary, or raise BpconvertFailed with
    the error and hint the summary reports."""
    log = log or logging.getLogger("bpconvert")
    with tempfile.TemporaryDirectory(prefix="bpconvert-") as tmp:
        summary_file = os.path.join(tmp, "summary.json")
        argv = [*argv, "--summary-file", summary_file]
        log.info("running %s", " ".join(argv))
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, text=True, bufsize=1)
        try:
            for line in proc.stdout:
                log_line(log, line.rstrip("\n"))
            proc.wait()
        finally:
            if proc.poll() is None:
                # The task itself is being stopped: pass it on as SIGTERM,
                # which keeps complete shards staged for the retry.
                proc.terminate()
                proc.wait()
        try:
            with open(summary_file) as f:
                summary = json.load(f)
        except (OSError, ValueError):
            summary = {}
    if proc.returncode != 0:
        raise BpconvertFailed(argv, proc.returncode, summary)
    return summary


def run_task(argv, fail, retry):
    """Run bpconvert as an engine's task: stream its output to the logger
    "bpconvert" (the task log) and return its summary, or raise fail(message)
    when a retry cannot help (exit 2 or 3) and retry(message) otherwise; fail
    and retry are the engine's exception classes (Airflow:
    AirflowFailException and AirflowException)."""
    log = logging.getLogger("bpconvert")
    try:
        return run(argv, log)
    except BpconvertFailed as e:
        log.error("%s", e)
        raise (fail if e.outcome == "fail" else retry)(str(e)) from None


if __name__ == "__main__":
    # python3 bpconvert_commands.py BPCONVERT CONVERTER DST PARTS SRC...
    # prints the commands of every part, of finalize and of verify, one per
    # line (JSON), and the exit-code rules on stderr.
    bp, conv, dst, n, *srcs = sys.argv[1:]
    for i in range(1, int(n) + 1):
        print(json.dumps(part_command(bp, conv, srcs, dst, i, int(n))))
    print(json.dumps(finalize_command(bp, dst)))
    print(json.dumps(verify_command(bp, dst, srcs)))
    for code in (0, 1, 2, 3, 130, 143):
        print(json.dumps({"exit": code, "outcome": outcome(code)}), file=sys.stderr)
