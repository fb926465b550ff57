"""The toy NPU's reference runtime: a runtime plugin written outside the
library, declaring the arithmetic it computes with."""
from typing import List

import numpy as np

from mmrazor_quant.deploy.runtimes import BaseRuntime
from mmrazor_quant.registry import RUNTIMES

__all__ = ['ToyNPUReference']


@RUNTIMES.register_module()
class ToyNPUReference(BaseRuntime):
    """The NPU vendor's bit-accurate reference, stood in for by onnxruntime
    computing every op in float on dequantized values (no int8 kernel
    fusion): the NPU adds float biases and sums its products in float.

    What it declares is what the parity check simulates: its quantizer
    divides by the scale (``round(x / s)``, as ONNX's ``QuantizeLinear``),
    its sums are not exact, and it runs no u8 x s8 kernels.
    """
    name = 'toy_npu_reference'
    quantizes_by = 'division'

    def load(self, path: str, num_threads: int = 0):
        import onnxruntime as ort
        options = ort.SessionOptions()
        options.intra_op_num_threads = num_threads
        options.add_session_config_entry('session.intra_op.allow_spinning',
                                         '0')
        options.add_session_config_entry('session.disable_quant_qdq', '1')
        session = ort.InferenceSession(path, options,
                                       providers=['CPUExecutionProvider'])
        name = session.get_inputs()[0].name

        def run(x: np.ndarray) -> List[np.ndarray]:
            return session.run(None, {name: x})

        return run
