"""Targets that are simulated only: torch's native engine and the academic
setting. Their models deploy to any target that takes standard QDQ."""
from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['NativeBackend', 'AcademicBackend']

_W8 = dict(qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)


@BACKENDS.register_module()
class NativeBackend(BaseBackend):
    """torch's quantized engine (x86 / fbgemm / qnnpack)."""
    name = 'native'
    quantizer = 'TorchNativeQuantizer'
    w8a8 = dict(w_qscheme=_W8, a_qscheme=dict(qdtype='quint8', bit=8))


@BACKENDS.register_module()
class AcademicBackend(BaseBackend):
    """The setting of the PTQ/QAT papers (any scheme)."""
    name = 'academic'
    quantizer = 'AcademicQuantizer'
    w8a8 = dict(w_qscheme=_W8, a_qscheme=dict(qdtype='quint8', bit=8))
