"""Rockchip's NPU: the exporter (QDQ ONNX and the ``.rknn``), the weight
grid a ``.rknn`` holds, the encoding the toolkit reads, and its x86
simulator as a runtime. The toolkit runs in its own venv, by the scripts in
``scripts/`` (package data, not modules)."""
from .exporter import RKNNExporter
from .simulator import RKNN_ENV, RKNNSimulatorRuntime, build_rknn
from .weight_grid import RKNN_WEIGHT_RANGE, fit_weights_to_rknn_grid_

__all__ = [
    'RKNNExporter', 'RKNNSimulatorRuntime', 'RKNN_ENV', 'build_rknn',
    'RKNN_WEIGHT_RANGE', 'fit_weights_to_rknn_grid_'
]
