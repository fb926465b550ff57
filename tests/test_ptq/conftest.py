"""Tiny mmcls models on real MNIST digits for the PTQ pass tests."""
import copy

import pytest
import torch

from mmrazor_quant.models.fake_quants import (
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
)
from mmrazor_quant.registry import MODELS
from ..skips import CLS_HEAD_SKIPS
from ..toys import tiny_resnet

RESNET = tiny_resnet(in_channels=1)


def _digits():
    from mmrazor_quant.datasets.mnist5k import (
        find_mnist5k_file,
        load_mnist5k_arrays,
    )
    try:
        images, labels = load_mnist5k_arrays(find_mnist5k_file())
    except (FileNotFoundError, ImportError):
        g = torch.Generator().manual_seed(0)
        return torch.randn(600, 1, 28, 28, generator=g), torch.randint(
            0, 10, (600, ), generator=g)
    x = (torch.from_numpy(images[:600]).float()[:, None] - 33.32) / 78.57
    return x, torch.from_numpy(labels[:600])


@pytest.fixture(scope='session')
def digits():
    """(images, labels): 600 normalised 1x28x28 digits."""
    return _digits()


@pytest.fixture(scope='session')
def float_state(digits):
    """A small ResNet-18 (base 8) briefly trained on the digits."""
    images, labels = digits
    torch.manual_seed(0)
    model = MODELS.build(copy.deepcopy(RESNET))
    optim = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    model.train()
    order = torch.randperm(len(images),
                           generator=torch.Generator().manual_seed(0))
    for step in range(12):
        idx = order[(step * 32) % 512:(step * 32) % 512 + 32]
        loss = torch.nn.functional.cross_entropy(
            model(images[idx], mode='tensor'), labels[idx])
        optim.zero_grad()
        loss.backward()
        optim.step()
    return model.state_dict()


def qconfig(w_bit=4, a_bit=4, fake_quant='FakeQuantize',
            w_observer='PerChannelMinMaxObserver',
            a_observer='MinMaxObserver'):
    return dict(
        w_observer=dict(type=f'mmrazor_quant.{w_observer}'),
        a_observer=dict(type=f'mmrazor_quant.{a_observer}'),
        w_fake_quant=dict(type=f'mmrazor_quant.{fake_quant}'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=dict(qdtype='qint8', bit=w_bit, is_symmetry=False),
        a_qscheme=dict(qdtype='quint8', bit=a_bit, is_symmetry=False))


def build_quantized(state, quantizer='AcademicQuantizer', **qkwargs):
    """An uncalibrated MMArchitectureQuant (tensor mode) over ``state``."""
    arch = MODELS.build(copy.deepcopy(RESNET))
    arch.load_state_dict(state)
    return MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=arch,
            forward_modes=('tensor', ),
            quantizer=dict(
                type=f'mmrazor_quant.{quantizer}',
                global_qconfig=qconfig(**qkwargs),
                tracer=dict(
                    type='mmrazor_quant.CustomTracer',
                    skipped_methods=CLS_HEAD_SKIPS)))).eval()


@torch.no_grad()
def calibrate(model, images):
    model.eval()
    enable_observer(model)
    disable_fake_quant(model)
    for x in images.split(64):
        model(x, mode='tensor')
    disable_observer(model)
    enable_fake_quant(model)
    return model
