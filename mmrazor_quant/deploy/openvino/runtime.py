"""The ``openvino`` runtime: a QDQ ``.onnx`` on OpenVINO's CPU plugin."""
import numpy as np

from mmrazor_quant.registry import RUNTIMES
from ..runtimes import BaseRuntime, Runner

__all__ = ['OpenVINORuntime']


@RUNTIMES.register_module()
class OpenVINORuntime(BaseRuntime):
    """OpenVINO's CPU plugin, which turns Q/DQ pairs into ``FakeQuantize``
    and executes the quantized ops in int8.

    Its low-precision transformations take every Q/DQ conv and linear,
    whatever follows it, into an int8 kernel with an int32 accumulator:
    sums are exact. Its ``FakeQuantize`` computes ``x * (1 / s) + z`` and
    rounds in float32 (the zero-point added before the rounding); its int8
    kernels (oneDNN) multiply u8 activations by s8 weights.
    """
    name = 'openvino'
    accumulates_exactly = True
    zero_point_in_float32 = True
    runs_any_qdq_onnx = True

    def runs_int8_kernels(self, **_) -> bool:
        return True

    def load(self, path: str, num_threads: int = 0) -> Runner:
        """A function running ``path``.

        Args:
            path (str): The ``.onnx`` file.
            num_threads (int): Inference threads; 0 lets OpenVINO choose.
                Defaults to 0.
        """
        import openvino as ov
        core = ov.Core()
        config = {'INFERENCE_NUM_THREADS': num_threads} if num_threads \
            else {}
        # f32 inference precision: otherwise CPUs with bf16 would run the
        # float parts in bf16 and the comparison would measure that, not
        # quantization.
        config['INFERENCE_PRECISION_HINT'] = 'f32'
        compiled = core.compile_model(core.read_model(path), 'CPU', config)

        def run(x):
            # by input name (a dict), in order (a list), or the one input
            result = compiled(x if isinstance(x, dict) else list(x)
                              if isinstance(x, (list, tuple)) else [x])
            return [np.asarray(result[o]) for o in compiled.outputs]

        return run
