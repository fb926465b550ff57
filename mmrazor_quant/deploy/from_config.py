"""Build a quantized model and its test data from a config, for the deploy
tools (``tools/export.py``, ``tools/test_deployed.py``)."""
from typing import Iterator, Optional, Tuple

import torch
from mmengine.config import Config
from mmengine.evaluator import Evaluator
from mmengine.registry import init_default_scope
from mmengine.runner import Runner, load_checkpoint
from torch import Tensor, nn

__all__ = [
    'load_quantized_model', 'preprocessed_batches', 'build_test_evaluator'
]


def load_quantized_model(cfg: Config, checkpoint: str) -> nn.Module:
    """The config's ``MMArchitectureQuant`` with ``checkpoint`` loaded.

    The float checkpoint is not read (the quantized checkpoint holds every
    weight and qparam), and loading goes through torch's ``weights_only``
    path with mmengine's types allowed.

    Args:
        cfg (Config): A quantization config (``model.type`` an
            ``MMArchitectureQuant``).
        checkpoint (str): A PTQ/QAT checkpoint (e.g. ``model_ptq.pth``).

    Returns:
        nn.Module: In eval mode.

    Raises:
        ValueError: If the config's model is not quantized.
    """
    from mmrazor_quant.registry import MODELS, register_all_modules
    from mmrazor_quant.utils import register_checkpoint_safe_globals
    from mmrazor_quant.utils.data_pipeline import with_test_pipeline
    register_all_modules(init_default_scope=False)
    register_checkpoint_safe_globals()
    init_default_scope(cfg.get('default_scope', 'mmcls'))
    model_cfg = dict(with_test_pipeline(cfg.model, cfg))
    if 'quantizer' not in model_cfg:
        raise ValueError('model: the config does not describe a quantized '
                         'model (no model.quantizer); pass a config under '
                         'configs/quantization/')
    model_cfg['float_checkpoint'] = None
    model = MODELS.build(model_cfg)
    load_checkpoint(model, checkpoint, map_location='cpu', strict=True)
    return model.eval()


def preprocessed_batches(model: nn.Module, cfg: Config,
                         num_samples: Optional[int] = None
                         ) -> Iterator[Tuple[Tensor, list]]:
    """``(inputs, data_samples)`` of the config's test dataloader, run
    through ``model.data_preprocessor``.

    Args:
        model (nn.Module): Holds the data preprocessor.
        cfg (Config): Has ``test_dataloader``.
        num_samples (int, optional): Stop after this many samples (the
            last batch is cut). Defaults to None (the whole set).

    Yields:
        tuple: A float input batch and its data samples.
    """
    loader = Runner.build_dataloader(cfg.test_dataloader)
    seen = 0
    with torch.no_grad():
        for data in loader:
            batch = model.data_preprocessor(data, False)
            inputs, samples = batch['inputs'], batch['data_samples']
            if num_samples is not None:
                inputs = inputs[:num_samples - seen]
                samples = samples[:len(inputs)]
            seen += len(inputs)
            yield inputs.float().contiguous(), samples
            if num_samples is not None and seen >= num_samples:
                return


def build_test_evaluator(cfg: Config) -> Evaluator:
    """The config's ``test_evaluator`` (e.g. mmcls ``Accuracy``)."""
    return Evaluator(cfg.test_evaluator)
