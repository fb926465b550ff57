"""The ``onnxruntime`` runtime: a QDQ ``.onnx`` on onnxruntime's CPU
provider."""
from typing import Sequence

from mmrazor_quant.registry import RUNTIMES
from ..runtimes import BaseRuntime, Runner

__all__ = ['ONNXRuntime']


@RUNTIMES.register_module()
class ONNXRuntime(BaseRuntime):
    """onnxruntime's CPU provider with all graph optimizations (Q/DQ fused
    into int8 kernels).

    Its ``QuantizeLinear`` divides by the scale as the ONNX spec writes it
    (TensorRT's does too, for which this runtime with ``qdq_fusion=False``
    stands in). It fuses only a conv whose output is quantized directly and
    runs the others in float32, as the training graph does, so its sums are
    not exact. Its int8 kernels multiply u8 activations by s8 weights
    (MLAS), pairing products in int16 on CPUs without VNNI.

    The thread pool does not spin between calls: parity checks alternate
    with PyTorch, whose threads a spinning pool would starve.
    """
    name = 'onnxruntime'
    quantizes_by = 'division'
    runs_any_qdq_onnx = True

    def runs_int8_kernels(self, optimize: bool = True,
                          qdq_fusion: bool = True, **_) -> bool:
        return optimize and qdq_fusion

    def load(self, path: str, num_threads: int = 0, optimize: bool = True,
             qdq_fusion: bool = True,
             disabled_optimizers: Sequence[str] = ()) -> Runner:
        """A function running ``path``.

        Args:
            path (str): The ``.onnx`` file.
            num_threads (int): Intra-op threads; 0 lets onnxruntime choose.
                Defaults to 0.
            optimize (bool): All graph optimizations (int8 kernels); False
                runs the graph as written (the ONNX reference semantics).
                Defaults to True.
            qdq_fusion (bool): Fuse Q/DQ pairs into int8 kernels (which
                take an int32 bias on ``s_in * s_w``). False keeps every
                other optimization but computes each op in float on
                dequantized values with its float bias, which is TensorRT's
                arithmetic (``session.disable_quant_qdq``). Defaults to True.
            disabled_optimizers (Sequence[str]): Graph transformers to leave
                out, by name (e.g. ``'DoubleQDQPairsRemover'``, which merges
                ``Q -> DQ -> Q -> DQ`` into one rounding). Defaults to none.
        """
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.add_session_config_entry('session.intra_op.allow_spinning',
                                         '0')
        if not qdq_fusion:
            options.add_session_config_entry('session.disable_quant_qdq',
                                             '1')
        options.graph_optimization_level = \
            ort.GraphOptimizationLevel.ORT_ENABLE_ALL if optimize else \
            ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        session = ort.InferenceSession(
            path, options, providers=['CPUExecutionProvider'],
            disabled_optimizers=list(disabled_optimizers) or None)
        names = [i.name for i in session.get_inputs()]

        def run(x):
            if isinstance(x, dict):
                feeds = x
            elif isinstance(x, (list, tuple)):
                feeds = dict(zip(names, x))
            else:
                feeds = {names[0]: x}
            return session.run(None, feeds)

        return run
