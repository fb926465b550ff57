# The scheme-independent part of QAT of the fp32 MNIST ResNet-18: the float
# model and checkpoint, a tracer that keeps ClsHead's loss and predictions
# out of the graph, the DDP wrapper, the QAT validation loop and the BN
# buffer sync. A config adds a qconfig `_base_`, sets `model.quantizer` and
# writes its schedule and training loop.
_base_ = ['../../../fp32/resnet18_mnist.py']

# Written by `make demo` (tools/demo.py); after your own fp32 training pass
# --cfg-options model.float_checkpoint=work_dirs/resnet18_mnist/epoch_6.pth
float_checkpoint = 'work_dirs/fp32/resnet18_mnist/float.pth'

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=_base_.model,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        tracer=dict(
            type='mmrazor_quant.CustomTracer',
            skipped_methods=[
                'mmcls.models.heads.ClsHead._get_loss',
                'mmcls.models.heads.ClsHead._get_predictions'
            ])))

model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')

# BN buffers averaged across ranks before each checkpoint (DDP runs with
# broadcast_buffers=False).
default_hooks = dict(sync=dict(type='SyncBuffersHook'))
