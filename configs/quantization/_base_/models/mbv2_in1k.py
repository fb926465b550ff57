# mmcls's ImageNet MobileNetV2 (MMRazor's setting) wrapped for quantization (MMArchitectureQuant): the float model and
# its checkpoint. PTQ (../../ptq/_base_/) and QAT (../../qat/_base_/) bases
# add their loops; a config adds its backend's qconfig `_base_`.
_base_ = ['mmcls::mobilenet_v2/mobilenet-v2_8xb32_in1k.py']

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/mobilenet_v2/mobilenet_v2_batch256_imagenet_20200708-3b2dc3af.pth'  # noqa: E501

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint)
