"""Hand a config's test pipeline to its quantized model.

``MMArchitectureQuant`` is built from ``cfg.model`` alone, which does not
hold the data; the size its test pipeline crops or resizes to is the best
input shape to trace a model that reads its shapes. The tools (and every
helper that builds the model from a whole config) call
:func:`add_test_pipeline` first.
"""
import copy
from typing import List, Optional

from mmengine.config import Config

__all__ = ['test_pipeline_of', 'with_test_pipeline', 'add_test_pipeline']


def test_pipeline_of(cfg: Config) -> Optional[List[dict]]:
    """The pipeline of ``cfg.test_dataloader.dataset`` (else the top-level
    ``test_pipeline``), or None if the config has neither."""
    loader = cfg.get('test_dataloader') or {}
    dataset = loader.get('dataset') or {} if isinstance(loader, dict) else {}
    pipeline = dataset.get('pipeline') if isinstance(dataset, dict) else None
    if pipeline is None:
        pipeline = cfg.get('test_pipeline')
    return None if pipeline is None else [dict(t) for t in pipeline]


def with_test_pipeline(model_cfg: dict, cfg: Config) -> dict:
    """``model_cfg`` with ``test_pipeline`` set from ``cfg``'s test data.

    Only for a quantized model (``architecture`` and ``quantizer``
    present) that sets neither ``input_shape`` nor ``test_pipeline``
    itself; any other ``model_cfg`` is returned as it is.

    Args:
        model_cfg (dict): A model config (e.g. ``cfg.model``); not changed.
        cfg (Config): The whole config, with ``test_dataloader``.

    Returns:
        dict: A shallow copy with ``test_pipeline``, or ``model_cfg``.
    """
    if not isinstance(model_cfg, dict) or 'architecture' not in model_cfg \
            or 'quantizer' not in model_cfg \
            or model_cfg.get('input_shape') is not None \
            or model_cfg.get('test_pipeline') is not None:
        return model_cfg
    pipeline = test_pipeline_of(cfg)
    if pipeline is None:
        return model_cfg
    model_cfg = copy.copy(model_cfg)
    model_cfg['test_pipeline'] = pipeline
    return model_cfg


def add_test_pipeline(cfg: Config) -> Config:
    """Set ``cfg.model.test_pipeline`` from the config's test data (see
    :func:`with_test_pipeline`) and return ``cfg``."""
    cfg.model = with_test_pipeline(cfg.get('model'), cfg)
    return cfg
