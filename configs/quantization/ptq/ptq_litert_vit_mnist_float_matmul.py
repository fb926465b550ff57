# The LiteRT ViT of ptq_litert_vit_mnist.py (same quantization, same
# checkpoint) exported with both attention matmuls in float32 between
# DEQUANTIZE and QUANTIZE, besides LayerNorm: TFLite's int8 BATCH_MATMUL
# rounds its requantization twice, which costs the ViT its 35 dB
# (docs/deploy.md).
#   python tools/export.py configs/quantization/ptq/ptq_litert_vit_mnist_float_matmul.py \
#       WORK_DIR/model_ptq.pth --work-dir WORK_DIR --num-samples 1000
_base_ = ['./ptq_litert_vit_mnist.py']

model = dict(
    deploy_cfg=dict(
        backend_config=dict(
            type='litert', float_ops=['LayerNormalization', 'MatMul'])))
