"""BRECQ / QDrop block reconstruction; QDrop(p=1) == BRECQ."""
import copy

import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    QDropFakeQuantize,
    disable_fake_quant,
    enable_fake_quant,
)
from mmrazor_quant.models.fake_quants.qdrop import drop_quantization
from mmrazor_quant.ptq import brecq, find_units, qdrop, tensor_graph_module
from mmrazor_quant.ptq.graph_utils import owner_modules
from .conftest import build_quantized, calibrate


@pytest.fixture(scope='module')
def calibrated(float_state, digits):
    return calibrate(build_quantized(float_state, w_bit=2, a_bit=4),
                     digits[0][:256])


def test_block_units(calibrated):
    units = find_units(tensor_graph_module(calibrated), 'block',
                       modules=owner_modules(calibrated))
    names = [n for n, _ in units]
    assert names[0] == 'backbone.conv1' and names[-1] == 'head.fc'
    assert names[1:-1] == [f'backbone.layer{i}.{j}' for i in range(1, 5)
                           for j in range(2)]
    block = dict(units)['backbone.layer1.0']
    targets = [str(n.target) for n in block]
    # the input fake quant of conv1 and the add are in the block
    assert 'act_fake_quants.backbone_conv1' in targets
    assert any(n.op == 'call_function' for n in block)


def test_qdrop_p1_equals_brecq(calibrated, digits):
    images = digits[0][:256]
    kwargs = dict(iters=4, num_samples=64, batch_size=16, seed=1)
    a, b = copy.deepcopy(calibrated), copy.deepcopy(calibrated)
    brecq(a, [images], **kwargs)
    qdrop(b, [images], drop_prob=1.0, **kwargs)
    x = digits[0][300:364]
    torch.testing.assert_close(
        a(x, mode='tensor'), b(x, mode='tensor'), rtol=0, atol=1e-6)
    for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
        torch.testing.assert_close(pa, pb, rtol=0, atol=1e-6, msg=name)
    # p = 0.5 draws masks: a different result
    c = copy.deepcopy(calibrated)
    qdrop(c, [images], drop_prob=0.5, **kwargs)
    assert not torch.equal(c(x, mode='tensor'), a(x, mode='tensor'))


def test_qdrop_improves_w2a4_over_naive(calibrated, digits):
    images, _ = digits
    x = images[300:600]
    with torch.no_grad():
        naive = calibrated(x, mode='tensor')
        # The float reference: every fake quant off. (``architecture``
        # itself is not float: it shares the QAT layers and their weight
        # fake quants with the graphs.)
        disable_fake_quant(calibrated)
        float_out = calibrated(x, mode='tensor')
        enable_fake_quant(calibrated)
    model = copy.deepcopy(calibrated)
    qdrop(model, [images[:256]], iters=15, num_samples=128)
    with torch.no_grad():
        out = model(x, mode='tensor')
    naive_mse = float((naive - float_out).pow(2).mean())
    qdrop_mse = float((out - float_out).pow(2).mean())
    # Measured: 0.110 (naive) -> 0.024 (QDrop, 15 steps per block) on an
    # AVX-512 CPU; 0.0236 -> 0.0182 on an AVX2 one, whose float kernels
    # train another fp32 model in the 12 steps (W2A4 naive error varies
    # more between such models than QDrop's does).
    assert qdrop_mse < 0.8 * naive_mse


def test_drop_quantization_and_fake_quant():
    g = torch.Generator().manual_seed(0)
    x = torch.linspace(-1, 1, 1000)
    xq = torch.zeros_like(x)
    mixed = drop_quantization(x, xq, 0.3, g)
    kept = (mixed == x).float().mean()
    assert 0.25 < float(kept) < 0.35
    fq = QDropFakeQuantize(dict(type='mmrazor_quant.MinMaxObserver'),
                           drop_prob=1.0)
    fq(x)
    fq.disable_observer()
    fq.eval()
    assert not torch.equal(fq(x), x)  # eval: plain fake quant
    fq.train()
    assert torch.equal(fq(x), x)  # p = 1 in train: all float
    with pytest.raises(ValueError, match='drop_prob'):
        QDropFakeQuantize(dict(type='mmrazor_quant.MinMaxObserver'),
                          drop_prob=2)
