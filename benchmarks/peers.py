"""Our OpenVINO int8 models against the peers a user would pick instead.

For each model, from the same fp32 weights and the same calibration
batches:

* ``fp32 f32`` / ``fp32 default``: the fp32 model in OpenVINO with
  ``INFERENCE_PRECISION_HINT=f32`` and with the plugin's default precision
  (bf16 on CPUs with avx512_bf16 or AMX);
* ``ours``: the model's shipped PTQ config as ``tools/ptq.py`` calibrates
  it and ``tools/export.py`` writes it (its ``deploy_cfg``), the ``.onnx``
  file compiled as written (``build_ours``);
* ``NNCF``: ``ov.convert_model`` (dynamic batch) + ``nncf.quantize`` with
  its defaults
  (``ModelType.TRANSFORMER`` for the ViT);
* ``torchao PT2E``: ``X86InductorQuantizer`` (``prepare_pt2e`` /
  ``convert_pt2e``), lowered to the x86 oneDNN kernels; it runs in PyTorch;
* ``PPQ``: its OpenVINO flow, where it installs.

Every int8 model runs in OpenVINO at the default precision, as a user runs
it. The ours / NNCF row gives the ratio of median wall latencies and, in
brackets, its 95 % bootstrap interval (rounds resampled) and the ratio of
median CPU time per call (all threads of the process), which a loaded
machine does not inflate by making the call wait for a core.
Quantization time is from the fp32 module to a deployable model
(calibration included); top-1 is on the 1,000 MNIST test digits (the
ImageNet-size backbones have random weights and no data here, so only their
latency is measured). Latencies are medians of ``--repeats`` calls,
contenders interleaved in one process (each round in a random order) so
background load hits them alike, with ``--threads`` inference threads, each
OpenVINO contender compiled once, as a user compiles it; the PyTorch
contender (torchao) in rounds of its own, after the OpenVINO ones, whose
calls its spinning OpenMP threads would slow. One compilation's speed
depends on where its buffers land, so ours and NNCF are then compiled
``--compilations - 1`` more times and timed again, and the ours / NNCF row
also gives the range of the ratio over those compilations, apart from the
headline ratio. The ImageNet-size backbones have random weights: with
``--bn trained`` (default) their BN statistics are drawn as training leaves
them, with ``--bn initial`` they stay as initialised, ``--bn both`` runs
each. A peer that fails is a row with its error.

``--graphs`` times nothing: it compiles ours and NNCF's model once each,
calls them at each batch size and prints where what the CPU plugin runs
differs: runtime layers by type, precision and kernel, then oneDNN
primitives by kind, implementation, data types, scales and fused post-ops.

Needs the peers' environment: ``make peers-env``, then
``make peers`` (or ``.venv-peers/bin/python benchmarks/peers.py``).

Usage:
    python benchmarks/peers.py [--models resnet18 mbv2 vit resnet50 mbv2_224]
        [--repeats 50] [--threads 2] [--calib-batches 32]
        [--calib-batches-224 16] [--train-steps 300] [--compilations 3]
        [--bn trained|initial|both] [--graphs] [--out FILE]
"""
import argparse
import collections
import copy
import os
import os.path as osp
import platform
import statistics
import tempfile
import time
import traceback
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import torch
from mmengine.config import Config
from mmengine.registry import init_default_scope

