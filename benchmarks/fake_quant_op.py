"""One fake quant, forward + backward, in units of one tensor copy.

Times ``y = fq(x); y.backward(g)`` for each contender on one activation-like
tensor (``randn``, 8-bit unsigned asymmetric grid, per-tensor) and divides
by the time of ``buf.copy_(x)`` measured in the same run: one read and one
write of the tensor, the least a fake quant's forward can cost. Contenders:

* ours: :func:`fake_quantize` (fixed qparams), :class:`FakeQuantize` with
  its moving-average min/max observer on (every step observes, as in QAT),
  :func:`fake_quantize_learnable` (LSQ, functional),
  :class:`LearnableFakeQuantize` (LSQ), :class:`LSQPlusFakeQuantize` (LSQ+,
  learned zero-point) and :class:`PACTFakeQuantize` (observers off after
  the first call, as in the LSQ loop);
* ATen peers in the same run: ``torch.fake_quantize_per_tensor_affine``,
  ``torch.fused_moving_avg_obs_fake_quant`` (torch's fused observer + fake
  quant; a peer only, the package does not call it) and
  ``torch._fake_quantize_learnable_per_tensor_affine``.

Per contender it also reports the bytes kept for the backward per element
of ``x`` (the tensors autograd saves, seen through
``torch.autograd.graph.saved_tensors_hooks``; storages counted once; ``x``
itself is listed apart, since the layer that produced it usually keeps it
anyway) and, on CUDA, the peak memory of one step above what was allocated
before it, in units of ``x``'s size (``y``, ``x.grad`` and the saved
tensors make at least 2).

Contenders run round-robin, one step of each per round, so a change in the
machine's load hits all of them alike; the figure is the median over the
rounds after the warm-up rounds. A contender that fails (e.g. an ATen
kernel without a float16 CPU version) prints its error as its row.

Default shapes: 128x64x56x56 on CUDA (ResNet's first stage at batch
128); 16x64x56x56 on CPU (3.2 M elements, 12.8 MB in
float32: larger than the caches, small enough for a shared 2-core machine).

To compare two trees of the package with one venv, put the other tree
first on ``PYTHONPATH``; the header names the package directory it
imported.

Usage:
    python benchmarks/fake_quant_op.py [--device cpu|cuda]
        [--dtype float32|float16|bfloat16] [--shape 16 64 56 56]
        [--steps 30] [--warmup 5] [--threads 2] [--timer wall|cpu]
        [--only LSQ PACT]
"""
import argparse
import os
import platform
import statistics
import time
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

import torch
from torch import Tensor, nn

import mmrazor_quant
from mmrazor_quant.models.fake_quants import (
    FakeQuantize,
    LearnableFakeQuantize,
    LSQPlusFakeQuantize,
    PACTFakeQuantize,
    fake_quantize,
    fake_quantize_learnable,
)
from mmrazor_quant.models.observers import (
    LSQObserver,
    LSQPlusObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
)
from mmrazor_quant.structures.quantization import QSchema

QMIN, QMAX = 0, 255
DEFAULT_SHAPES = {'cuda': (128, 64, 56, 56), 'cpu': (16, 64, 56, 56)}
DTYPES = {
    'float32': torch.float32,
    'float16': torch.float16,
    'bfloat16': torch.bfloat16
}


class Contender(NamedTuple):
    """A step ``fn(x) -> y`` and the tensors whose ``.grad`` it fills."""
    fn: Callable[[Tensor], Tensor]
    params: Tuple[Tensor, ...] = ()


def saved_bytes(fn: Callable[[Tensor], Tensor],
                x: Tensor) -> Tuple[int, bool]:
    """Bytes autograd keeps for the backward of ``fn(x)``, and whether
    ``x`` itself is among the saved tensors.

    Each saved storage is counted once, by its full size; ``x``'s storage
    (views of ``x`` included) is left out of the bytes and reported by the
    flag instead.

    Args:
        fn (Callable): The forward to inspect.
        x (Tensor): Its input.

    Returns:
        tuple[int, bool]: Bytes of the other saved storages, and whether
        ``x``'s storage is saved.
    """
    storages: Dict[int, int] = {}

    def pack(t: Tensor) -> Tensor:
        storage = t.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn(x)
    own = x.untyped_storage().data_ptr()
    keeps_x = storages.pop(own, None) is not None
    return sum(storages.values()), keeps_x


def minmax_qparams(x: Tensor) -> Tuple[float, int]:
    """The asymmetric 8-bit scale and zero-point of ``x``'s range."""
    lo, hi = min(float(x.min()), 0.0), max(float(x.max()), 0.0)
    scale = (hi - lo) / (QMAX - QMIN)
    return scale, int(round(QMIN - lo / scale))


