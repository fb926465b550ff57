"""The ``ncnn`` runtime plugin: a ``.param``/``.bin`` run by ncnn's Python
wheel, fed and read in float32 like the other runtimes, and the arithmetic
it declares."""
import os.path as osp
from contextlib import contextmanager
from typing import Iterator, List, Optional, Tuple

import numpy as np
from torch import fx, nn

from mmrazor_quant.registry import RUNTIMES
from ..runtimes import BaseRuntime, Runner
from .arithmetic import NCNNInt8Layer, ncnn_deploy_model

__all__ = ['NCNNRuntime', 'ncnn_paths_of', 'load_net', 'MISSING_RUNTIME',
           'NCNN_VERSION']

#: The wheel ``make ncnn`` installs.
NCNN_VERSION = '1.0.20261020'
#: What to do when the runtime is not installed.
MISSING_RUNTIME = ('the ncnn runtime is not installed: run `make ncnn` '
                   f'(pip install --no-deps ncnn=={NCNN_VERSION})')


def ncnn_paths_of(path: str) -> Tuple[str, str]:
    """The ``(.param, .bin)`` of an export: ``path`` is the ``.param``, or
    the ``.onnx`` path the export was asked for (the files go beside it,
    named after its stem)."""
    stem = osp.splitext(path)[0]
    return stem + '.param', stem + '.bin'


def import_ncnn():
    """The ``ncnn`` module.

    Raises:
        ImportError: If it is not installed (says how to install it).
    """
    try:
        import ncnn
    except ImportError as e:
        raise ImportError(MISSING_RUNTIME) from e
    return ncnn


def load_net(path: str, num_threads: int = 1, packing: bool = True,
             bin_path: Optional[str] = None):
    """An ``ncnn.Net`` of the ``.param``/``.bin`` of ``path``, with float32
    storage and arithmetic (no fp16/bf16: the float layers then compute as
    the simulation does) and int8 inference on.

    Args:
        path (str): The ``.param`` (or the export's ``.onnx`` path).
        num_threads (int): Threads. Defaults to 1.
        packing (bool): ncnn's packed layouts (its default, and its fast
            kernels). Defaults to True.
        bin_path (str, optional): The ``.bin``, if not beside the
            ``.param`` under the same stem. Defaults to None.

    Raises:
        ImportError: If ncnn is missing.
        FileNotFoundError: If a file is missing.
        RuntimeError: If ncnn refuses the files.
    """
    ncnn = import_ncnn()
    param, weights = ncnn_paths_of(path)
    if bin_path is not None:
        param, weights = path, bin_path
    for file in (param, weights):
        if not osp.exists(file):
            raise FileNotFoundError(f'ncnn: {file} does not exist')
    net = ncnn.Net()
    opt = net.opt
    opt.num_threads = num_threads
    opt.use_int8_inference = True
    opt.use_packing_layout = packing
    for name in ('use_fp16_packed', 'use_fp16_storage',
                 'use_fp16_arithmetic', 'use_bf16_storage',
                 'use_vulkan_compute'):
        if hasattr(opt, name):
            setattr(opt, name, False)
    if net.load_param(param) != 0:
        raise RuntimeError(f'ncnn: cannot load {param}')
    if net.load_model(weights) != 0:
        raise RuntimeError(f'ncnn: cannot load {weights}')
    return net


def blob_names(param: str) -> Tuple[List[str], List[str]]:
    """``(inputs, outputs)`` of a ``.param``: the blobs of its ``Input``
    layers, and the blobs no layer reads, in order."""
    with open(param) as f:
        lines = f.read().split('\n')[2:]
    inputs, produced, read = [], [], set()
    for line in lines:
        parts = line.split()
        if not parts:
            continue
        bottoms, tops = int(parts[2]), int(parts[3])
        names = parts[4:4 + bottoms + tops]
        read.update(names[:bottoms])
        produced += names[bottoms:]
        if parts[0] == 'Input':
            inputs += names[bottoms:]
    return inputs, [b for b in produced if b not in read]


@RUNTIMES.register_module()
class NCNNRuntime(BaseRuntime):
    """ncnn's Python wheel running the ``.param``/``.bin`` of an export
    (see :func:`ncnn_paths_of`) on float input batches, one sample at a
    time (an ncnn blob has no batch axis).

    Its int8 ``Convolution``, ``ConvolutionDepthWise`` and
    ``InnerProduct`` quantize their float32 input by multiplying it with
    the float32 reciprocal of the scale (ncnn stores ``1 / s``), rounding
    half away from zero; sum the int8 products exactly in int32; and
    requantize in float: ``float32(acc) * descale + bias`` with
    ``descale = 1 / (s_in * s_w)`` in float32. Every other layer computes in
    float32; its ``Swish`` (SiLU) with its own exponential and a fast
    division (:mod:`~.swish`). Its int8 kernels multiply s8 by s8, widened
    to int16 first: no pair of products saturates.

    The simulation is :func:`~.arithmetic.ncnn_deploy_model` of the deploy
    model: each int8 layer replaced by an :class:`~.arithmetic.NCNNInt8Layer`
    computing the above, each SiLU by a :class:`~.swish.NCNNSwish`.
    """
    name = 'ncnn'
    quantizes_by = 'multiplication'
    accumulates_exactly = True

    @contextmanager
    def simulation(self, model: nn.Module, **options) -> Iterator[nn.Module]:
        """Yield ``model`` computing as ncnn does: a copy with
        :class:`~.arithmetic.NCNNInt8Layer` in place of each quantized conv
        and linear (``model`` itself if it has them already)."""
        if isinstance(model, fx.GraphModule) and not any(
                isinstance(m, NCNNInt8Layer) for m in model.modules()):
            model = ncnn_deploy_model(model)
        yield model

    def load(self, path: str, num_threads: int = 1,
             packing: bool = True) -> Runner:
        """A function running ``path``.

        Args:
            path (str): The ``.param``, or the ``.onnx`` path it was
                exported for.
            num_threads (int): Threads. Defaults to 1.
            packing (bool): ncnn's packed layouts (on x86 the packed int8
                depthwise kernel rescales with an approximate reciprocal,
                which no simulation reproduces). Defaults to True.
        """
        ncnn = import_ncnn()
        net = load_net(path, num_threads, packing)
        inputs, outputs = blob_names(ncnn_paths_of(path)[0])

        def one(sample: np.ndarray) -> List[np.ndarray]:
            # ncnn.Mat wraps the array's memory: keep a contiguous copy
            # alive until the extractor is done with it.
            data = np.ascontiguousarray(sample, dtype=np.float32).copy()
            ex = net.create_extractor()
            ex.input(inputs[0], ncnn.Mat(data))
            results = []
            for name in outputs:
                ret, mat = ex.extract(name)
                if ret != 0:
                    raise RuntimeError(
                        f'ncnn: extracting {name} failed ({ret})')
                results.append(np.array(mat, dtype=np.float32, copy=True))
            del ex
            return results

        def run(x: np.ndarray) -> List[np.ndarray]:
            per_sample = [one(sample) for sample in x]
            return [np.stack([r[i] for r in per_sample])
                    for i in range(len(outputs))]

        return run
