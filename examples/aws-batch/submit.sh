#!/usr/bin/env bash
# Registers the job definition, submits 8 array children (each converts part
# AWS_BATCH_JOB_ARRAY_INDEX+1 of AWS_BATCH_JOB_ARRAY_SIZE: --part auto), then
# finalize, which starts once every child succeeded, and verify after it. QUEUE names
# your job queue; change the two paths in job-definition.json's parameters.
set -euo pipefail
cd "$(dirname "$0")"
QUEUE=${QUEUE:?set QUEUE to your AWS Batch job queue}
aws batch register-job-definition --cli-input-json file://job-definition.json >/dev/null
parts=$(aws batch submit-job --job-name bpconvert-parts --job-queue "$QUEUE" \
  --job-definition bpconvert-part --array-properties size=8 --query jobId --output text)
# The image has no shell: finalize and verify are two jobs, verify once
# finalize succeeded.
fin=$(aws batch submit-job --job-name bpconvert-finalize --job-queue "$QUEUE" \
  --job-definition bpconvert-part --depends-on jobId="$parts" --query jobId --output text \
  --container-overrides 'command=["/usr/local/bin/bpconvert","finalize","/data/packs"]')
aws batch submit-job --job-name bpconvert-verify --job-queue "$QUEUE" \
  --job-definition bpconvert-part --depends-on jobId="$fin" \
  --container-overrides 'command=["/usr/local/bin/bpconvert","verify","/data/packs","--against","/data/shards/train-{000000..000999}.tar"]'
