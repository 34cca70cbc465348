#!/usr/bin/env bash
# Submits the array, then finalize to run once every array task succeeded.
set -euo pipefail
cd "$(dirname "$0")"
jid=$(sbatch --parsable bpconvert-array.sbatch)
sbatch --dependency="afterok:${jid%%;*}" bpconvert-finalize.sbatch
