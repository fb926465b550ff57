"""Rockchip's NPU: a ``.rknn`` built by rknn-toolkit2 from QDQ ONNX."""
from typing import Dict, Mapping

from mmrazor_quant.registry import BACKENDS
from .base import BaseBackend

__all__ = ['RKNNBackend']


@BACKENDS.register_module()
class RKNNBackend(BaseBackend):
    """Rockchip's NPU: RKNNQuantizer's placement, checked in its simulator.

    Checked in rknn-toolkit2's x86 simulator (runtime ``rknn_simulator``).

    The exporter writes the QDQ ONNX and builds the ``.rknn`` from it with
    the model's own scales and zero-points (``build(do_quantization=
    False)``), in the toolkit's own venv (``make rknn-env``). The simulator
    cannot run a ``.rknn`` read back from disk, so the ``rknn_simulator``
    runtime builds the same ONNX again in one process and runs it.

    ``backend_config.common_config.target_platform`` picks the chip
    (``'rk3588'`` by default).
    """
    name = 'rknn'
    quantizer = 'RKNNQuantizer'
    exporter = 'RKNNExporter'
    runtime = 'rknn_simulator'
    w8a8 = dict(
        w_qscheme=dict(
            qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
        a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False))

    def parse_backend_config(self, backend_cfg: Mapping) -> Dict:
        common = backend_cfg.get('common_config', {}) or {}
        platform = common.get('target_platform')
        if platform is None:
            return {}
        return dict(exporter_options=dict(target_platform=platform))
