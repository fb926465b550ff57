"""mmyolo's YOLOv5 and RTMDet traced and quantized in tensor, predict and
loss modes with no tracer skips in the config, and trained one step."""
import copy

import torch

from mmrazor_quant.models.codebases import MMYOLOCodebase, codebase_of
from mmrazor_quant.models.fake_quants.utils import (
    disable_fake_quant,
    disable_observer,
)
from mmrazor_quant.models.qat_modules import ConvBn2d
from mmrazor_quant.registry import MODELS
from .tiny_yolos import quant_cfg, tiny_arch


def _float_and_quant(arch_cfg, **kwargs):
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(arch_cfg, **kwargs))
    float_model = MODELS.build(copy.deepcopy(arch_cfg))
    float_model.load_state_dict(model.architecture.state_dict(),
                                strict=False)
    return float_model.eval(), model.eval()


def _flat(outputs):
    return [t for level in outputs for t in level]


def test_modes_match_float_model_with_fake_quants_off(arch_name, canvases):
    float_model, model = _float_and_quant(tiny_arch(arch_name))
    assert isinstance(codebase_of(model.architecture), MMYOLOCodebase)
    x = canvases[:2, :, :64, :64]
    with torch.no_grad():
        model(x, mode='tensor')  # calibrate
    disable_observer(model)
    disable_fake_quant(model)
    with torch.no_grad():
        got, want = model(x, mode='tensor'), float_model(x, mode='tensor')
        # YOLOv5: class scores, boxes, objectness; RTMDet: scores, boxes
        assert len(got) == (3 if arch_name == 'yolov5' else 2)
        for g, w in zip(_flat(got), _flat(want)):
            torch.testing.assert_close(g, w, rtol=1e-3, atol=5e-4)
        samples = MMYOLOCodebase().dummy_data_samples(x, got)
        preds = model(x, copy.deepcopy(samples), mode='predict')
        float_preds = float_model(x, copy.deepcopy(samples), mode='predict')
    for p, f in zip(preds, float_preds):
        torch.testing.assert_close(p.pred_instances.scores[:20],
                                   f.pred_instances.scores[:20], rtol=1e-3,
                                   atol=1e-3)


def test_rtmdet_shared_head_convs_are_untied_per_level():
    """RTMDetSepBNHead shares each conv across the levels with a BN per
    level: quantized, each level owns a conv with its BN folded in, holding
    the shared weights (the float checkpoint's keys load unchanged)."""
    float_model, model = _float_and_quant(tiny_arch('rtmdet'))
    float_convs = float_model.bbox_head.head_module.cls_convs
    assert float_convs[1][0].conv is float_convs[0][0].conv
    convs = model.architecture.bbox_head.head_module.cls_convs
    levels = [convs[i][0].conv for i in range(3)]
    assert all(type(c) is ConvBn2d for c in levels)
    assert len({id(c) for c in levels}) == 3
    for i, conv in enumerate(levels):
        torch.testing.assert_close(conv.weight, float_convs[0][0].conv.weight)
        torch.testing.assert_close(conv.bn.running_var,
                                   float_convs[i][0].bn.running_var)
    keys = set(model.architecture.state_dict())
    assert {f'bbox_head.head_module.cls_convs.{i}.0.conv.weight'
            for i in range(3)} <= keys


def test_loss_step_reaches_weights_and_lsq_scales(arch_name, canvases):
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(tiny_arch(arch_name), lsq=True))
    x = canvases[:2, :, :64, :64]
    with torch.no_grad():
        outputs = model(x, mode='tensor')  # LSQ scales from the observers
    disable_observer(model)
    samples = codebase_of(model.architecture).dummy_data_samples(x, outputs)
    model.train()
    losses = model(x, samples, mode='loss')
    loss = model.parse_losses(losses)[0]
    assert torch.isfinite(loss)
    loss.backward()
    weighted = [m for m in model.architecture.modules()
                if hasattr(m, 'weight_fake_quant')]
    reached = [m for m in weighted if m.weight.grad is not None
               and m.weight.grad.abs().sum() > 0
               and m.weight_fake_quant.scale.grad.abs().sum() > 0]
    assert len(reached) >= 0.9 * len(weighted)
