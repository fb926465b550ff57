#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [SRUN_ARGS=...] \
#   bash tools/slurm_test.sh PARTITION JOB_NAME CONFIG CHECKPOINT [test.py args]
#
# One task per GPU (NCCL), GPUS tasks in all, GPUS_PER_NODE per node. On CPU-only
# partitions set GRES=none (no `--gres=gpu:N` request); each task then is a
# process of a gloo group. PYTHON picks the interpreter on the nodes.
# OMP_NUM_THREADS defaults to CPUS_PER_TASK so tasks do not oversubscribe.
set -x

PARTITION=$1
JOB_NAME=$2
CONFIG=$3
CHECKPOINT=$4
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
GRES=${GRES:-gpu:${GPUS_PER_NODE}}
PYTHON=${PYTHON:-python}
TOOLS_DIR=$(cd "$(dirname "$0")" && pwd)
PY_ARGS=("${@:5}")
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${CPUS_PER_TASK}}
GRES_ARG=()
if [ "${GRES}" != "none" ]; then
    GRES_ARG=("--gres=${GRES}")
fi

PYTHONPATH="${TOOLS_DIR}/..":$PYTHONPATH \
srun -p "${PARTITION}" \
    --job-name="${JOB_NAME}" \
    "${GRES_ARG[@]}" \
    --ntasks="${GPUS}" \
    --ntasks-per-node="${GPUS_PER_NODE}" \
    --cpus-per-task="${CPUS_PER_TASK}" \
    --kill-on-bad-exit=1 \
    ${SRUN_ARGS} \
    "${PYTHON}" -u "${TOOLS_DIR}/test.py" "${CONFIG}" "${CHECKPOINT}" \
    --launcher="slurm" "${PY_ARGS[@]}"
