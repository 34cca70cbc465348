"""Keep blob packs up to date with a dataset that grows: append on every
update of the source Asset.

Airflow 3 (airflow.sdk). The DAG is scheduled on the source Asset (for
example a directory of WebDataset shards that a producer DAG adds to, and
declares as its outlet). Every event runs
    bpconvert convert-wds SRC DST --append --yes --json
which converts only the shards DST's record does not hold, into new shards
numbered after the committed ones, and commits atomically (nothing new:
exit 0, already_done; DST absent: the whole conversion), then
    bpconvert verify DST --against SRC
and updates the packs Asset for downstream DAGs.

Runs are one at a time (max_active_runs=1): an append holds DST while it
commits, and events that arrive meanwhile are queued into the next run.
Exit codes 2 (other options than DST was made with) and 3 (a source DST
holds has changed or disappeared, or is corrupt) fail without retrying;
anything else (1: another append committed first, 143: stopped) is retried,
and the retry resumes or finds the work done.

Environment of the DAG processor and the workers: BPCONVERT_SOURCE_URI,
the source Asset (default file:///data/shards/train: SRC is its path; an
s3:// URI is SRC as it is), BPCONVERT_ASSET_URI, the packs Asset (default
file:///data/packs/train: DST is its path, or the s3:// URI),
BPCONVERT_APPEND_FLAGS, more converter flags (for example
"--max-pack-bytes 4GB"), and BPCONVERT_RETRY_DELAY. A manual trigger may
give other paths as params.
"""

import logging
import os
import shlex
from datetime import timedelta

from airflow.sdk import Asset, Param, dag, task
from airflow.sdk.exceptions import AirflowException, AirflowFailException

from bpconvert_commands import append_command, location, run_task, verify_command

#: The dataset that grows; DAGs that add to it declare it as an outlet.
SOURCE = Asset(name="bpconvert_source", uri=os.environ.get("BPCONVERT_SOURCE_URI", "file:///data/shards/train"))

#: The converted dataset (the same Asset bpconvert_dag.py updates).
PACKS = Asset(name="bpconvert_packs", uri=os.environ.get("BPCONVERT_ASSET_URI", "file:///data/packs/train"))

#: Converter flags of every scheduled run (an Asset-triggered run has no
#: conf): DST records them, so they stay the same from run to run.
EXTRA = shlex.split(os.environ.get("BPCONVERT_APPEND_FLAGS", ""))

#: How long a failed task waits before its retry.
RETRY_DELAY = timedelta(seconds=float(os.environ.get("BPCONVERT_RETRY_DELAY", "30")))


def bpconvert(argv):
    """Run bpconvert; return its summary, or raise what Airflow should do:
    AirflowFailException (no retry) or AirflowException (retried)."""
    return run_task(argv, AirflowFailException, AirflowException)


@dag(
    dag_id="bpconvert_append",
    schedule=[SOURCE],
    catchup=False,
    max_active_runs=1,
    render_template_as_native_obj=True,
    params={
        "bpconvert": Param("bpconvert", type="string", description="the bpconvert program (a path, or a name on PATH)"),
        "converter": Param("convert-wds", enum=["convert-wds", "convert-parquet", "convert-lerobot", "convert-lance"]),
        "sources": Param([location(SOURCE.uri)], type="array", items={"type": "string"},
                         description="SRC arguments; by default the source Asset's path"),
        "dest": Param(location(PACKS.uri), type="string", description="DST; by default the packs Asset's path"),
        "extra": Param(EXTRA, type="array", items={"type": "string"},
                       description="more converter flags, the same on every run (DST records them)"),
    },
    default_args={
        "retries": 3,
        "retry_delay": RETRY_DELAY,
        "execution_timeout": timedelta(hours=6),
    },
    tags=["bpconvert"],
)
def bpconvert_append():
    @task
    def append(params=None, triggering_asset_events=None):
        log = logging.getLogger("bpconvert")
        for asset, events in (triggering_asset_events or {}).items():
            for ev in events:
                log.info("triggered by %s: %s %s", asset.uri, ev.timestamp, ev.extra)
        return bpconvert(append_command(params["bpconvert"], params["converter"], params["sources"],
                                        params["dest"], params["extra"]))

    @task(outlets=[PACKS])
    def verify(appended, params=None, outlet_events=None):
        summary = bpconvert(verify_command(params["bpconvert"], params["dest"], params["sources"]))
        outlet_events[PACKS].extra = {"dest": params["dest"], "members": summary.get("members"),
                                      "status": appended.get("status"), "appended": appended.get("appended")}
        return summary

    verify(append())


bpconvert_append()
