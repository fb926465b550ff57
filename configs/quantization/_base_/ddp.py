# The DDP wrapper of a quantized model (MMRazor's): buffers (observer
# statistics, scales) are synchronised by SyncBuffersHook and the quantizer,
# not broadcast; branches may be unused in a step (e.g. a frozen observer).
model_wrapper_cfg = dict(
    type='mmrazor_quant.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)