def _scheme() -> QSchema:
    return QSchema(qdtype='quint8', bit=8)


def _calibrated(module: nn.Module, x: Tensor, keep_observer: bool):
    """``module`` after one forward on ``x`` (the first-batch init), with
    its observer left on only if ``keep_observer``."""
    module = module.to(x.device)
    with torch.no_grad():
        module(x)
    if not keep_observer:
        module.disable_observer()
    return Contender(module, tuple(module.parameters()))


def our_contenders(x: Tensor) -> Dict[str, Callable[[], Contender]]:
    """Builders of our fake quants on ``x``, by row name."""
    scale, zero_point = minmax_qparams(x)
    dev = x.device

    def fixed():
        return Contender(
            lambda t: fake_quantize(t, scale, zero_point, QMIN, QMAX))

    def learnable():
        s = torch.tensor(scale, device=dev, requires_grad=True)
        z = torch.tensor(float(zero_point), device=dev)
        g = 1.0 / (x.numel() * QMAX)**0.5
        return Contender(
            lambda t: fake_quantize_learnable(t, s, z, QMIN, QMAX, None, g),
            (s, ))

    return {
        'ours fake_quantize (fixed)': fixed,
        'ours FakeQuantize + moving-avg observer': lambda: _calibrated(
            FakeQuantize(MovingAverageMinMaxObserver(_scheme())), x, True),
        'ours fake_quantize_learnable (LSQ)': learnable,
        'ours LearnableFakeQuantize (LSQ)': lambda: _calibrated(
            LearnableFakeQuantize(LSQObserver(_scheme())), x, False),
        'ours LSQPlusFakeQuantize (LSQ+)': lambda: _calibrated(
            LSQPlusFakeQuantize(LSQPlusObserver(_scheme())), x, False),
        'ours PACTFakeQuantize': lambda: _calibrated(
            PACTFakeQuantize(MinMaxObserver(_scheme()), init_alpha=3.0), x,
            False),
    }


def aten_contenders(x: Tensor) -> Dict[str, Callable[[], Contender]]:
    """Builders of torch's own fake-quant ops on ``x``, by row name."""
    scale, zero_point = minmax_qparams(x)
    dev = x.device

    def fixed():
        s = torch.tensor([scale], device=dev)
        z = torch.tensor([zero_point], dtype=torch.int32, device=dev)
        return Contender(lambda t: torch.fake_quantize_per_tensor_affine(
            t, s, z, QMIN, QMAX))

    def fused_observer():
        on = torch.ones(1, dtype=torch.long, device=dev)
        running_min = torch.tensor([float(x.min())], device=dev)
        running_max = torch.tensor([float(x.max())], device=dev)
        s = torch.tensor([scale], device=dev)
        z = torch.tensor([zero_point], dtype=torch.int32, device=dev)
        return Contender(lambda t: torch.fused_moving_avg_obs_fake_quant(
            t, on, on, running_min, running_max, s, z, 0.01, QMIN, QMAX, 0))

    def learnable():
        s = torch.tensor([scale], device=dev, requires_grad=True)
        z = torch.tensor([float(zero_point)], device=dev)
        g = 1.0 / (x.numel() * QMAX)**0.5
        return Contender(
            lambda t: torch._fake_quantize_learnable_per_tensor_affine(
                t, s, z, QMIN, QMAX, g), (s, ))

    return {
        'ATen fake_quantize_per_tensor_affine': fixed,
        'ATen fused_moving_avg_obs_fake_quant': fused_observer,
        'ATen _fake_quantize_learnable_per_tensor': learnable,
    }


class Row(NamedTuple):
    name: str
    step: Optional[Callable[[], None]]
    error: str = ''
    saved: int = 0
    keeps_x: bool = False


def make_row(name: str, build: Callable[[], Contender], x: Tensor) -> Row:
    """Build one contender, check it runs, and count its saved bytes."""
    try:
        contender = build()
        grad = torch.randn_like(x)
        leaves = (x, ) + contender.params

        def step():
            for leaf in leaves:
                leaf.grad = None
            contender.fn(x).backward(grad)

        step()
        saved, keeps_x = saved_bytes(contender.fn, x)
    except Exception as e:  # noqa: BLE001 - reported as the row
        return Row(name, None, f'{type(e).__name__}: '
                   f'{str(e).splitlines()[0][:100]}')
    return Row(name, step, '', saved, keeps_x)