from mmrazor_quant.utils.batch_norms import trained_like_batch_norms

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
PTQ = 'configs/quantization/ptq'
#: name -> (title, PTQ config, input (C, H, W), batch sizes, transformer)
SPECS = {
    'resnet18': ('demo ResNet-18', f'{PTQ}/ptq_openvino_resnet18_mnist.py',
                 (1, 28, 28), (1, 32), False),
    # the digits as 3 channels (the config's GrayToRGB)
    'mbv2': ('demo MobileNetV2', f'{PTQ}/ptq_openvino_mobilenetv2_mnist.py',
             (3, 28, 28), (1, 32), False),
    'vit': ('demo ViT', f'{PTQ}/ptq_openvino_vit_mnist.py', (1, 28, 28),
            (1, 32), True),
    'resnet50': ('mmcls ResNet-50',
                 f'{PTQ}/ptq_openvino_resnet50_8xb32_in1k_calib32xb32.py',
                 (3, 224, 224), (1, 8), False),
    'mbv2_224': ('mmcls MobileNetV2',
                 f'{PTQ}/ptq_openvino_mbv2_8xb32_in1k_calib32xb32.py',
                 (3, 224, 224), (1, 8), False),
}
FP32 = ('fp32 f32', 'fp32 default')
PEERS = ('ours', 'NNCF', 'torchao PT2E', 'PPQ')
#: Contenders that run in PyTorch: timed in their own interleaved rounds,
#: since their OpenMP threads keep spinning for a while after each call and
#: would take the cores from the OpenVINO call that follows (the demo
#: MobileNetV2 at batch 32: 2.10 ms beside them, 1.39 ms without)
TORCH_CONTENDERS = ('torchao PT2E', )
Infer = Callable[[np.ndarray], np.ndarray]
#: Contenders compiled again (``--compilations``) for the ratio's range.
RECOMPILED = ('ours', 'NNCF')
#: NNCF's model compiled a second time and timed in the same rounds: the
#: ratio of two compilations of one model is what the benchmark reads for
#: two models that run alike (an A/A control for ours / NNCF)
CONTROL = 'NNCF, compiled again'

