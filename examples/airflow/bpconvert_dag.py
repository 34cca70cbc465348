"""Convert a dataset into blob packs on several workers, join, then verify.

Airflow 3 (airflow.sdk). Dynamic task mapping runs one task per part
(`convert_part.expand(part=...)`); each part is a separate bpconvert process
that may run on any worker sharing the filesystem. `finalize` joins the
parts once all of them succeeded, and `verify` re-reads the output and
compares every payload with the source; it updates the Asset the output is
declared as, so downstream DAGs can be scheduled on it.

Every task is safe to retry: a finished part or finalize exits 0
("already_done"); a part stopped by SIGTERM (clear, mark failed, a lost
heartbeat, execution_timeout) or killed keeps its complete shards, and the
retry resumes from them. Exit codes 2 (usage) and 3 (invalid input) fail the
task without retrying. Failures carry bpconvert's error and hint, read from
its --summary-file; its output is streamed to the task log as it happens,
errors at error level.

Put this file and bpconvert_commands.py in the DAGs folder, create the pool
(`airflow pools set bpconvert 8 "bpconvert parts"`), and trigger with the
params of your run (the defaults below are placeholders), for example
    airflow dags trigger bpconvert_fanout -c '{"sources": ["/data/shards/train-{000000..000999}.tar"],
        "dest": "/data/packs/train", "parts": 8}'
"""

import os
from datetime import timedelta

from airflow.sdk import Asset, Param, dag, get_current_context, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from bpconvert_commands import finalize_command, part_command, run_task, verify_command

#: The converted dataset, for downstream DAGs (schedule=[PACKS]). An Asset
#: is declared when the DAG is parsed, so its URI names the default
#: destination; the event verify emits carries the run's real one.
PACKS = Asset(name="bpconvert_packs", uri=os.environ.get("BPCONVERT_ASSET_URI", "file:///data/packs/train"))

#: The pool bounding how many parts run at once.
POOL = os.environ.get("BPCONVERT_POOL", "bpconvert")

#: How long a failed task waits before its retry.
RETRY_DELAY = timedelta(seconds=float(os.environ.get("BPCONVERT_RETRY_DELAY", "30")))


def bpconvert(argv):
    """Run bpconvert; return its summary, or raise what Airflow should do:
    AirflowFailException (no retry) or AirflowException (retried)."""
    return run_task(argv, AirflowFailException, AirflowException)


@dag(
    dag_id="bpconvert_fanout",
    schedule=None,
    catchup=False,
    render_template_as_native_obj=True,
    params={
        "bpconvert": Param("bpconvert", type="string", description="the bpconvert program (a path, or a name on PATH)"),
        "converter": Param("convert-wds", enum=["convert-wds", "convert-parquet", "convert-lerobot", "convert-lance"]),
        "sources": Param(["/data/shards/train-{000000..000999}.tar"], type="array", items={"type": "string"},
                         description="SRC arguments; convert-wds takes several, the others one"),
        "dest": Param("/data/packs/train", type="string", description="DST: a new directory"),
        "parts": Param(8, type="integer", minimum=1, maximum=1024, description="N: tasks to split the work into"),
        "extra": Param([], type="array", items={"type": "string"},
                       description="more converter flags, such as [\"--column\", \"image\"] for convert-parquet"),
    },
    default_args={
        "retries": 3,
        "retry_delay": RETRY_DELAY,
        "execution_timeout": timedelta(hours=6),
        "pool": POOL,
    },
    tags=["bpconvert"],
)
def bpconvert_fanout():
    @task
    def parts_list(params=None):
        return list(range(1, params["parts"] + 1))

    @task(map_index_template="part {{ part_label }}")
    def convert_part(part, params=None):
        get_current_context()["part_label"] = f"{part}/{params['parts']}"
        return bpconvert(part_command(params["bpconvert"], params["converter"], params["sources"], params["dest"],
                                      part, params["parts"], params["extra"]))

    @task
    def finalize(_summaries, params=None):
        return bpconvert(finalize_command(params["bpconvert"], params["dest"]))

    @task(outlets=[PACKS])
    def verify(_summary, params=None, outlet_events=None):
        summary = bpconvert(verify_command(params["bpconvert"], params["dest"], params["sources"]))
        outlet_events[PACKS].extra = {"dest": params["dest"], "members": summary.get("members")}
        return summary

    verify(finalize(convert_part.expand(part=parts_list())))


bpconvert_fanout()