def median_times(steps: List[Callable[[], None]], rounds: int, warmup: int,
                 clock: Callable[[], float],
                 sync: Callable[[], None]) -> List[float]:
    """Median time of each step, run round-robin."""
    times: List[List[float]] = [[] for _ in steps]
    for i in range(warmup + rounds):
        for step, record in zip(steps, times):
            sync()
            start = clock()
            step()
            sync()
            if i >= warmup:
                record.append(clock() - start)
    return [statistics.median(t) for t in times]


def peak_memory(step: Callable[[], None]) -> int:
    """Bytes allocated at the peak of one CUDA step above those before."""
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    return torch.cuda.max_memory_allocated() - before


def machine(device: str) -> str:
    if device == 'cuda':
        return torch.cuda.get_device_name()
    name = platform.processor() or platform.machine()
    try:
        with open('/proc/cpuinfo') as f:
            name = next(line.split(':', 1)[1].strip() for line in f
                        if line.startswith('model name'))
    except (OSError, StopIteration):
        pass
    return f'{name}, {os.cpu_count()} cores'


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--device', choices=('cpu', 'cuda'), default='cpu')
    parser.add_argument('--dtype', choices=sorted(DTYPES), default='float32')
    parser.add_argument('--shape', type=int, nargs='+', default=None,
                        help='default 128 64 56 56 (CUDA), 16 64 56 56 (CPU)')
    parser.add_argument('--steps', type=int, default=30,
                        help='measured rounds')
    parser.add_argument('--warmup', type=int, default=5,
                        help='warm-up rounds')
    parser.add_argument('--threads', type=int, default=None,
                        help='torch.set_num_threads (CPU; default: torch\'s)')
    parser.add_argument('--timer', choices=('wall', 'cpu'), default='wall',
                        help='cpu: process CPU time (CPU device only)')
    parser.add_argument('--only', nargs='+', default=None, metavar='WORD',
                        help='only the contenders whose name contains one '
                        'of these words (the copy always runs)')
    args = parser.parse_args()
    if args.device == 'cuda' and not torch.cuda.is_available():
        parser.error('--device cuda: this torch sees no CUDA device')
    if args.device == 'cuda' and args.timer == 'cpu':
        parser.error('--timer cpu measures CPU time; use wall on CUDA')
    return args


def main():
    args = parse_args()
    if args.threads is not None:
        torch.set_num_threads(args.threads)
    cuda = args.device == 'cuda'
    shape = tuple(args.shape or DEFAULT_SHAPES[args.device])
    torch.manual_seed(0)
    x = torch.randn(shape, device=args.device,
                    dtype=DTYPES[args.dtype]).requires_grad_()
    buf = torch.empty_like(x, requires_grad=False)
    copy = Row('copy (y.copy_(x)), the unit', lambda: buf.copy_(x.detach()))
    builders = {**our_contenders(x.detach()), **aten_contenders(x.detach())}
    if args.only:
        builders = {
            name: build
            for name, build in builders.items()
            if any(word in name for word in args.only)
        }
    rows = [copy] + [make_row(n, b, x) for n, b in builders.items()]
    runnable = [r for r in rows if r.step is not None]
    clock = time.process_time if args.timer == 'cpu' else time.perf_counter
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    medians = dict(
        zip((r.name for r in runnable),
            median_times([r.step for r in runnable], args.steps,
                         args.warmup, clock, sync)))
    unit = medians[copy.name]
    x_bytes = x.numel() * x.element_size()

    package = os.path.dirname(mmrazor_quant.__file__)
    print(f'{machine(args.device)}, torch {torch.__version__}, '
          f'{torch.get_num_threads()} threads, load average '
          f'{os.getloadavg()[0]:.2f}; package {package}')
    print(f'x {"x".join(map(str, shape))} {args.dtype} on {args.device}, '
          f'median of {args.steps} rounds after {args.warmup}, '
          f'{args.timer} time; unit: one copy = {unit * 1e3:.3f} ms')
    peak_col = ' peak (x size) |' if cuda else ''
    print(f'| {"contender":44s} |  ms/step | copies | saved B/elem |'
          f'{peak_col}')
    print(f'| {"-" * 44} | -------: | -----: | -----------: |'
          f'{" ------------: |" if cuda else ""}')
    for row in rows:
        if row.step is None:
            print(f'| {row.name:44s} | failed: {row.error} |')
            continue
        t = medians[row.name]
        saved = f'{row.saved / x.numel():.2f}{" + x" if row.keeps_x else ""}'
        peak = ''
        if cuda:
            peak = f' {peak_memory(row.step) / x_bytes:13.2f} |'
        print(f'| {row.name:44s} | {t * 1e3:8.3f} | {t / unit:6.2f} | '
              f'{saved:>12s} |{peak}')


if __name__ == '__main__':
    main()
