"""An MMRazor LSQ QAT checkpoint, written key by key in MMRazor's layout,
loads into our MMArchitectureQuant (weights, BN, weight fake quants)."""
import math

import pytest
import torch

from mmrazor_quant.compat.mmrazor_checkpoint import (
    convert_mmrazor_state_dict,
    load_mmrazor_checkpoint,
)
from mmrazor_quant.models.fake_quants.utils import named_fake_quants
from mmrazor_quant.registry import MODELS, register_all_modules
from ..test_engine.toy import quant_model, tiny_net_registered

# Float layers of the toy classifier: backbone.layers = conv(1->4), bn,
# relu, conv(4->8), bn, relu; head.fc = Linear(8, 10).
CONV_BN = {'backbone.layers.0': (4, 1), 'backbone.layers.3': (8, 4)}
BN_OF = {'backbone.layers.0': 'backbone.layers.1',
         'backbone.layers.3': 'backbone.layers.4'}


@pytest.fixture(autouse=True)
def registered():
    register_all_modules(init_default_scope=False)
    with tiny_net_registered():
        yield


def lsq_weight_fake_quant(prefix, channels, seed):
    """MMRazor's LearnableFakeQuantize (per-channel, zero point fixed) with
    its LSQPerChannelObserver, as torch.ao registers them."""
    g = torch.Generator().manual_seed(seed)
    return {
        prefix + 'scale': torch.rand(channels, generator=g) / 50 + 1e-3,
        prefix + 'zero_point': torch.zeros(channels),
        prefix + 'fake_quant_enabled': torch.tensor([1], dtype=torch.uint8),
        prefix + 'observer_enabled': torch.tensor([1], dtype=torch.uint8),
        prefix + 'static_enabled': torch.tensor([0], dtype=torch.uint8),
        prefix + 'learning_enabled': torch.tensor([1], dtype=torch.uint8),
        prefix + 'eps': torch.tensor([torch.finfo(torch.float32).eps]),
        prefix + 'activation_post_process.eps':
        torch.tensor([torch.finfo(torch.float32).eps]),
        prefix + 'activation_post_process.min_val': -torch.rand(channels,
                                                                generator=g),
        prefix + 'activation_post_process.max_val': torch.rand(channels,
                                                               generator=g),
    }


def lsq_activation_fake_quant(prefix, scale):
    return {
        prefix + 'scale': torch.tensor([scale]),
        prefix + 'zero_point': torch.tensor([0.]),
        prefix + 'fake_quant_enabled': torch.tensor([1], dtype=torch.uint8),
        prefix + 'observer_enabled': torch.tensor([1], dtype=torch.uint8),
        prefix + 'static_enabled': torch.tensor([0], dtype=torch.uint8),
        prefix + 'learning_enabled': torch.tensor([1], dtype=torch.uint8),
        prefix + 'eps': torch.tensor([torch.finfo(torch.float32).eps]),
        prefix + 'activation_post_process.eps':
        torch.tensor([torch.finfo(torch.float32).eps]),
        prefix + 'activation_post_process.min_val': torch.tensor(0.),
        prefix + 'activation_post_process.max_val': torch.tensor(4.),
    }


def mmrazor_state_dict():
    """MMArchitectureQuant.state_dict() of MMRazor for the toy model with
    forward_modes ('tensor', 'predict', 'loss'): the float architecture,
    then per mode a torch.ao GraphModule with ConvBnReLU2d at the conv's
    path, a QAT Linear, and activation_post_process_N at its root."""
    g = torch.Generator().manual_seed(0)
    weights = {}
    for path, (out_c, in_c) in CONV_BN.items():
        weights[path + '.weight'] = torch.randn(out_c, in_c, 3, 3,
                                                generator=g)
        weights[path + '.bn.weight'] = torch.rand(out_c, generator=g) + .5
        weights[path + '.bn.bias'] = torch.randn(out_c, generator=g)
        weights[path + '.bn.running_mean'] = torch.randn(out_c, generator=g)
        weights[path + '.bn.running_var'] = torch.rand(out_c, generator=g) + 1
        weights[path + '.bn.num_batches_tracked'] = torch.tensor(37)
    weights['head.fc.weight'] = torch.randn(10, 8, generator=g)
    weights['head.fc.bias'] = torch.randn(10, generator=g)

    sd = {}
    for key, value in weights.items():  # the float architecture
        path, _, leaf = key.rpartition('.')
        if path.endswith('.bn'):
            key = BN_OF[path[:-3]] + '.' + leaf
        sd['architecture.' + key] = value
    for mode in ('tensor', 'predict', 'loss'):
        prefix = f'qmodels.{mode}.'
        for key, value in weights.items():
            sd[prefix + key] = value
        for seed, (path, (out_c, _)) in enumerate(CONV_BN.items()):
            sd.update(lsq_weight_fake_quant(
                f'{prefix}{path}.weight_fake_quant.', out_c, seed))
        sd.update(lsq_weight_fake_quant(
            f'{prefix}head.fc.weight_fake_quant.', 10, 7))
        for n in (0, 1, 3):  # 2 was deleted as redundant
            sd.update(lsq_activation_fake_quant(
                f'{prefix}activation_post_process_{n}.', 0.1 * (n + 1)))
    return sd, weights


