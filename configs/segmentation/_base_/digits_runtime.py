# The runtime of the digit segmentation models: mmseg's default runtime
# and the digit canvases, epoch-based loops on CPU.
_base_ = [
    'mmseg::_base_/default_runtime.py',
    '../../_base_/datasets/digit_canvas_seg.py',
]
custom_imports = dict(
    imports=['mmseg.datasets', 'mmseg.evaluation', 'mmseg.models',
             'mmrazor_quant.datasets'],
    allow_failed_imports=False)

num_classes = 11  # background + the ten digits
val_cfg = dict(type='ValLoop')
test_cfg = dict(type='TestLoop')
log_processor = dict(by_epoch=True)
default_hooks = dict(logger=dict(type='LoggerHook', interval=25))
# torch's device-mapped backend: NCCL for CUDA tensors, gloo for CPU ones.
env_cfg = dict(dist_cfg=dict(backend='cpu:gloo,cuda:nccl'))
randomness = dict(seed=0, deterministic=False)
