"""Commands and exit-code rules for running bpconvert under Airflow.

Kept free of Airflow imports so that the commands a DAG runs can be built,
printed and tested anywhere (bpconvert's test suite runs exactly these).

Exit codes (bpconvert --help lists them):
  0    done, or already done (a retry of a finished task)       -> success
  2    usage: bad flag, destination holds other output,
       finalize with a part missing                              -> fail, no retry
  3    invalid input: a corrupt or truncated source              -> fail, no retry
  1, 130, 143 and anything else: a failure or a kill that a
       retry can recover from (the retry resumes)                -> fail, retry
"""

import json
import sys

#: Exit codes after which retrying cannot help.
NO_RETRY = {2: "usage error or conflicting destination", 3: "invalid input"}


def part_command(bpconvert, converter, sources, dst, part, parts, extra=()):
    """The argv of part `part` (1-based) of `parts` of a split conversion."""
    return [bpconvert, converter, *sources, dst, "--part", f"{part}/{parts}",
            "--yes", "--json", *extra]


def finalize_command(bpconvert, dst):
    """The argv that joins the parts into dst."""
    return [bpconvert, "finalize", dst, "--json"]


def outcome(returncode):
    """'ok', 'retry' or 'fail' for a bpconvert exit code."""
    if returncode == 0:
        return "ok"
    if returncode in NO_RETRY:
        return "fail"
    return "retry"


def summary(stdout):
    """The JSON summary: the last line of a --json run's stdout."""
    lines = [l for l in stdout.splitlines() if l.strip()]
    return json.loads(lines[-1]) if lines else {}


if __name__ == "__main__":
    # python3 bpconvert_commands.py BPCONVERT CONVERTER DST PARTS SRC...
    # prints the commands of every part and of finalize, one per line (JSON).
    bp, conv, dst, n, *srcs = sys.argv[1:]
    for i in range(1, int(n) + 1):
        print(json.dumps(part_command(bp, conv, srcs, dst, i, int(n))))
    print(json.dumps(finalize_command(bp, dst)))
    for code in (0, 1, 2, 3, 130, 143):
        print(json.dumps({"exit": code, "outcome": outcome(code)}), file=sys.stderr)
