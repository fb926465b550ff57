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
    """
    name = 'ncnn'
    quantizer = 'NCNNQuantizer'
    exporter = 'NCNNExporter'
    runtime = 'ncnn'
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True))
