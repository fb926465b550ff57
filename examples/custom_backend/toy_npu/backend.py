"""The toy NPU as a backend: its quantizer, exporter and parity runtime."""
from mmrazor_quant.backends import BaseBackend
from mmrazor_quant.registry import BACKENDS

__all__ = ['ToyNPUBackend']


@BACKENDS.register_module()
class ToyNPUBackend(BaseBackend):
    """Binds the toy NPU's pieces under the name ``toy_npu``: configs name
    it in ``deploy_cfg.backend_config.type`` and the tools take it as
    ``--backend toy_npu`` / ``--export toy_npu``.

    Its files are standard QDQ ONNX, checked in its own reference runtime
    (:class:`~toy_npu.runtime.ToyNPUReference`, float arithmetic on the
    dequantized values: the NPU adds float biases, which the int8 kernels
    of onnxruntime would round to int32).
    """
    name = 'toy_npu'
    quantizer = 'ToyNPUQuantizer'
    exporter = 'ToyNPUExporter'
    runtime = 'toy_npu_reference'
