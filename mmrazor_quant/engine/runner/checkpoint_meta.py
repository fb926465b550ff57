"""The package and quantization-state format versions in a checkpoint's
``meta``, for the checkpoints the Runner writes (``epoch_N.pth``,
``iter_N.pth``); ``PTQLoop`` adds them to ``model_ptq.pth`` itself."""
from mmengine.hooks import Hook

from mmrazor_quant.models.algorithms.quant_state_format import quant_state_meta

__all__ = ['QuantStateMetaHook', 'add_quant_state_meta_hook']


class QuantStateMetaHook(Hook):
    """Adds ``meta['mmrazor_quant'] = {'version', 'quant_state_format'}``
    to every checkpoint the Runner saves."""

    priority = 'VERY_LOW'

    def before_save_checkpoint(self, runner, checkpoint: dict) -> None:
        checkpoint.setdefault('meta', {}).update(quant_state_meta())


def add_quant_state_meta_hook(runner) -> None:
    """Register :class:`QuantStateMetaHook` on ``runner`` once."""
    if not any(isinstance(h, QuantStateMetaHook) for h in runner.hooks):
        runner.register_hook(QuantStateMetaHook(), priority='VERY_LOW')
