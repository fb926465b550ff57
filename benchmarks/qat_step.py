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

``--device cuda`` measures instead, per model (ResNet-18 at 224x224,
batch 128, and ResNet-50 at 224x224, batch 64, mmcls ImageNet backbones,
1000 classes): fp32, FakeQuantize (OpenVINO, moving-average observers on)
and LSQ (observers off after the first step), each eager and under
``torch.compile``; the same three under bf16 and fp16 autocast (fp16 with a
``GradScaler``); torch.ao's ``prepare_qat_fx``. Contenders run one after
another (synchronised CUDA timing, warm-up steps first, which also absorb
compilation), each built and freed alone so its peak memory
(``torch.cuda.max_memory_allocated`` above what was allocated before it) is
its own. "vs fp32" divides by the fp32 eager step; "vs same" by fp32 in the
same mode (compiled, or the same autocast dtype). A contender that fails
(e.g. a dtype a fake quant does not support) prints its error as its row.

Usage:
    python benchmarks/qat_step.py [--steps 15] [--warmup 3] [--threads 2]
        [--batch 32] [--timer wall|cpu]
    python benchmarks/qat_step.py --device cuda [--steps 20] [--warmup 5]
        [--models resnet18 resnet50]
"""
import argparse
import contextlib
import copy
import gc
import resource
import statistics
import time
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from mmrazor_quant.backends import all_backends
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


def imagenet_arch(depth: int) -> dict:
    """mmcls's ImageNet ResNet classifier (1000 classes)."""
    return dict(
        _scope_='mmcls',
        type='ImageClassifier',
        backbone=dict(type='ResNet', depth=depth, num_stages=4,
                      out_indices=(3, ), style='pytorch'),
        neck=dict(type='GlobalAveragePooling'),
        head=dict(type='LinearClsHead', num_classes=1000,
                  in_channels=512 if depth < 50 else 2048,
                  loss=dict(type='CrossEntropyLoss', loss_weight=1.0)))


#: CUDA models: (architecture, input size, batch).
CUDA_MODELS = {
    'resnet18': (imagenet_arch(18), 224, 128),
    'resnet50': (imagenet_arch(50), 224, 64),
}

