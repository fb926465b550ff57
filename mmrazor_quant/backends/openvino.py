"""OpenVINO's CPU plugin: QDQ ONNX read as FakeQuantize ops."""
from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['OpenVINOBackend']


@BACKENDS.register_module()
class OpenVINOBackend(BaseBackend):
    """OpenVINO with the NNCF placement (:class:`OpenVINOQuantizer`),
    checked in OpenVINO itself."""
    name = 'openvino'
    quantizer = 'OpenVINOQuantizer'
    exporter = 'OpenVINOExporter'
    runtime = 'openvino'
    # FakeQuantize ranges: any zero point runs as a u8 kernel
    asymmetric_activations = True
    # a u8 depthwise conv with a source zero-point costs most of what the
    # asymmetric grids add to PP-OCRv4's recogniser (OpenVINOQuantizer)
    asymmetric_quantizer_options = dict(depthwise_symmetric_tolerance=0.25)
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True))
