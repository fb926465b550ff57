"""The ``litert`` runtime: a ``.tflite`` run by LiteRT's interpreter
(``ai_edge_litert``), fed and read in float like the other runtimes."""
import os.path as osp
from typing import List

import numpy as np

from mmrazor_quant.registry import RUNTIMES
from ..runtimes import BaseRuntime, Runner

__all__ = ['LiteRTRuntime', 'tflite_path_of', 'MISSING_RUNTIME']

#: What to do when the interpreter is not installed.
MISSING_RUNTIME = ('the LiteRT runtime is not installed: run `make litert` '
                   '(pip install ai-edge-litert==2.3.0 tflite==2.18.0 '
                   'flatbuffers)')


def tflite_path_of(path: str) -> str:
    """The ``.tflite`` of an export: ``path`` itself, or the file the
    LiteRT exporter wrote beside the ``.onnx`` it was converted from."""
    return path if path.endswith('.tflite') else \
        osp.splitext(path)[0] + '.tflite'


def load_interpreter(path: str, num_threads: int = 1, delegate: bool = True,
                     preserve_all_tensors: bool = False):
    """An allocated ``ai_edge_litert`` interpreter of ``path``.

    Raises:
        ImportError: If ``ai_edge_litert`` is missing (says how to install
            it).
    """
    try:
        from ai_edge_litert import interpreter as litert
    except ImportError as e:
        raise ImportError(MISSING_RUNTIME) from e
    resolver = litert.OpResolverType.AUTO if delegate else \
        litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    interpreter = litert.Interpreter(
        model_path=path, num_threads=num_threads,
        experimental_op_resolver_type=resolver,
        experimental_preserve_all_tensors=preserve_all_tensors)
    interpreter.allocate_tensors()
    return interpreter


def quantize_input(x: np.ndarray, scale: float, zero_point: int
                   ) -> np.ndarray:
    """``x`` on the int8 grid as the simulation rounds it: ``x * (1/s)`` in
    float32, half to even."""
    inv = np.float32(1.0) / np.float32(scale)
    q = np.rint(x.astype(np.float32) * inv) + zero_point
    return np.clip(q, -128, 127).astype(np.int8)


@RUNTIMES.register_module()
class LiteRTRuntime(BaseRuntime):
    """LiteRT's interpreter running the ``.tflite`` of an export (see
    :func:`tflite_path_of`) on float input batches.

    The model is full-integer (int8 input and output, batch 1): each sample
    is quantized with the input's qparams as the simulation rounds them
    (``x * (1 / s)`` in float32), run, and its int8 output dequantized with
    the output's. Its kernels (XNNPACK's, or TFLite's builtin ones) multiply
    s8 by s8, widened to int16 first: no pair of products saturates.
    """
    name = 'litert'

    def load(self, path: str, num_threads: int = 1,
             delegate: bool = True) -> Runner:
        """A function running ``path``.

        Args:
            path (str): The ``.tflite``, or the ``.onnx`` it was exported
                beside.
            num_threads (int): Interpreter threads. Defaults to 1.
            delegate (bool): Use the default XNNPACK delegate; False runs
                TFLite's builtin kernels. Defaults to True.
        """
        interpreter = load_interpreter(tflite_path_of(path), num_threads,
                                       delegate)
        inp = interpreter.get_input_details()[0]
        out = interpreter.get_output_details()[0]
        in_scale, in_zp = inp['quantization']
        out_scale, out_zp = out['quantization']

        def run(x: np.ndarray) -> List[np.ndarray]:
            results = []
            for sample in x:
                q = quantize_input(sample[None], in_scale, in_zp)
                interpreter.set_tensor(inp['index'], q.reshape(inp['shape']))
                interpreter.invoke()
                y = interpreter.get_tensor(out['index']).astype(np.float32)
                results.append((y - out_zp) * np.float32(out_scale))
            return [np.concatenate(results)]

        return run
