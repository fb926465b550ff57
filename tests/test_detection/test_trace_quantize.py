"""mmdet detectors traced and quantized in tensor, predict and loss modes."""
import copy
import re

import pytest
import torch

from mmrazor_quant.models.fake_quants.utils import (
    disable_fake_quant,
    disable_observer,
)
from mmrazor_quant.registry import MODELS
from ..test_models.test_quantizers.test_positions import fake_quant_consumers
from .toy_detectors import quant_cfg, retinanet_cfg, yolox_cfg, yolox_pafpn_cfg

# Fake quant -> consumers in the tiny RetinaNet (two conv-bn-relu stages,
# 2-level FPN, one conv per head branch and level), derived by hand from
# docs/backends.md: every conv input quantized once (shared by the cls and
# reg branches), no output of a final conv quantized; OpenVINO quantizes both
# inputs of the FPN's top-down add, TensorRT only the one that is not a conv
# output (the conv fuses the add as its residual). The nearest upsampling
# gets its own fake quant (same qparams domain: it only copies values).
COMMON = {
    'inputs': ['backbone_conv1'],
    'backbone_conv1': ['backbone_conv2', 'neck_lateral_convs_0_conv'],
    'backbone_conv2': ['neck_lateral_convs_1_conv'],
    'neck_lateral_convs_1_conv': ['neck_fpn_convs_1_conv'],
    'neck_interpolate': ['add'],
    'neck_add': ['neck_fpn_convs_0_conv'],
    'neck_fpn_convs_0_conv':
    ['bbox_head_cls_convs_0_conv', 'bbox_head_reg_convs_0_conv'],
    'neck_fpn_convs_1_conv':
    ['bbox_head_cls_convs_0_conv_1', 'bbox_head_reg_convs_0_conv_1'],
    'bbox_head_cls_convs_0_activate': ['bbox_head_retina_cls'],
    'bbox_head_reg_convs_0_activate': ['bbox_head_retina_reg'],
    'bbox_head_cls_convs_0_activate_1': ['bbox_head_retina_cls_1'],
    'bbox_head_reg_convs_0_activate_1': ['bbox_head_retina_reg_1'],
}
EXPECTED = {
    'openvino': dict(COMMON, neck_lateral_convs_0_conv=['add']),
    'tensorrt': COMMON,
}
WEIGHTED = {
    'backbone.conv1', 'backbone.conv2', 'neck.lateral_convs.0.conv',
    'neck.lateral_convs.1.conv', 'neck.fpn_convs.0.conv',
    'neck.fpn_convs.1.conv', 'bbox_head.cls_convs.0.conv',
    'bbox_head.reg_convs.0.conv', 'bbox_head.retina_cls',
    'bbox_head.retina_reg'
}


@pytest.mark.parametrize('backend', ['openvino', 'tensorrt'])
def test_fpn_head_positions_follow_rule_table(backend):
    model = MODELS.build(quant_cfg(retinanet_cfg(), backend))
    table = fake_quant_consumers(model.qmodels['tensor'].graph)
    assert table == {k: sorted(v) for k, v in EXPECTED[backend].items()}
    weighted = {
        name
        for name, m in model.architecture.named_modules()
        if hasattr(m, 'weight_fake_quant')
    }
    assert weighted == WEIGHTED
    # BN folded into the backbone convs in every mode
    for gm in model.qmodels.values():
        assert not any('bn' in str(n.target) for n in gm.graph.nodes)


# The tiny YOLOX (two conv-relu stages, 2-level PAFPN, one CSP bottleneck
# per path without identity, one conv per head branch; Swish = x *
# sigmoid(x) everywhere but the backbone), by hand from docs/backends.md:
# every conv input quantized once; Swish is an activation fused into its
# conv, so the fake quant sits after the product, never on its two inputs;
# concat and the nearest upsampling are agnostic (the cat's consumer
# quantizes the cat output); no add in the graph, so OpenVINO and TensorRT
# agree. The backbone's first output reaches the top-down cat unquantized.
PAFPN = 'neck_{}_blocks_0_'
YOLOX_EXPECTED = {
    'inputs': ['backbone_conv1'],
    'backbone_conv1': ['backbone_conv2'],
    'backbone_conv2': ['neck_reduce_layers_0_conv'],
    # upsample(reduce(c2)) ++ c1, and downsample(top-down out) ++ reduce(c2)
    'neck_cat': [PAFPN.format('top_down') + 'main_conv_conv',
                 PAFPN.format('top_down') + 'short_conv_conv'],
    'neck_cat_1': [PAFPN.format('bottom_up') + 'main_conv_conv',
                   PAFPN.format('bottom_up') + 'short_conv_conv'],
}
for path in ('top_down', 'bottom_up'):
    block = PAFPN.format(path)
    YOLOX_EXPECTED.update({
        block + 'main_conv_activate_mul': [block + 'blocks_0_conv1_conv'],
        block + 'blocks_0_conv1_activate_mul': [block + 'blocks_0_conv2_conv'],
        block + 'cat': [block + 'final_conv_conv'],
    })
YOLOX_EXPECTED.update({
    PAFPN.format('top_down') + 'final_conv_activate_mul':
    ['neck_downsamples_0_conv', 'neck_out_convs_0_conv'],
    PAFPN.format('bottom_up') + 'final_conv_activate_mul':
    ['neck_out_convs_1_conv'],
})
for level in (0, 1):
    head = 'bbox_head_multi_level_'
    YOLOX_EXPECTED.update({
        f'neck_out_convs_{level}_activate_mul':
        [f'{head}cls_convs_{level}_0_conv', f'{head}reg_convs_{level}_0_conv'],
        f'{head}cls_convs_{level}_0_activate_mul': [f'{head}conv_cls_{level}'],
        f'{head}reg_convs_{level}_0_activate_mul':
        [f'{head}conv_obj_{level}', f'{head}conv_reg_{level}'],
    })


