#!/usr/bin/env bash
# Digit-canvas detection: train the small RetinaNet, evaluate fp32, then PTQ
# W8A8 for OpenVINO and TensorRT on the same checkpoint (COCO mAP on the 200
# val canvases). Usage: bash benchmarks/detection_digits.sh [CHECKPOINT]
# Without CHECKPOINT it trains first (24 epochs; ~2-5 min on 2 cores idle).
set -euo pipefail
PY=${PY:-.venv/bin/python}
WORK=work_dirs/det
CKPT=${1:-}
if [ -z "$CKPT" ]; then
  $PY tools/train.py configs/detection/retinanet_tiny_digits.py \
    --work-dir $WORK/retinanet_tiny_digits
  CKPT=$WORK/retinanet_tiny_digits/epoch_24.pth
fi
$PY tools/test.py configs/detection/retinanet_tiny_digits.py "$CKPT" \
  --work-dir $WORK/fp32_test
for backend in openvino tensorrt; do
  $PY tools/ptq.py \
    configs/quantization/ptq/detection/ptq_${backend}_retinanet_tiny_digits.py \
    --work-dir $WORK/ptq_$backend \
    --cfg-options model.float_checkpoint="$CKPT"
done
