# W8A8 LSQ quantization-aware training of the fp32 MNIST ViT for OpenVINO
# with NNCF's transformer placement (as the PTQ config). Token activations
# are signed, so they take LSQ+ (a learned scale and zero-point on an
# asymmetric grid); weights take LSQ per channel.
#   python tools/train.py configs/quantization/qat/lsq/lsq_openvino_vit_mnist.py
_base_ = ['../../ptq/ptq_openvino_vit_mnist.py']

global_qconfig = dict(
    w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
    a_observer=dict(type='mmrazor_quant.LSQPlusObserver'),
    w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
    a_fake_quant=dict(type='mmrazor_quant.LSQPlusFakeQuantize'),
    # the PTQ config's weight grid; activations on the unsigned one
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=False),
)
model = dict(quantizer=dict(global_qconfig=global_qconfig))

# One epoch of fine-tuning from the float model, SGD with a cosine decay
# stepped per iteration; no weight decay on the learned qparams.
max_epochs = 1
optim_wrapper = dict(
    _delete_=True,
    optimizer=dict(type='SGD', lr=1e-4, momentum=0.9, weight_decay=1e-4),
    paramwise_cfg=dict(custom_keys={
        '.scale': dict(decay_mult=0.0),
        '.zero_point': dict(decay_mult=0.0)
    }))
param_scheduler = [
    dict(
        type='CosineAnnealingLR',
        eta_min=0.0,
        by_epoch=True,
        begin=0,
        end=max_epochs,
        convert_to_iter_based=True)
]

train_cfg = dict(
    _delete_=True,
    type='mmrazor_quant.LSQEpochBasedLoop',
    max_epochs=max_epochs,
    val_interval=1)
val_cfg = dict(_delete_=True, type='mmrazor_quant.QATValLoop')
test_cfg = dict(_delete_=True)
