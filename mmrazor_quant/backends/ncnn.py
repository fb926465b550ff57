"""ncnn: an int8 ``.param``/``.bin`` written with this project's scales,
run by ncnn's own Python runtime."""
from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['NCNNBackend']


@BACKENDS.register_module()
class NCNNBackend(BaseBackend):
    """ncnn's int8 kernels with :class:`NCNNQuantizer`'s placement.

    The exporter writes the ncnn model itself (``<stem>.param`` and
    ``<stem>.bin``, int8 weights and the inverse of every scale) and
    ``<stem>.table``, the same scales in ``ncnn2table``'s calibration-table
    format; the ``ncnn`` runtime runs the ``.param``/``.bin`` in the
    ``ncnn`` Python wheel (``make ncnn``) for the parity check.

    The parity check runs ncnn without its packed layouts
    (``packing=False``): on x86 the packed int8 depthwise kernel rescales
    with ``_mm_rcp_ps``, a 12-bit reciprocal approximation of ``1 / (s_in *
    s_w)`` whose rounding is the CPU's, so no simulation matches it (a
    depthwise model loses tens of dB of parity packed; unpacked, ncnn
    computes as the simulation does).
    """
    name = 'ncnn'
    quantizer = 'NCNNQuantizer'
    exporter = 'NCNNExporter'
    runtime = 'ncnn'
    runtime_options = dict(packing=False)
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True))
