"""Principle 4 (docs/architecture.md) on real mmcls models: a graph traced
on a batch-2 example at
one resolution runs at other batch sizes and resolutions where the model
allows, and a resolution-dependent decision raises ShapeGuardError."""
import pytest
import torch
from mmengine.hub import get_config

from mmrazor_quant.models.task_modules import CustomTracer
from mmrazor_quant.models.task_modules.tracer.shape_guards import (
    ShapeGuardError,
)


def _model(config: str, **backbone):
    from mmcls.registry import MODELS
    from mmcls.utils import register_all_modules
    register_all_modules()
    cfg = get_config(config)
    cfg.model.backbone.update(backbone)
    torch.manual_seed(0)
    return MODELS.build(cfg.model).eval()


def _traced(model, size: int):
    return CustomTracer(input_shape=(3, size, size)).trace_mode(
        model, 'tensor')


def test_shufflenet_traced_at_64_runs_at_other_batch_and_96():
    model = _model('mmcls::shufflenet_v2/shufflenet-v2-1x_16xb64_in1k.py')
    gm = _traced(model, 64)
    with torch.no_grad():
        for shape in [(5, 3, 64, 64), (1, 3, 96, 96)]:
            x = torch.randn(shape)
            torch.testing.assert_close(gm(x), model(x, mode='tensor'),
                                       atol=0, rtol=0)


def test_deit_pos_embed_resize_is_guarded():
    model = _model('mmcls::deit/deit-tiny_pt-4xb256_in1k.py', img_size=64)
    gm = _traced(model, 64)
    with torch.no_grad():
        x = torch.randn(3, 3, 64, 64)
        torch.testing.assert_close(gm(x), model(x, mode='tensor'),
                                   atol=0, rtol=0)
        # At 96 the model interpolates its position embedding: a branch
        # the graph traced at 64 did not take.
        with pytest.raises(
                ShapeGuardError,
                match=r"module 'backbone' at .*embed.py:\d+ "
                r'\(resize_pos_embed\)'):
            gm(torch.randn(2, 3, 96, 96))