@pytest.mark.parametrize('backend', ['openvino', 'tensorrt'])
def test_pafpn_head_positions_follow_rule_table(backend):
    model = MODELS.build(quant_cfg(yolox_pafpn_cfg(), backend))
    table = fake_quant_consumers(model.qmodels['tensor'].graph)
    assert table == {k: sorted(v) for k, v in YOLOX_EXPECTED.items()}
    weighted = {
        name
        for name, m in model.architecture.named_modules()
        if hasattr(m, 'weight_fake_quant')
    }
    # every conv: 2 backbone, 1 reduce, 5 per CSP layer, 1 downsample,
    # 2 out, 10 head
    convs = {
        name
        for name, m in model.architecture.named_modules()
        if hasattr(m, 'kernel_size') and hasattr(m, 'weight')
    }
    assert weighted == convs and len(weighted) == 26


def _float_and_quant(arch_cfg, backend):
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(arch_cfg, backend))
    # The type's scope, as MMArchitectureQuant builds it: nested builds
    # (box coders, losses) must not search another test's default scope.
    float_model = MODELS.build(dict(copy.deepcopy(arch_cfg), _scope_='mmdet'))
    float_model.load_state_dict(model.architecture.state_dict(),
                                strict=False)
    return float_model.eval(), model.eval()


@pytest.mark.parametrize('arch', ['retinanet', 'yolox'])
def test_modes_match_float_model_with_fake_quants_off(arch, det_batch):
    arch_cfg = {'retinanet': retinanet_cfg, 'yolox': yolox_cfg}[arch]()
    float_model, model = _float_and_quant(arch_cfg, 'openvino')
    data = model.data_preprocessor(det_batch, False)
    # Calibrate, then switch fake quants off: BN-folded graphs == float.
    with torch.no_grad():
        model(**data, mode='tensor')
    disable_observer(model)
    disable_fake_quant(model)
    with torch.no_grad():
        got = model(**data, mode='tensor')
        want = float_model(**data, mode='tensor')
        flat = [t for level in want for t in level]
        assert len(flat) == len([t for level in got for t in level])
        # Folding BN into the convs reorders fp32 arithmetic through
        # YOLOX's ~20 conv layers: errors of a few ulps of the largest
        # intermediate values, not of each output.
        for g, w in zip([t for level in got for t in level], flat):
            torch.testing.assert_close(g, w, rtol=1e-3, atol=5e-4)
        preds = model(**copy.deepcopy(data), mode='predict')
        float_preds = float_model(**copy.deepcopy(data), mode='predict')
    for p, f in zip(preds, float_preds):
        torch.testing.assert_close(p.pred_instances.bboxes,
                                   f.pred_instances.bboxes, rtol=1e-3,
                                   atol=1e-2)
        assert torch.equal(p.pred_instances.labels, f.pred_instances.labels)


@pytest.mark.parametrize('arch', ['retinanet', 'yolox'])
def test_loss_mode_trains_weights_and_lsq_scales(arch, det_batch):
    arch_cfg = {'retinanet': retinanet_cfg, 'yolox': yolox_cfg}[arch]()
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(arch_cfg, 'openvino', lsq=True))
    data = model.data_preprocessor(det_batch, True)
    with torch.no_grad():
        model(**data, mode='tensor')  # LSQ scales from the observers
    disable_observer(model)

    def total_loss():
        losses = model(**data, mode='loss')
        return model.parse_losses(losses)[0]

    loss = total_loss()
    loss.backward()
    # YOLOX's cls and box losses cover only the positive priors: a level
    # without one (the 2x2 stride-32 grid, level 2, here) sends those
    # branches no gradient; its objectness branch still gets one.
    def reached(name):
        return arch != 'yolox' or not re.search(r'(cls|reg).*[._]2([._]|$)',
                                                name)

    arch_module = model.architecture
    weighted = {
        name: m
        for name, m in arch_module.named_modules()
        if hasattr(m, 'weight_fake_quant')
    }
    with_grad = {
        name
        for name, m in weighted.items()
        if m.weight.grad.abs().sum() > 0
        and m.weight_fake_quant.scale.grad.abs().sum() > 0
    }
    assert {n for n in weighted if reached(n)} <= with_grad
    assert len(with_grad) >= 0.9 * len(weighted)
    act = dict(arch_module.act_fake_quants.named_children())
    act_with_grad = {
        name
        for name, fq in act.items()
        if fq.scale.grad is not None and fq.scale.grad.abs().sum() > 0
    }
    assert {n for n in act if reached(n)} <= act_with_grad
    assert len(act_with_grad) >= 0.9 * len(act)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    first = loss.item()
    for _ in range(5):
        optimizer.step()
        optimizer.zero_grad()
        loss = total_loss()
        loss.backward()
    assert loss.item() < first


def test_detector_builds_in_its_own_scope_under_a_foreign_default_scope():
    """``mmdet.RetinaNet`` inside an mmcls run: the detector's nested builds
    (box coder, losses) come from mmdet, not from the default scope."""
    from mmdet.models.losses import FocalLoss
    from mmdet.models.task_modules import DeltaXYWHBBoxCoder
    from mmengine.registry import DefaultScope
    with DefaultScope.overwrite_default_scope('mmcls'):
        model = MODELS.build(quant_cfg(retinanet_cfg(), 'openvino'))
    head = model.architecture.bbox_head
    assert isinstance(head.bbox_coder, DeltaXYWHBBoxCoder)
    assert isinstance(head.loss_cls, FocalLoss)
