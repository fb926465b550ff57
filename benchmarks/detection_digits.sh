#!/usr/bin/env bash
# Digit-canvas detection: train a small detector, evaluate fp32, then PTQ
# W8A8 for OpenVINO and TensorRT on the same checkpoint (COCO mAP on the 200
# val canvases).
# Usage: bash benchmarks/detection_digits.sh [retinanet|yolox] [CHECKPOINT]
# Without CHECKPOINT it trains first (RetinaNet 24 epochs, YOLOX 16; on 2
# idle cores about 2 s and 0.4 s per iteration, 50 iterations an epoch).
set -euo pipefail
PY=${PY:-.venv/bin/python}
MODEL=${1:-retinanet}
CKPT=${2:-}
case $MODEL in
  retinanet) EPOCHS=24 ;;
  yolox) EPOCHS=16 ;;
  *) echo "model must be retinanet or yolox, got $MODEL" >&2; exit 2 ;;
esac
CONFIG=configs/detection/${MODEL}_tiny_digits.py
WORK=work_dirs/det
if [ -z "$CKPT" ]; then
  $PY tools/train.py "$CONFIG" --work-dir $WORK/${MODEL}_tiny_digits
  CKPT=$WORK/${MODEL}_tiny_digits/epoch_$EPOCHS.pth
fi
$PY tools/test.py "$CONFIG" "$CKPT" --work-dir $WORK/${MODEL}_fp32_test
for backend in openvino tensorrt; do
  $PY tools/ptq.py \
    configs/quantization/ptq/detection/ptq_${backend}_${MODEL}_tiny_digits.py \
    --work-dir $WORK/${MODEL}_ptq_$backend \
    --cfg-options model.float_checkpoint="$CKPT"
done