class Contender:
    """A model ready to run: ``infer(x) -> logits``, or the error that kept
    it from being built."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.infer: Optional[Infer] = None
        self.seconds: Optional[float] = None
        self.error: Optional[str] = None
        self.latency: Dict[int, float] = {}
        #: every timed call's wall seconds, in round order
        self.times: Dict[int, List[float]] = {}
        #: CPU seconds of the whole process per call (all threads): unlike
        #: wall time, not inflated by waiting for a core on a loaded machine
        self.cpu: Dict[int, float] = {}
        self.top1: Optional[float] = None
        #: what OpenVINO compiles (a file or an ``ov.Model``), to compile
        #: it again
        self.source = None
        #: ours / NNCF median latency of each further compilation, by batch
        self.ratios: Dict[int, List[float]] = {}


class TensorMode(torch.nn.Module):
    """``arch(x, mode='tensor')`` as a plain ``forward(x)``."""

    def __init__(self, arch: torch.nn.Module) -> None:
        super().__init__()
        self.arch = arch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.arch(x, mode='tensor')


def ov_config(threads: int, precision: Optional[str] = None) -> dict:
    """The CPU plugin's configuration as a user compiles for latency: one
    stream, ``threads`` threads."""
    config = {'INFERENCE_NUM_THREADS': threads, 'NUM_STREAMS': 1,
              'PERFORMANCE_HINT': 'LATENCY'}
    if precision:
        config['INFERENCE_PRECISION_HINT'] = precision
    return config


def ov_compiled(model, threads: int, precision: Optional[str] = None):
    """``model`` (a file or an ``ov.Model``) compiled with ``ov_config``."""
    import openvino as ov
    return ov.Core().compile_model(model, 'CPU',
                                   ov_config(threads, precision))


def ov_compile(model, threads: int, precision: Optional[str] = None):
    """Compile for the CPU plugin once (``ov_compiled``): ``infer``."""
    request = ov_compiled(model, threads, precision).create_infer_request()

    def infer(x: np.ndarray) -> np.ndarray:
        return np.asarray(request.infer([x])[0])

    return infer

def load_data(cfg: Config, shape: Tuple[int, ...], args,
              data_preprocessor: torch.nn.Module):
    """``(data batches, calibration inputs, test)``: the loader's batches
    that calibrate ours (through the model's ``calibrate_step``, as the PTQ
    loop runs them), the same batches through the config's preprocessor
    (for the peers) and ``(test images, labels)``. The config's MNIST
    loaders, or random 8-bit images (no labels, no test) for the
    ImageNet-size configs."""
    from mmengine.runner import Runner
    if shape[-1] != 28:
        gen = torch.Generator().manual_seed(0)
        data = [dict(inputs=torch.randint(0, 256, (8, *shape),
                                          generator=gen, dtype=torch.uint8),
                     data_samples=None)
                for _ in range(args.calib_batches_224)]
        test = None
    else:
        calib_cfg = copy.deepcopy(cfg.calibrate_dataloader)
        calib_cfg.sampler = dict(type='DefaultSampler', shuffle=True, seed=0)
        data = []
        for batch in Runner.build_dataloader(calib_cfg):
            data.append(batch)
            if len(data) == args.calib_batches:
                break
        images, labels = [], []
        with torch.no_grad():
            for batch in Runner.build_dataloader(cfg.test_dataloader):
                batch = data_preprocessor(batch, False)
                images.append(batch['inputs'].float())
                labels += [int(s.gt_label.label)
                           for s in batch['data_samples']]
        test = (torch.cat(images), np.array(labels))
    with torch.no_grad():
        calib = [data_preprocessor(batch, False)['inputs'].float()
                 for batch in data]
    return data, calib, test


def build_fp32(cfg: Config, bn: str = 'trained') -> torch.nn.Module:
    """The fp32 architecture with the config's float checkpoint where it is
    on disk (``make demo`` writes the MNIST ones), else random weights, with
    BN statistics drawn as training leaves them (``bn='trained'``) or as
    initialised (``bn='initial'``)."""
    from mmrazor_quant.registry import MODELS
    torch.manual_seed(0)
    arch = MODELS.build(copy.deepcopy(cfg.model.architecture)).eval()
    ckpt = cfg.get('float_checkpoint')
    if ckpt and osp.exists(ckpt):
        state = torch.load(ckpt, map_location='cpu', weights_only=True)
        arch.load_state_dict(state.get('state_dict', state))
        arch.trained = True
    else:
        arch.trained = False
        if bn == 'trained':
            trained_like_batch_norms(arch)
    return arch


def quick_train(arch: torch.nn.Module, cfg: Config,
                data_preprocessor: torch.nn.Module, steps: int) -> None:
    """``steps`` AdamW steps on the config's training loader and lr, for a
    demo model whose fp32 checkpoint ``make demo`` has not written yet
    (top-1 then measures a briefly trained model)."""
    from mmengine.runner import Runner
    optim = torch.optim.AdamW(arch.parameters(),
                              lr=cfg.optim_wrapper.optimizer.lr)
    arch.train()
    done = 0
    while done < steps:
        for data in Runner.build_dataloader(cfg.train_dataloader):
            batch = data_preprocessor(data, True)
            loss = sum(v for k, v in arch(batch['inputs'].float(),
                                          batch['data_samples'],
                                          mode='loss').items()
                       if 'loss' in k)
            optim.zero_grad()
            loss.backward()
            optim.step()
            done += 1
            if done == steps:
                break
    arch.eval()


def build_ours(cfg: Config, arch, data: list, workdir) -> str:
    """What a user gets from the shipped config: ``tools/ptq.py``'s
    calibration (the PTQ loop's ``calibrate``: observers on, fake quants
    off, every batch through ``calibrate_step``; the config's PTQ passes)
    and ``tools/export.py``'s export (the config's ``deploy_cfg``: opset,
    names, dynamic axes; the exporter's ``prepare_model``), without the
    parity check."""
    from mmrazor_quant.deploy import build_exporter
    from mmrazor_quant.deploy.config_export import (
        ExportSettings,
        deploy_config_of,
    )
    from mmrazor_quant.engine.runner.calibration import calibrate
    from mmrazor_quant.registry import MODELS
    model_cfg = copy.deepcopy(cfg.model)
    model_cfg.update(architecture=copy.deepcopy(arch), float_checkpoint=None)
    model = MODELS.build(model_cfg).eval()
    passes = cfg.get('test_cfg', {}).get('ptq_passes')
    if passes:
        from mmrazor_quant.ptq import (
            build_ptq_passes,
            collect_inputs,
            run_ptq_passes,
        )
        passes = build_ptq_passes(passes)
        run_ptq_passes(model, passes, 'before_calibration',
                       lambda: collect_inputs(model, data, len(data)))
    calibrate(model, data, len(data), show_progress=False)
    if passes:
        run_ptq_passes(model, passes, 'after_calibration',
                       lambda: collect_inputs(model, data, len(data)))
    settings = ExportSettings.resolve(deploy_config_of(cfg),
                                      backend='openvino')
    exporter = build_exporter('openvino', **settings.exporter_kwargs())
    exporter.prepare_model(model)
    with torch.no_grad():
        example = model.data_preprocessor(data[0], False)['inputs'][:2]
    if settings.input_hw and tuple(example.shape[-2:]) != settings.input_hw:
        raise ValueError(f'the data\'s {tuple(example.shape[-2:])} images '
                         f'are not the deploy_cfg\'s {settings.input_hw}')
    path = osp.join(workdir, 'ours.onnx')
    exporter.export(model, example.float(), path)
    return path


def build_nncf(fp32_ov, calib, transformer: bool):
    import nncf
    extra = dict(model_type=nncf.ModelType.TRANSFORMER) if transformer \
        else {}
    quantized = nncf.quantize(
        fp32_ov, nncf.Dataset([b.numpy() for b in calib]),
        subset_size=len(calib), **extra)
    return quantized


def build_torchao(arch, calib, batches) -> Infer:
    from torchao.quantization.pt2e.lowering import lower_pt2e_quantized_to_x86
    from torchao.quantization.pt2e.quantize_pt2e import (
        convert_pt2e,
        prepare_pt2e,
    )
    from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
        X86InductorQuantizer,
        get_default_x86_inductor_quantization_config,
    )
    quantizer = X86InductorQuantizer()
    quantizer.set_global(get_default_x86_inductor_quantization_config())
    batch = torch.export.Dim('batch', min=1, max=1024)
    exported = torch.export.export(
        TensorMode(copy.deepcopy(arch)).eval(), (calib[0], ),
        dynamic_shapes=({0: batch}, ), strict=False).module()
    prepared = prepare_pt2e(exported, quantizer)
    with torch.no_grad():
        for x in calib:
            prepared(x)
    converted = convert_pt2e(prepared)
    # Lowering specializes on the example's shape: one module per batch
    # size timed, the converted (reference) module for the rest.
    lowered = {}
    with torch.no_grad():
        for b in batches:
            lowered[b] = lower_pt2e_quantized_to_x86(
                converted, (calib[0][:1].repeat(b, 1, 1, 1), ))

    def infer(x: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            module = lowered.get(len(x), converted)
            return module(torch.from_numpy(x)).numpy()

    return infer


def build_ppq(arch, calib, workdir) -> str:
    from ppq.api import TargetPlatform, export_ppq_graph, quantize_torch_model
    graph = quantize_torch_model(
        model=copy.deepcopy(arch).eval(), calib_dataloader=calib,
        calib_steps=len(calib), input_shape=list(calib[0].shape),
        collate_fn=lambda x: x, platform=TargetPlatform.OPENVINO_INT8,
        device='cpu')
    path = osp.join(workdir, 'ppq.onnx')
    export_ppq_graph(graph, platform=TargetPlatform.OPENVINO_INT8,
                     graph_save_to=path)
    return path


def timed(contender: Contender, build: Callable, threads: int) -> None:
    """Quantize with ``build`` (timed), then compile what it returns for
    OpenVINO; a builder that returns a callable runs in PyTorch."""
    start = time.perf_counter()
    try:
        built = build()
        contender.seconds = time.perf_counter() - start
        if callable(built):
            contender.infer = built
        else:
            contender.source = built
            contender.infer = ov_compile(built, threads)
    except Exception as e:  # a failing peer is a row, not a crash
        traceback.print_exc()
        contender.error = f'{type(e).__name__}: {str(e).splitlines()[0]}' \
            if str(e) else type(e).__name__
        contender.error = contender.error[:160]


def top1(infer: Infer, images: torch.Tensor, labels: np.ndarray) -> float:
    hits = 0
    for i in range(0, len(images), 32):
        logits = infer(images[i:i + 32].numpy())
        hits += int((logits.argmax(1) == labels[i:i + 32]).sum())
    return 100.0 * hits / len(labels)


def latencies(contenders: List[Contender], shape, batch: int,
              repeats: int, warmup: int = 2) -> None:
    """Median ms per call, contenders interleaved: each round calls every
    contender once, in a fresh (seeded) random order."""
    x = np.random.default_rng(0).standard_normal(
        (batch, *shape)).astype(np.float32)
    live = [c for c in contenders if c.infer is not None]
    times: Dict[str, List[float]] = {c.name: [] for c in live}
    cpu: Dict[str, List[float]] = {c.name: [] for c in live}
    for _ in range(warmup):
        for c in live:
            c.infer(x)
    rng = np.random.default_rng(batch)
    for _ in range(repeats):
        # a random order: a rotated one keeps every contender behind the
        # same one (ours behind the bf16 fp32 model) in most rounds
        for index in rng.permutation(len(live)):
            c = live[index]
            start, start_cpu = time.perf_counter(), time.process_time()
            c.infer(x)
            times[c.name].append(time.perf_counter() - start)
            cpu[c.name].append(time.process_time() - start_cpu)
    for c in live:
        c.times[batch] = times[c.name]
        c.latency[batch] = 1e3 * statistics.median(times[c.name])
        c.cpu[batch] = 1e3 * statistics.median(cpu[c.name])


def compilation_ratios(contenders: Dict[str, Contender], shape,
                       batches: Tuple[int, ...], args) -> None:
    """Compile ours and NNCF ``args.compilations - 1`` more times; each
    time, time the pair interleaved and record ours / NNCF per batch in
    ``ours.ratios`` (the headline latencies stay those of the first
    compilation)."""
    pair = [contenders[n] for n in RECOMPILED]
    if any(c.source is None for c in pair):
        return
    headline = {c.name: (c.infer, dict(c.times), dict(c.latency),
                         dict(c.cpu)) for c in pair}
    ours, nncf = pair
    for _ in range(args.compilations - 1):
        for c in pair:
            c.infer = ov_compile(c.source, args.threads)
        for batch in batches:
            latencies(pair, shape, batch, args.repeats)
            ours.ratios.setdefault(batch, []).append(
                ours.latency[batch] / nncf.latency[batch])
    for c in pair:
        c.infer, c.times, c.latency, c.cpu = headline[c.name]


def prepare(key: str, args, bn: str = 'trained'):
    """The config, the fp32 architecture, the data (``load_data``) and the
    fp32 model converted for OpenVINO (dynamic batch), for model ``key``
    with BN statistics ``bn``."""
    import openvino as ov

    from mmrazor_quant.registry import MODELS
    shape = SPECS[key][2]
    cfg = Config.fromfile(osp.join(REPO, SPECS[key][1]))
    init_default_scope('mmcls')
    arch = build_fp32(cfg, bn)
    preprocessor = MODELS.build(cfg.model.data_preprocessor)
    if not arch.trained and shape[-1] == 28 and args.train_steps:
        print(f'[{key}] no fp32 checkpoint: {args.train_steps} training '
              'steps', flush=True)
        quick_train(arch, cfg, preprocessor, args.train_steps)
        arch.trained = f'{args.train_steps} steps'
    data, calib, test = load_data(cfg, shape, args, preprocessor)
    fp32_ov = ov.convert_model(
        TensorMode(arch).eval(), example_input=calib[0][:1],
        input=[(-1, *shape)])
    return cfg, arch, data, calib, test, fp32_ov


def run_model(key: str, args, bn: str = 'trained'
              ) -> Tuple[str, List[Contender], bool]:
    title, _, shape, batches, transformer = SPECS[key]
    cfg, arch, data, calib, test, fp32_ov = prepare(key, args, bn)
    contenders = {n: Contender(n) for n in FP32 + PEERS}
    with tempfile.TemporaryDirectory() as workdir:
        for name, precision in zip(FP32, ('f32', None)):
            timed(contenders[name],
                  lambda p=precision: ov_compile(fp32_ov, args.threads, p),
                  args.threads)
            contenders[name].seconds = None
        skip = set(args.skip)
        builders = {
            'ours': lambda: build_ours(cfg, arch, data, workdir),
            'NNCF': lambda: build_nncf(fp32_ov, calib, transformer),
            'torchao PT2E': lambda: build_torchao(arch, calib, batches),
            'PPQ': lambda: build_ppq(arch, calib, workdir),
        }
        for name, build in builders.items():
            if name in skip:
                contenders[name].error = 'skipped (--skip)'
                continue
            print(f'[{key}] quantizing: {name}', flush=True)
            timed(contenders[name], build, args.threads)
        if contenders['NNCF'].source is not None:
            control = contenders[CONTROL] = Contender(CONTROL)
            control.infer = ov_compile(contenders['NNCF'].source,
                                       args.threads)
        for c in contenders.values():
            if c.infer is not None and test is not None:
                c.top1 = top1(c.infer, *test)
        for batch in batches:
            print(f'[{key}] timing batch {batch}', flush=True)
            in_torch = [c for c in contenders.values()
                        if c.name in TORCH_CONTENDERS]
            in_openvino = [c for c in contenders.values()
                           if c.name not in TORCH_CONTENDERS]
            for group in (in_openvino, in_torch):
                latencies(group, shape, batch, args.repeats)
        if args.compilations > 1:
            print(f'[{key}] {args.compilations - 1} more compilations of '
                  'ours and NNCF', flush=True)
            compilation_ratios(contenders, shape, batches, args)
    return title, list(contenders.values()), arch.trained


def primitive_kind(primitive: Tuple[str, ...]) -> Tuple[str, ...]:
    """A oneDNN primitive (``onednn_primitives``) as kind, implementation,
    data types (``src:u8 wei:s8 dst:s8``) and attributes: scales and
    post-ops, without problem sizes and memory layouts."""
    kind, impl, mds, attrs, _ = primitive
    types = ' '.join(':'.join(md.split(':')[:2]) for md in mds.split())
    attrs = attrs.replace('attr-scratchpad:user', '').strip()
    return kind, impl, types, attrs


def graph_makeup(key: str, args, bn: str = 'trained') -> List[str]:
    """Lines comparing what OpenVINO's CPU plugin executes for ours and for
    NNCF's model (``--graphs``), each compiled as for the timing and called
    once at each batch size: the runtime layers by type, runtime precision
    and kernel (``runtime_layers``), then the oneDNN primitives by kind,
    implementation, data types and attributes, the fused post-ops
    included (``primitive_kind``)."""
    import openvino as ov

    from mmrazor_quant.deploy.openvino.runtime_graph import (
        layer_differences,
        onednn_primitives,
        runtime_layers,
    )
    title, _, shape, batches, transformer = SPECS[key]
    cfg, arch, data, calib, _, fp32_ov = prepare(key, args, bn)
    label = title if arch.trained else \
        f'{title}, BN as {"trained" if bn == "trained" else "initialised"}'
    lines = []
    with tempfile.TemporaryDirectory() as workdir:
        files = {'ours': build_ours(cfg, arch, data, workdir),
                 'NNCF': osp.join(workdir, 'nncf.xml')}
        ov.save_model(build_nncf(fp32_ov, calib, transformer), files['NNCF'],
                      compress_to_fp16=False)
        compiled = {name: ov_compiled(path, args.threads)
                    for name, path in files.items()}
        for batch in batches:
            x = np.random.default_rng(0).standard_normal(
                (batch, *shape)).astype(np.float32)
            layers, primitives = {}, {}
            for name, model in compiled.items():
                model.create_infer_request().infer([x])
                layers[name] = runtime_layers(model)
                primitives[name] = collections.Counter()
                for primitive, n in onednn_primitives(
                        files[name], (batch, *shape),
                        ov_config(args.threads)).items():
                    primitives[name][primitive_kind(primitive)] += n
            for what, counts in (('runtime layers', layers),
                                 ('oneDNN primitives', primitives)):
                differences = layer_differences(counts['ours'],
                                                counts['NNCF'])
                lines.append(
                    f'{label}, batch {batch}, {what}: ours '
                    f'{sum(counts["ours"].values())}, NNCF '
                    f'{sum(counts["NNCF"].values())}'
                    + ('; the same' if not differences else ''))
                lines += [f'    ours {a}, NNCF {b}: {" / ".join(layer)}'
                          for layer, (a, b) in differences.items()]
    return lines


def ratio_interval(ours: List[float], peer: List[float],
                   resamples: int = 2000) -> Tuple[float, float]:
    """95 % bootstrap interval of ``median(ours) / median(peer)``: the
    rounds resampled with replacement, each round's two calls kept
    together (they ran under the same background load)."""
    a, b = np.asarray(ours), np.asarray(peer)
    rng = np.random.default_rng(0)
    rounds = rng.integers(0, len(a), size=(resamples, len(a)))
    ratios = np.median(a[rounds], axis=1) / np.median(b[rounds], axis=1)
    low, high = np.percentile(ratios, [2.5, 97.5])
    return float(low), float(high)


def format_rows(title: str, contenders: List[Contender], trained: bool,
                batches: Tuple[int, ...]) -> List[str]:
    ours = next(c for c in contenders if c.name == 'ours')
    nncf = next(c for c in contenders if c.name == 'NNCF')
    rows = []
    for c in contenders:
        if c.error:
            rows.append(f'| {title} | {c.name} | failed: {c.error} |'
                        + ' |' * 3)
            continue
        acc = f'{c.top1:.1f}' if c.top1 is not None and trained else 'n/a'
        sec = f'{c.seconds:.1f}' if c.seconds is not None else ''
        lat = ' | '.join(f'{c.latency[b]:.2f}' for b in batches)
        rows.append(f'| {title} | {c.name} | {acc} | {sec} | {lat} |')
    if ours.latency and nncf.latency:
        ratio = ' | '.join(
            f'**{ours.latency[b] / nncf.latency[b]:.2f}** '
            '({:.2f}-{:.2f}; '.format(
                *ratio_interval(ours.times[b], nncf.times[b])) +
            f'CPU time {ours.cpu[b] / nncf.cpu[b]:.2f}' +
            (f'; {len(ours.ratios[b])} more compilations '
             f'{min(ours.ratios[b]):.2f}-{max(ours.ratios[b]):.2f}'
             if ours.ratios.get(b) else '') + ')' for b in batches)
        rows.append(f'| {title} | ours / NNCF | | | {ratio} |')
    control = next((c for c in contenders if c.name == CONTROL), None)
    if control is not None and control.latency and nncf.latency:
        ratio = ' | '.join(
            f'{control.latency[b] / nncf.latency[b]:.2f} '
            '({:.2f}-{:.2f})'.format(
                *ratio_interval(control.times[b], nncf.times[b]))
            for b in batches)
        rows.append(f'| {title} | A/A: {CONTROL} / NNCF | | | {ratio} |')
    return rows


def environment(threads: int) -> str:
    import openvino
    flags = set()
    try:
        with open('/proc/cpuinfo') as f:
            for line in f:
                if line.startswith('flags'):
                    flags = {w for w in line.split()
                             if w in ('avx512_vnni', 'avx_vnni',
                                      'avx512_bf16', 'amx_int8')}
                    break
        with open('/proc/cpuinfo') as f:
            cpu = next((line.split(':', 1)[1].strip() for line in f
                        if line.startswith('model name')), '?')
    except OSError:
        cpu = platform.processor()
    versions = [f'openvino {openvino.__version__.split("-")[0]}',
                f'torch {torch.__version__}']
    for module in ('nncf', 'torchao', 'ppq'):
        try:
            versions.append(f'{module} {__import__(module).__version__}')
        except Exception:
            pass
    load = os.getloadavg()
    return (f'{cpu}, {os.cpu_count()} cores, flags: '
            f'{" ".join(sorted(flags)) or "none of vnni/bf16/amx"}; '
            f'{", ".join(versions)}; {threads} inference threads; '
            f'load average at the end {load[0]:.1f} / {load[1]:.1f} / '
            f'{load[2]:.1f}')


def model_runs(args) -> List[Tuple[str, str]]:
    """``(model key, BN statistics)`` to run: ``--bn`` applies to the
    random-weight ImageNet-size backbones only."""
    runs = []
    for key in args.models:
        random_weights = SPECS[key][2][-1] != 28
        modes = ('trained', 'initial') if args.bn == 'both' else (args.bn, )
        runs += [(key, bn) for bn in (modes if random_weights
                                      else ('trained', ))]
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--models', nargs='+', default=list(SPECS),
                        choices=list(SPECS))
    parser.add_argument('--repeats', type=int, default=50)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--calib-batches', type=int, default=32,
                        help='calibration batches of 64 digits')
    parser.add_argument('--calib-batches-224', type=int, default=16,
                        help='calibration batches of 8 random images for '
                        'the ImageNet-size models')
    parser.add_argument('--train-steps', type=int, default=300,
                        help='AdamW steps for a demo model without its fp32 '
                        'checkpoint (0: keep random weights)')
    parser.add_argument('--compilations', type=int, default=3,
                        help='compilations of ours and NNCF: the first '
                        'gives the headline ratio, the others its range')
    parser.add_argument('--bn', choices=('trained', 'initial', 'both'),
                        default='trained',
                        help='BN statistics of the random-weight '
                        'ImageNet-size backbones')
    parser.add_argument('--skip', nargs='*', default=[], choices=PEERS)
    parser.add_argument('--graphs', action='store_true',
                        help='instead of timing: compare the runtime '
                        'layers of ours and NNCF (type, precision, kernel)')
    parser.add_argument('--out', help='also write the table to this file')
    args = parser.parse_args()
    os.chdir(REPO)
    from mmrazor_quant.registry import register_all_modules
    register_all_modules(init_default_scope=False)
    # calibration and torchao in PyTorch get as many threads as OpenVINO:
    # more than the cores would oversubscribe them on a loaded machine
    torch.set_num_threads(args.threads)
    if args.graphs:
        lines = []
        for key, bn in model_runs(args):
            run_lines = graph_makeup(key, args, bn)
            print('\n'.join(run_lines), flush=True)
            lines += run_lines
        print('\n' + '\n'.join(lines))
        if args.out:
            with open(args.out, 'w') as f:
                f.write('\n'.join(lines) + '\n')
        return
    lines = ['| model | contender | top-1 % | quantize s | '
             'latency ms (batch 1) | latency ms (larger batch) |',
             '|---|---|---|---|---|---|']
    for key, bn in model_runs(args):
        title, contenders, trained = run_model(key, args, bn)
        batches = SPECS[key][3]
        label = f'{title} (b{"/".join(map(str, batches))})'
        if isinstance(trained, str):
            label += f', fp32 trained {trained} only'
        elif not trained:
            label += (', random fp32 weights, BN as '
                      + ('trained' if bn == 'trained' else 'initialised'))
        lines += format_rows(label, contenders, trained, batches)
        print('\n'.join(lines), flush=True)
    table = '\n'.join(lines) + f'\n\n{environment(args.threads)}, median ' \
        f'of {args.repeats} interleaved calls.\n'
    print('\n' + table)
    if args.out:
        with open(args.out, 'w') as f:
            f.write(table)


if __name__ == '__main__':
    main()
