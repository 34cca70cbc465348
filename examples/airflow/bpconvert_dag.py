"""Convert a WebDataset into blob packs on several workers, then join them.

Dynamic task mapping runs one task per part (`.expand(part=...)`); each part
is a separate bpconvert process that may run on any worker sharing the
filesystem. `finalize` joins the parts once all of them succeeded. Every
task is safe to retry: a finished part or finalize exits 0 ("already_done"),
a killed one resumes from its complete shards. Exit codes 2 and 3 fail the
task without retrying (see bpconvert_commands.NO_RETRY).

Airflow 2.7 or later. Put this file and bpconvert_commands.py in the DAGs
folder; set BPCONVERT, SOURCES, DEST and PARTS for your data.
"""

import subprocess
from datetime import datetime, timedelta

from airflow.decorators import dag, task
from airflow.exceptions import AirflowException, AirflowFailException

from bpconvert_commands import NO_RETRY, finalize_command, outcome, part_command, summary

BPCONVERT = "/usr/local/bin/bpconvert"
SOURCES = ["/data/shards/train-{000000..000999}.tar"]
DEST = "/data/packs/train"
PARTS = 8


def run(argv):
    """Run bpconvert; return its JSON summary or raise per its exit code."""
    proc = subprocess.run(argv, capture_output=True, text=True)
    print(proc.stderr)
    result = outcome(proc.returncode)
    if result == "ok":
        return summary(proc.stdout)
    message = f"{argv[1]} exited {proc.returncode}: {proc.stderr.strip().splitlines()[-1:] or ''}"
    if result == "fail":
        raise AirflowFailException(f"{message} ({NO_RETRY[proc.returncode]}; not retried)")
    raise AirflowException(message)


@dag(schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
     default_args={"retries": 3, "retry_delay": timedelta(minutes=1)})
def bpconvert_fanout():
    @task
    def convert_part(part: int):
        return run(part_command(BPCONVERT, "convert-wds", SOURCES, DEST, part, PARTS))

    @task
    def finalize(_summaries):
        return run(finalize_command(BPCONVERT, DEST))

    finalize(convert_part.expand(part=list(range(1, PARTS + 1))))


bpconvert_fanout()
