# The fp32 MNIST ViT (configs/fp32/vit_mnist.py) wrapped for quantization
# (MMArchitectureQuant): the float model and its checkpoint, shape-aware
# capture (the mmcls adapter keeps ClsHead's loss and predictions out of the
# graph). PTQ (../../ptq/_base_/) and QAT bases add their loops; a config
# adds its backend's qconfig `_base_`.
_base_ = ['../../../fp32/vit_mnist.py']

# Written by `make demo` (tools/demo.py).
float_checkpoint = 'work_dirs/fp32/vit_mnist/float.pth'

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    # shape-aware capture: the patch embedding pads from the input size
    input_shape=(1, 28, 28))
