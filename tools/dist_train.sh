#!/usr/bin/env bash
# Usage: [TOOL=train|ptq] bash tools/dist_train.sh CONFIG GPUS [tool args]
# GPUS processes per node, one per GPU (NCCL for CUDA tensors, see
# docs/distributed.md); without CUDA, GPUS CPU processes over gloo. TOOL=ptq runs
# tools/ptq.py instead of tools/train.py (as in slurm_train.sh).
# Multi-node: NNODES, NODE_RANK, MASTER_ADDR and PORT.
CONFIG=$1
GPUS=$2
NNODES=${NNODES:-1}
NODE_RANK=${NODE_RANK:-0}
PORT=${PORT:-29500}
MASTER_ADDR=${MASTER_ADDR:-"127.0.0.1"}
TOOL=${TOOL:-train}

PYTHONPATH="$(dirname $0)/..":$PYTHONPATH \
torchrun \
    --nnodes=$NNODES \
    --node_rank=$NODE_RANK \
    --master_addr=$MASTER_ADDR \
    --nproc_per_node=$GPUS \
    --master_port=$PORT \
    "$(dirname "$0")/${TOOL}.py" \
    $CONFIG \
    --launcher pytorch "${@:3}"
