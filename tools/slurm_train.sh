#!/usr/bin/env bash
# Usage: [GPUS=8] [GPUS_PER_NODE=8] [CPUS_PER_TASK=5] [SRUN_ARGS=...] \
#   bash tools/slurm_train.sh PARTITION JOB_NAME CONFIG [WORK_DIR] [train.py args]
#
# One task per GPU, GPUS tasks in all, GPUS_PER_NODE per node, NCCL between
# the GPUs. On CPU-only partitions set GRES=none (no `--gres=gpu:N` request);
# each task then is a process of a gloo group. TOOL=ptq runs tools/ptq.py instead of train.py
# (same arguments), PYTHON picks the interpreter on the nodes.
# OMP_NUM_THREADS defaults to CPUS_PER_TASK so tasks do not oversubscribe.
set -x

PARTITION=$1
JOB_NAME=$2
CONFIG=$3
GPUS=${GPUS:-8}
GPUS_PER_NODE=${GPUS_PER_NODE:-8}
CPUS_PER_TASK=${CPUS_PER_TASK:-5}
SRUN_ARGS=${SRUN_ARGS:-""}
GRES=${GRES:-gpu:${GPUS_PER_NODE}}
TOOL=${TOOL:-train}
PYTHON=${PYTHON:-python}
TOOLS_DIR=$(cd "$(dirname "$0")" && pwd)
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-${CPUS_PER_TASK}}

# WORK_DIR is optional: a 4th argument starting with "-" is a train.py flag.
WORK_DIR_ARG=()
if [ $# -ge 4 ] && [ "${4#-}" = "$4" ]; then
    WORK_DIR_ARG=("--work-dir=$4")
    PY_ARGS=("${@:5}")
else
    PY_ARGS=("${@:4}")
fi
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
    "${PYTHON}" -u "${TOOLS_DIR}/${TOOL}.py" "${CONFIG}" "${WORK_DIR_ARG[@]}" \
    --launcher="slurm" "${PY_ARGS[@]}"
