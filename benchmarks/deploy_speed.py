"""onnxruntime CPU latency of our exported ResNet-18 QDQ model against the
fp32 ONNX and onnxruntime's own ``quantize_static`` QDQ of the same model.

All three come from one full-width mmcls ResNet_CIFAR-18 (32x32 input,
random weights, BN in eval mode), are calibrated on the same random
batches and timed in one run, interleaved, with ``intra_op_num_threads``
threads; the figure is the median of ``--repeats`` runs per batch size.

"ours" is the onnxruntime path of docs/deploy.md: W7A8 (per-channel
symmetric 7-bit weights, full-range u8 activations, so no clip is exported
and u8 x s7 products cannot saturate without VNNI) with the biases put on
the int32 grid the int8 kernels use. Its parity with the simulation is
printed too (same inputs as the timing, batch 32).

Usage:
    python benchmarks/deploy_speed.py [--repeats 30] [--threads 2]
"""
import argparse
import copy
import os.path as osp
import statistics
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import numpy as np
import torch

from mmrazor_quant.deploy import (
    align_bias_to_int32_grid_,
    check_parity,
    export_model,
)
from mmrazor_quant.deploy.onnx_export import DEFAULT_OPSET
from mmrazor_quant.registry import MODELS, register_all_modules

ARCH = dict(
    _scope_='mmcls',
    type='ImageClassifier',
    backbone=dict(type='ResNet_CIFAR', depth=18),
    neck=dict(type='GlobalAveragePooling'),
    head=dict(type='LinearClsHead', num_classes=10, in_channels=512))
SKIPPED = [
    'mmcls.models.heads.ClsHead._get_loss',
    'mmcls.models.heads.ClsHead._get_predictions'
]
# 7-bit weights on [-63, 63]: u8 x s7 pairs stay below int16 saturation.
W7 = dict(qdtype='qint8', bit=7, is_symmetry=True, is_symmetric_range=True)
A8 = dict(qdtype='quint8', bit=8, is_symmetry=True)


def quantized_model(arch: torch.nn.Module) -> torch.nn.Module:
    """OpenVINOQuantizer W7A8 over ``arch`` (uncalibrated)."""
    return MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=arch,
            forward_modes=('tensor', ),
            quantizer=dict(
                type='mmrazor_quant.OpenVINOQuantizer',
                global_qconfig=dict(
                    w_observer=dict(
                        type='mmrazor_quant.PerChannelMinMaxObserver'),
                    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                    w_qscheme=W7,
                    a_qscheme=A8),
                tracer=dict(
                    type='mmrazor_quant.CustomTracer',
                    skipped_methods=SKIPPED))))


def export_all(workdir: str, calib: List[torch.Tensor]
               ) -> Tuple[Dict[str, str], torch.nn.Module]:
    """Write the fp32, ours and ``quantize_static`` models; also return our
    deploy model (the simulation)."""
    from mmrazor_quant.models.fake_quants import disable_observer
    torch.manual_seed(0)
    arch = MODELS.build(copy.deepcopy(ARCH)).eval()
    paths = {k: osp.join(workdir, f'{k}.onnx')
             for k in ('fp32', 'ours', 'quantize_static')}
    wrapped = _TensorMode(arch).eval()
    with torch.no_grad():
        torch.onnx.export(
            wrapped, (calib[0], ), paths['fp32'], input_names=['input'],
            output_names=['output'], dynamo=False,
            opset_version=DEFAULT_OPSET,
            dynamic_axes={'input': [0], 'output': [0]})
    qmodel = quantized_model(copy.deepcopy(arch)).eval()
    with torch.no_grad():
        for batch in calib:
            qmodel(batch, mode='tensor')
    disable_observer(qmodel)
    align_bias_to_int32_grid_(qmodel)
    result = export_model(qmodel, calib[0][:2], paths['ours'], 'onnxruntime')
    _quantize_static(paths['fp32'], paths['quantize_static'], calib)
    return paths, result.deploy_model


class _TensorMode(torch.nn.Module):

    def __init__(self, arch: torch.nn.Module) -> None:
        super().__init__()
        self.arch = arch

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.arch(x, mode='tensor')


def _quantize_static(src: str, dst: str, calib: List[torch.Tensor]) -> None:
    """onnxruntime's recommended flow: ``quant_pre_process`` (shape
    inference, BN and constant folding) then QDQ ``quantize_static``."""
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process
    pre = dst.replace('.onnx', '_pre.onnx')
    quant_pre_process(src, pre)

    class Reader(CalibrationDataReader):

        def __init__(self) -> None:
            self.batches = iter(calib)

        def get_next(self):
            batch = next(self.batches, None)
            return None if batch is None else {'input': batch.numpy()}

    quantize_static(
        pre, dst, Reader(), quant_format=QuantFormat.QDQ,
        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
        per_channel=True)


def session(path: str, threads: int) -> Callable[[np.ndarray], None]:
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    # No spinning: with a loaded machine a spinning pool measures the load.
    options.add_session_config_entry('session.intra_op.allow_spinning', '0')
    sess = ort.InferenceSession(path, options,
                                providers=['CPUExecutionProvider'])
    return lambda x: sess.run(None, {'input': x})


def time_interleaved(runs: Dict[str, Callable], x: np.ndarray,
                     repeats: int, warmup: int = 3) -> Dict[str, float]:
    """Median seconds per call; contenders alternate within each round so
    background load hits them alike."""
    times = {k: [] for k in runs}
    for _ in range(warmup):
        for run in runs.values():
            run(x)
    for _ in range(repeats):
        for name, run in runs.items():
            start = time.perf_counter()
            run(x)
            times[name].append(time.perf_counter() - start)
    return {k: statistics.median(v) for k, v in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--repeats', type=int, default=30)
    parser.add_argument('--threads', type=int, default=2)
    args = parser.parse_args()
    register_all_modules(init_default_scope=False)
    torch.set_num_threads(args.threads)
    gen = torch.Generator().manual_seed(0)
    calib = [torch.randn(32, 3, 32, 32, generator=gen) for _ in range(4)]
    with tempfile.TemporaryDirectory() as workdir:
        paths, deployed = export_all(workdir, calib)
        runs = {k: session(p, args.threads) for k, p in paths.items()}
        print(f'ResNet_CIFAR-18 (11.2 M params), 32x32, onnxruntime CPU, '
              f'{args.threads} threads, median of {args.repeats}')
        print(f'{"batch":>5} {"fp32 ms":>9} {"ours ms":>9} {"q_stat ms":>9} '
              f'{"ours/q_static":>13} {"fp32/ours":>9}')
        inputs = {}
        for batch in (1, 32):
            x = torch.randn(batch, 3, 32, 32, generator=gen)
            inputs[batch] = x
            t = time_interleaved(runs, x.numpy(), args.repeats)
            row = [t['fp32'], t['ours'], t['quantize_static']]
            print(f'{batch:>5} ' + ' '.join(f'{1e3 * v:9.2f}' for v in row)
                  + f' {t["ours"] / t["quantize_static"]:13.2f}'
                  f' {t["fp32"] / t["ours"]:9.2f}')
        report = check_parity(deployed, paths['ours'], inputs[32],
                              num_threads=args.threads)
        print('ours vs its simulation, ' + report.format())


if __name__ == '__main__':
    main()