W8 = dict(qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)
#: Each registered backend's quantizer and W8A8 activation scheme.
BACKENDS = {
    name: (backend.quantizer, dict(backend.w8a8['a_qscheme']))
    for name, backend in sorted(all_backends().items())
    if backend.quantizer and backend.w8a8
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


def cuda_contenders(float_model, x):
    """``(name, build, amp dtype, group)`` of the CUDA table; ``build()``
    gives ``(forward, module, after_first)``; ``group`` names the fp32 row
    of the same mode."""

    def fp32():
        module = TensorMode(copy.deepcopy(float_model)).cuda()
        return module, module, None

    def fake_quantize():
        fwd, module = ours(float_model, 'OpenVINOQuantizer',
                           BACKENDS['openvino'][1])
        return fwd, module.cuda(), None

    def lsq():
        fwd, module = ours(float_model, 'OpenVINOQuantizer',
                           BACKENDS['openvino'][1], lsq=True)
        return fwd, module.cuda(), lambda m=module: disable_observer(m)

    def compiled(build):
        def build_compiled():
            _, module, after_first = build()
            if isinstance(module, TensorMode):
                return torch.compile(module), module, after_first
            graph = torch.compile(module.qmodels['tensor'])
            return (lambda x: graph(x, None)), module, after_first
        return build_compiled

    def ao():
        built = torch_ao(float_model.cuda(), x)
        if built is None:
            raise RuntimeError('torch.ao.quantization is not available')
        return built[0], built[1].cuda(), None

    rows = []
    plain = [('fp32', fp32), ('FakeQuantize', fake_quantize), ('LSQ', lsq)]
    for name, build in plain:
        rows.append((name, build, None, 'fp32'))
    for name, build in plain:
        rows.append((f'{name} compiled', compiled(build), None,
                     'fp32 compiled'))
    for dtype in (torch.bfloat16, torch.float16):
        tag = str(dtype).split('.')[-1]
        for name, build in plain:
            rows.append((f'{name} {tag} AMP', build, dtype, f'fp32 {tag} AMP'))
    rows.append(('torch.ao prepare_qat_fx (x86)', ao, None, 'fp32'))
    return rows


def measure_cuda(build, amp, x, y, steps, warmup):
    """Median step time (s) and peak memory (bytes above the memory in use
    before) of one contender, built and freed here."""
    gc.collect()
    torch.cuda.empty_cache()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    forward, module, after_first = build()
    module.train()
    opt = torch.optim.SGD(module.parameters(), lr=1e-3, momentum=0.9)
    scaler = torch.amp.GradScaler('cuda', enabled=amp is torch.float16)
    autocast = (torch.autocast('cuda', dtype=amp) if amp is not None else
                contextlib.nullcontext())
    times = []
    for i in range(warmup + steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        with autocast:
            loss = F.cross_entropy(forward(x), y)
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        torch.cuda.synchronize()
        if i >= warmup:
            times.append(time.perf_counter() - start)
        if i == 0 and after_first is not None:
            after_first()
    peak = torch.cuda.max_memory_allocated() - before
    del forward, module, after_first, opt
    return statistics.median(times), peak


def main_cuda(args):
    """The CUDA tables, one per model."""
    print(f'{torch.cuda.get_device_name()}, torch {torch.__version__}, '
          f'median of {args.steps} steps after {args.warmup} warm-up steps')
    for model_name in args.models:
        arch, size, batch = CUDA_MODELS[model_name]
        torch.manual_seed(0)
        float_model = MODELS.build(copy.deepcopy(arch)).cuda()
        x = torch.randn(batch, 3, size, size, device='cuda')
        y = torch.randint(0, 1000, (batch, ), device='cuda')
        results = {}
        print(f'\n{model_name}, batch {batch}, {size}x{size}')
        print(f'| {"model":32s} | step (ms) | vs fp32 | vs same | '
              'peak (GiB) |')
        print(f'| {"-" * 32} | --------: | ------: | ------: | '
              '---------: |')
        for name, build, amp, group in cuda_contenders(float_model, x):
            try:
                t, peak = measure_cuda(build, amp, x, y, args.steps,
                                       args.warmup)
            except Exception as e:  # noqa: BLE001 - reported as the row
                print(f'| {name:32s} | failed: {type(e).__name__}: '
                      f'{str(e).splitlines()[0][:120]} |')
                continue
            results[name] = t
            base = results.get('fp32', t)
            same = results.get(group, t)
            print(f'| {name:32s} | {t * 1e3:9.1f} | {t / base:6.2f}x | '
                  f'{t / same:6.2f}x | {peak / 2**30:10.2f} |', flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--device', choices=('cpu', 'cuda'), default='cpu')
    parser.add_argument('--steps', type=int, default=None,
                        help='measured steps (default 15 CPU, 20 CUDA)')
    parser.add_argument('--warmup', type=int, default=None,
                        help='warm-up steps (default 3 CPU, 5 CUDA)')
    parser.add_argument('--batch', type=int, default=32, help='CPU only')
    parser.add_argument('--threads', type=int, default=2, help='CPU only')
    parser.add_argument('--timer', choices=('wall', 'cpu'), default='wall',
                        help='CPU only')
    parser.add_argument('--models', nargs='+', choices=sorted(CUDA_MODELS),
                        default=['resnet18', 'resnet50'], help='CUDA only')
    args = parser.parse_args()
    cuda = args.device == 'cuda'
    if args.steps is None:
        args.steps = 20 if cuda else 15
    if args.warmup is None:
        args.warmup = 5 if cuda else 3
    register_all_modules(init_default_scope=False)
    if cuda:
        if not torch.cuda.is_available():
            parser.error('--device cuda: this torch sees no CUDA device')
        main_cuda(args)
        return
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
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
    # Per-contender peaks need CUDA's allocator statistics; on CPU only
    # the process's peak resident memory (all contenders together) is known.
    peak_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    print(f'peak resident memory of the process: {peak_rss:.2f} GiB')


if __name__ == '__main__':
    main()
