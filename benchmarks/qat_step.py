"""Median QAT training-step time of ResNet-18 per backend, over fp32.

Measures in one run, on the same mmcls ResNet_CIFAR-18 (32x32 input,
batch 32, CPU): the fp32 step, our quantized step for each backend
quantizer (FakeQuantize with moving-average observers, the usual QAT setup,
and LSQ on OpenVINO), and torch.ao's ``prepare_qat_fx`` (x86 qconfig) when
torch still ships it. A step is forward + cross-entropy + backward + SGD.
Observers stay on in every step (as torch.ao's fused fake quants), except
for LSQ, whose observers give the initial scale on the first step only, as
in ``LSQEpochBasedLoop``.

The contenders run round-robin (one step of each per round), so a change in
the machine's load hits all of them alike. ``--timer cpu`` times with the
process CPU clock instead of the wall clock: on a machine shared with other
jobs it ignores the time the process waits for a core (use it with
``--threads 1``, where no thread spin-waits).

Usage:
    python benchmarks/qat_step.py [--steps 15] [--warmup 3] [--threads 2]
        [--batch 32] [--timer wall|cpu]
"""
import argparse
import copy
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from mmrazor_quant.models.fake_quants import disable_observer
from mmrazor_quant.registry import MODELS, register_all_modules

ARCH = dict(
    _scope_='mmcls',
    type='ImageClassifier',
    backbone=dict(type='ResNet_CIFAR', depth=18, num_stages=4,
                  out_indices=(3, ), style='pytorch'),
    neck=dict(type='GlobalAveragePooling'),
    head=dict(type='LinearClsHead', num_classes=10, in_channels=512,
              loss=dict(type='CrossEntropyLoss', loss_weight=1.0)))

W8 = dict(qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)
BACKENDS = {
    'native': ('TorchNativeQuantizer', dict(qdtype='quint8', bit=8)),
    'openvino': ('OpenVINOQuantizer', dict(qdtype='quint8', bit=8,
                                           is_symmetry=True)),
    'tensorrt': ('TensorRTQuantizer', W8),
    'academic': ('AcademicQuantizer', dict(qdtype='quint8', bit=8)),
}


def qconfig(a_qscheme, lsq=False):
    obs, fq = (('LSQObserver', 'LearnableFakeQuantize') if lsq else
               ('MovingAverageMinMaxObserver', 'FakeQuantize'))
    w_obs = 'LSQPerChannelObserver' if lsq else 'PerChannelMinMaxObserver'
    return dict(
        w_observer=dict(type=f'mmrazor_quant.{w_obs}'),
        a_observer=dict(type=f'mmrazor_quant.{obs}'),
        w_fake_quant=dict(type=f'mmrazor_quant.{fq}'),
        a_fake_quant=dict(type=f'mmrazor_quant.{fq}'),
        w_qscheme=W8,
        a_qscheme=a_qscheme)


class TensorMode(nn.Module):
    """``model(x)`` = ``arch(x, mode='tensor')`` so every contender traces
    the same function."""

    def __init__(self, arch):
        super().__init__()
        self.arch = arch

    def forward(self, x):
        return self.arch(x, mode='tensor')


def ours(float_model, quantizer, a_qscheme, lsq=False):
    model = MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=copy.deepcopy(float_model),
            forward_modes=('tensor', ),
            quantizer=dict(
                type=f'mmrazor_quant.{quantizer}',
                global_qconfig=qconfig(a_qscheme, lsq))))
    return lambda x: model(x, mode='tensor'), model


def torch_ao(float_model, x):
    try:
        from torch.ao.quantization import get_default_qat_qconfig_mapping
        from torch.ao.quantization.quantize_fx import prepare_qat_fx
    except ImportError:
        return None
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        model = prepare_qat_fx(
            TensorMode(copy.deepcopy(float_model)).train(),
            get_default_qat_qconfig_mapping('x86'), (x, ))
    return model, model


def median_steps(contenders, x, y, steps, warmup, clock):
    """Median step time of each ``(forward, module, after_first)``,
    stepping them round-robin."""
    states = []
    for forward, module, after_first in contenders:
        module.train()
        opt = torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9)
        states.append((forward, opt, after_first, []))
    for i in range(warmup + steps):
        for forward, opt, after_first, times in states:
            start = clock()
            loss = F.cross_entropy(forward(x), y)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if i >= warmup:
                times.append(clock() - start)
            if i == 0 and after_first is not None:
                after_first()
    return [statistics.median(times) for *_, times in states]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--steps', type=int, default=15)
    parser.add_argument('--warmup', type=int, default=3)
    parser.add_argument('--batch', type=int, default=32)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--timer', choices=('wall', 'cpu'), default='wall')
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    register_all_modules(init_default_scope=False)
    float_model = MODELS.build(copy.deepcopy(ARCH))
    x = torch.randn(args.batch, 3, 32, 32)
    y = torch.randint(0, 10, (args.batch, ))

    fp32 = TensorMode(copy.deepcopy(float_model))
    contenders = [('fp32', (fp32, fp32, None))]
    for name, (quantizer, a_qscheme) in BACKENDS.items():
        fwd, module = ours(float_model, quantizer, a_qscheme)
        contenders.append((f'ours {name}', (fwd, module, None)))
    fwd, module = ours(float_model, 'OpenVINOQuantizer',
                       BACKENDS['openvino'][1], lsq=True)
    contenders.append(('ours openvino LSQ',
                       (fwd, module, lambda m=module: disable_observer(m))))
    ao = torch_ao(float_model, x)
    if ao is not None:
        contenders.append(('torch.ao prepare_qat_fx (x86)', (*ao, None)))
    clock = time.process_time if args.timer == 'cpu' else time.perf_counter
    medians = median_steps([c for _, c in contenders], x, y, args.steps,
                           args.warmup, clock)
    rows = [(name, t) for (name, _), t in zip(contenders, medians)]
    base = rows[0][1]

    print(f'ResNet_CIFAR-18, batch {args.batch}, 32x32, '
          f'{args.threads} threads, median of {args.steps} steps, '
          f'{args.timer} time')
    print(f'| {"model":32s} | step (ms) | vs fp32 |')
    print(f'| {"-" * 32} | --------- | ------- |')
    for name, t in rows:
        print(f'| {name:32s} | {t * 1e3:9.1f} | {t / base:6.2f}x |')


if __name__ == '__main__':
    main()
