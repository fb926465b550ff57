"""Deploy: the deploy model (BN folded, qparams fixed), the QDQ ONNX export
every backend builds on, each backend's exporter and runtime in its own
folder (``onnxruntime/``, ``openvino/``, ``tensorrt/``, ``rknn/``,
``litert/``, ``ncnn/``), and the parity pipeline with a deploy head per
task. Nothing here patches torch at import."""
from mmrazor_quant.structures import DeployConfig
from .deploy_heads import BaseDeployHead, TensorDeployHead, deploy_head_of
from .deploy_model import build_deploy_model
from .detection import DetectionDeployHead
from .exporters import BaseExporter, ExportResult, build_exporter
from .int8_saturation import int8_pairs_saturate
from .int32_bias import (
    BiasAlignment,
    align_bias_to_int32_grid_,
    bias_grid_offsets,
)
from .litert import LiteRTExporter, LiteRTRuntime
from .ncnn import NCNNExporter, NCNNRuntime
from .onnx_export import export_onnx
from .onnxruntime import ONNXRuntime, ONNXRuntimeExporter
from .openvino import OpenVINOExporter, OpenVINORuntime
from .parity import (
    Agreement,
    ParityReport,
    check_parity,
    compare_outputs,
    run_parity,
)
from .pose import PoseDeployHead
from .qdq_fake_quantize import QDQFakeQuantize
from .rknn import RKNNExporter, RKNNSimulatorRuntime
from .runtimes import BaseRuntime, get_runtime, load_runtime, runtime_names
from .segmentation import SegmentationDeployHead
from .tensorrt import TensorRTExporter
from .weight_quantized_layer import WeightQuantizedLayer

__all__ = [
    'DeployConfig', 'build_deploy_model', 'export_onnx', 'QDQFakeQuantize',
    'WeightQuantizedLayer', 'BaseExporter', 'ExportResult',
    'ONNXRuntimeExporter', 'OpenVINOExporter', 'TensorRTExporter',
    'build_exporter',
    'ParityReport', 'Agreement', 'check_parity', 'run_parity',
    'compare_outputs', 'export_model', 'BaseRuntime', 'get_runtime',
    'load_runtime', 'runtime_names', 'ONNXRuntime', 'OpenVINORuntime',
    'LiteRTRuntime', 'RKNNSimulatorRuntime', 'LiteRTExporter', 'RKNNExporter',
    'NCNNExporter', 'NCNNRuntime',
    'BiasAlignment', 'align_bias_to_int32_grid_', 'bias_grid_offsets',
    'int8_pairs_saturate', 'BaseDeployHead', 'TensorDeployHead',
    'DetectionDeployHead', 'deploy_head_of', 'PoseDeployHead',
    'SegmentationDeployHead'
]


def export_model(qmodel, example_input, onnx_path: str,
                 backend: str = 'onnxruntime', **kwargs) -> ExportResult:
    """Export a calibrated model with the exporter of the registered
    backend ``backend`` (see :mod:`mmrazor_quant.backends`).

    The model is exported as it is: ``tools/export.py`` first calls the
    exporter's :meth:`~BaseExporter.prepare_model` (e.g. onnxruntime's
    int32 bias grid).

    Args:
        qmodel (MMArchitectureQuant): The calibrated model.
        example_input (Tensor): A preprocessed input batch.
        onnx_path (str): Where to write the ``.onnx``.
        backend (str): A registered backend with an exporter. Defaults to
            ``'onnxruntime'``.
        **kwargs: Exporter arguments (``opset``, ``implicit``, ...).

    Returns:
        ExportResult: The files written.
    """
    return build_exporter(backend, **kwargs).export(qmodel, example_input,
                                                    onnx_path)
