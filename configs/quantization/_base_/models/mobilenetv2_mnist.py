# The fp32 MNIST MobileNetV2 (configs/fp32/mobilenetv2_mnist.py) wrapped for quantization (MMArchitectureQuant): the float model and
# its checkpoint. PTQ (../../ptq/_base_/) and QAT (../../qat/_base_/) bases
# add their loops; a config adds its backend's qconfig `_base_`.
_base_ = ['../../../fp32/mobilenetv2_mnist.py']

# Written by `make demo` (tools/demo.py); after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/mobilenetv2_mnist/epoch_10.pth
float_checkpoint = 'work_dirs/fp32/mobilenetv2_mnist/float.pth'

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint)
