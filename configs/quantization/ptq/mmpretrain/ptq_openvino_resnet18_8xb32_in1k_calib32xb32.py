# MMRazor's ptq_openvino_resnet18_8xb32_in1k_calib32xb32 rewritten onto
# mmpretrain (mmcls's successor): the same W8A8 OpenVINO scheme (per-channel
# symmetric int8 weights on [-127, 127], per-tensor unsigned symmetric
# activations, moving-average ranges over 32 calibration batches of 32),
# with mmpretrain's ResNet-18 config, data preprocessor and head.
#   python tools/ptq.py configs/quantization/ptq/mmpretrain/ptq_openvino_resnet18_8xb32_in1k_calib32xb32.py
# It needs ImageNet in data/imagenet (mmpretrain's layout: train/, val/,
# meta/{train,val}.txt).
_base_ = [
    'mmpretrain::resnet/resnet18_8xb32_in1k.py',
    '../../deploy_cfgs/mmpretrain/classification_openvino_dynamic-224x224.py',  # noqa: E501
    '../../_base_/qconfigs/openvino_w8a8.py', '../_base_/calib32_ddp.py'
]

# mmpretrain's ResNet-18 weights are mmcls's (the same state dict keys).
float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet/resnet18_8xb32_in1k_20210831-fbbb1da6.pth'  # noqa: E501

# Calibrate on training images seen through the deterministic test
# pipeline (resize + centre crop).
calibrate_dataloader = dict(
    batch_size=32,
    num_workers=5,
    dataset=dict(_base_.train_dataloader.dataset,
                 pipeline=_base_.test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmpretrain.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    deploy_cfg=_base_.deploy_cfg,
    float_checkpoint=float_checkpoint,
    quantizer=_base_.quantizer)

test_cfg = dict(
    _delete_=True,
    calibrate_dataloader=calibrate_dataloader,
    **_base_.ptq_loop)
