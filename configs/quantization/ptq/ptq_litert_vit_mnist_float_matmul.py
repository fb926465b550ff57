# The LiteRT ViT of ptq_litert_vit_mnist.py (same quantization, same
# checkpoint) exported with both attention matmuls in float32 between
# DEQUANTIZE and QUANTIZE, besides LayerNorm (the simulation then
# multiplies in float too); compare with the int8 BATCH_MATMUL of
# ptq_litert_vit_mnist.py (docs/deploy.md).
#   python tools/export.py configs/quantization/ptq/ptq_litert_vit_mnist_float_matmul.py \
#       WORK_DIR/model_ptq.pth --work-dir WORK_DIR --num-samples 1000
_base_ = ['./ptq_litert_vit_mnist.py']

model = dict(
    deploy_cfg=dict(
        backend_config=dict(
            type='litert', float_ops=['LayerNormalization', 'MatMul'])))
