_base_ = ['mmcls::_base_/default_runtime.py']

# mmcls builds the models, transforms and metrics; our own modules are named
# with the ``mmrazor_quant.`` prefix, and this import registers them.
default_scope = 'mmcls'
custom_imports = dict(
    imports=['mmrazor_quant.datasets'], allow_failed_imports=False)

default_hooks = dict(
    logger=dict(type='LoggerHook', interval=20),
    checkpoint=dict(type='CheckpointHook', interval=1, max_keep_ckpts=2))

# torch's device-mapped backend: NCCL for CUDA tensors on GPU machines, gloo
# for CPU tensors (and on CPU-only machines, see mmrazor_quant/engine/dist.py).
env_cfg = dict(dist_cfg=dict(backend='cpu:gloo,cuda:nccl'))

# A fixed seed makes the demo numbers reproducible.
randomness = dict(seed=0, deterministic=False)
