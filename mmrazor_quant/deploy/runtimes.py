"""Run an exported model in a real runtime: each runtime is a loader
function registered in :data:`~mmrazor_quant.registry.RUNTIMES`, taking the
file's path and options and returning a function of one input batch."""
from typing import Callable, List, Sequence

import numpy as np

from mmrazor_quant.registry import RUNTIMES

__all__ = [
    'load_runtime', 'runtime_names', 'quantizes_by_division',
    'accumulates_exactly'
]

#: Runs one batch: an array for the model's first input, or a list of
#: arrays for its inputs in order.
Runner = Callable[[np.ndarray], np.ndarray]

#: Runtimes whose ``QuantizeLinear`` divides by the scale as the ONNX spec
#: writes it, ``round(x / s)`` with ties to even (onnxruntime's CPU kernel;
#: TensorRT's too, for which onnxruntime stands in here).
_DIVIDING_RUNTIMES = frozenset({'onnxruntime'})


def quantizes_by_division(runtime: str) -> bool:
    """Whether ``runtime`` quantizes by ``round(x / s)`` (see
    :func:`~mmrazor_quant.deploy.qdq_fake_quantize.quantize_by_division`);
    OpenVINO's FakeQuantize has arithmetic of its own."""
    return str(runtime).rpartition(".")[2] in _DIVIDING_RUNTIMES


#: Runtimes that run every quantized conv and linear as an int8 kernel,
#: summing in an int32 accumulator (OpenVINO's CPU plugin: its
#: low-precision transformations take each Q/DQ conv whatever follows it).
#: onnxruntime fuses only a conv whose output is quantized directly and
#: runs the others in float32, as the training graph does.
_EXACTLY_ACCUMULATING_RUNTIMES = frozenset({'openvino'})


def accumulates_exactly(runtime: str) -> bool:
    """Whether ``runtime`` sums a quantized conv's products exactly (see
    :func:`~mmrazor_quant.deploy.runtime_arithmetic.exact_accumulation`)."""
    return str(runtime).rpartition(".")[2] in _EXACTLY_ACCUMULATING_RUNTIMES


@RUNTIMES.register_module(name='onnxruntime')
def onnxruntime_runner(path: str, num_threads: int = 0,
                       optimize: bool = True,
                       qdq_fusion: bool = True,
                       all_outputs: bool = False,
                       disabled_optimizers: Sequence[str] = ()) -> Runner:
    """A function running ``path`` on onnxruntime's CPU provider with all
    graph optimizations (so QDQ is fused into int8 kernels).

    The thread pool does not spin between calls: parity checks alternate
    with PyTorch, whose threads a spinning pool would starve.

    Args:
        path (str): The ``.onnx`` file.
        num_threads (int): Intra-op threads; 0 lets onnxruntime choose.
            Defaults to 0.
        optimize (bool): All graph optimizations (int8 kernels); False runs
            the graph as written (the ONNX reference semantics). Defaults
            to True.
        qdq_fusion (bool): Fuse Q/DQ pairs into int8 kernels (which take an
            int32 bias on ``s_in * s_w``). False keeps every other
            optimization but computes each op in float on dequantized
            values with its float bias, which is TensorRT's arithmetic
            (``session.disable_quant_qdq``). Defaults to True.
        all_outputs (bool): Return the list of all outputs (e.g. a
            detector's per-level head outputs) instead of the first.
            Defaults to False.
        disabled_optimizers (Sequence[str]): Graph transformers to leave
            out, by name (e.g. ``'DoubleQDQPairsRemover'``, which merges
            ``Q -> DQ -> Q -> DQ`` into one rounding). Defaults to none.
    """
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = num_threads
    options.add_session_config_entry('session.intra_op.allow_spinning', '0')
    if not qdq_fusion:
        options.add_session_config_entry('session.disable_quant_qdq', '1')
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else \
        ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(
        path, options, providers=['CPUExecutionProvider'],
        disabled_optimizers=list(disabled_optimizers) or None)
    names = [i.name for i in session.get_inputs()]

    def run(x: np.ndarray) -> np.ndarray:
        feeds = dict(zip(names, x)) if isinstance(x, (list, tuple)) \
            else {names[0]: x}
        outs = session.run(None, feeds)
        return outs if all_outputs else outs[0]

    return run


@RUNTIMES.register_module(name='openvino')
def openvino_runner(path: str, num_threads: int = 0,
                    all_outputs: bool = False) -> Runner:
    """A function running ``path`` with OpenVINO's CPU plugin (which turns
    QDQ pairs into FakeQuantize and executes the quantized ops in int8).

    Args:
        path (str): The ``.onnx`` file.
        num_threads (int): Inference threads; 0 lets OpenVINO choose.
            Defaults to 0.
        all_outputs (bool): Return the list of all outputs instead of the
            first. Defaults to False.
    """
    import openvino as ov
    core = ov.Core()
    config = {'INFERENCE_NUM_THREADS': num_threads} if num_threads else {}
    # f32 inference precision: otherwise CPUs with bf16 would run the float
    # parts in bf16 and the comparison would measure that, not quantization.
    config['INFERENCE_PRECISION_HINT'] = 'f32'
    compiled = core.compile_model(core.read_model(path), 'CPU', config)

    def run(x: np.ndarray) -> np.ndarray:
        result = compiled(list(x) if isinstance(x, (list, tuple)) else [x])
        if all_outputs:
            return [np.asarray(result[o]) for o in compiled.outputs]
        return np.asarray(result[0])

    return run


def runtime_names() -> List[str]:
    """The registered runtimes, sorted."""
    RUNTIMES.import_from_location()
    return sorted(RUNTIMES.module_dict)


def load_runtime(runtime: str, path: str, **kwargs) -> Runner:
    """Load ``path`` in the registered runtime ``runtime``.

    Raises:
        ValueError: If ``runtime`` is unknown.
    """
    loader = RUNTIMES.get(f'mmrazor_quant.{runtime}') \
        if isinstance(runtime, str) and '.' not in runtime else \
        RUNTIMES.get(runtime)
    if loader is None:
        raise ValueError(f'runtime must be one of {runtime_names()}, got '
                         f'{runtime!r}')
    return loader(path, **kwargs)