def test_mmrazor_lsq_checkpoint_loads():
    model = MODELS.build(quant_model('lsq'))
    sd, weights = mmrazor_state_dict()
    report = load_mmrazor_checkpoint(model, dict(state_dict=sd))
    arch = model.architecture
    for key, value in weights.items():
        assert torch.equal(arch.state_dict()[key], value), key
    fq = arch.backbone.layers[0].weight_fake_quant
    mm = 'qmodels.predict.backbone.layers.0.weight_fake_quant.'
    scale, zero_point = fq.get_qparams()
    assert torch.equal(scale, sd[mm + 'scale'])
    assert torch.equal(zero_point, torch.zeros(4, dtype=torch.int32))
    assert torch.equal(fq.observer.min_val,
                       sd[mm + 'activation_post_process.min_val'])
    assert int(fq.observer_enabled[0]) == 0  # MMRazor's static_enabled
    # The QAT conv computes with the loaded weights and scales: compare to
    # the BN-folded, fake-quantized weight computed here.
    bn = arch.backbone.layers[0].bn
    w = weights['backbone.layers.0.weight']
    folded = w * (bn.weight / torch.sqrt(bn.running_var + bn.eps)).reshape(
        -1, 1, 1, 1)
    s = sd[mm + 'scale'].reshape(-1, 1, 1, 1)
    expected = torch.clamp(torch.round(folded / s), -128, 127) * s
    assert torch.allclose(fq(folded), expected, atol=1e-6)
    # Activation fake quants: weights of 3 layers loaded, activations not.
    assert report.mmrazor_activations == [
        'activation_post_process_0', 'activation_post_process_1',
        'activation_post_process_3'
    ]
    assert report.unused == []
    acts = {n for n, q in named_fake_quants(arch) if not q.is_initialized}
    assert acts == {f'act_fake_quants.{n}'
                    for n in report.unmapped_activations}
    assert len(acts) == len(arch.act_fake_quants)


def test_activation_map_loads_named_activation_fake_quants():
    model = MODELS.build(quant_model('lsq'))
    sd, _ = mmrazor_state_dict()
    names = list(model.architecture.act_fake_quants.keys())
    amap = {names[0]: 'activation_post_process_0',
            names[1]: 'activation_post_process_3'}
    report = load_mmrazor_checkpoint(model, sd, activation_map=amap)
    acts = model.architecture.act_fake_quants
    for name, scale in ((names[0], 0.1), (names[1], 0.4)):
        assert math.isclose(float(acts[name].scale.detach()), scale,
                            rel_tol=1e-6)
    assert acts[names[1]].scale.shape == ()
    assert report.mmrazor_activations == ['activation_post_process_1']
    assert names[0] not in report.unmapped_activations


def test_not_an_mmrazor_checkpoint_or_wrong_shapes():
    model = MODELS.build(quant_model('lsq'))
    with pytest.raises(ValueError, match="no 'qmodels.<mode>.' keys"):
        convert_mmrazor_state_dict(model.state_dict(), model)
    sd, _ = mmrazor_state_dict()
    with pytest.raises(ValueError, match="no forward mode 'test'"):
        convert_mmrazor_state_dict(sd, model, mode='test')
    sd['qmodels.predict.head.fc.weight'] = torch.zeros(10, 9)
    with pytest.raises(ValueError, match=r'head.fc.weight has shape '
                       r'\(10, 9\) but architecture.head.fc.weight has '
                       r'\(10, 8\)'):
        convert_mmrazor_state_dict(sd, model)
    sd, _ = mmrazor_state_dict()
    sd['qmodels.predict.backbone.extra.weight'] = torch.zeros(1)
    with pytest.raises(ValueError, match='backbone.extra.weight.*another '
                       'architecture'):
        load_mmrazor_checkpoint(model, sd)
