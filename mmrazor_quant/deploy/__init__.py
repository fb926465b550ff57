"""Deploy: BN folding, standard QDQ ONNX export per backend, side files and
runtime parity checks. Nothing here patches torch at import."""
from .deploy_config import DeployConfig
from .deploy_heads import BaseDeployHead, TensorDeployHead, deploy_head_of
from .deploy_model import build_deploy_model
from .detection import DetectionDeployHead
from .exporters import (BaseExporter, ExportResult, ONNXRuntimeExporter,
                        OpenVINOExporter, TensorRTExporter)
from .int8_saturation import int8_pairs_saturate
from .int32_bias import (BiasAlignment, align_bias_to_int32_grid_,
                         bias_grid_offsets)
from .onnx_export import export_onnx
from .parity import ParityReport, check_parity, compare_outputs
from .qdq_fake_quantize import QDQFakeQuantize
from .weight_quantized_layer import WeightQuantizedLayer

__all__ = [
    'DeployConfig', 'build_deploy_model', 'export_onnx', 'QDQFakeQuantize',
    'WeightQuantizedLayer', 'BaseExporter', 'ExportResult',
    'ONNXRuntimeExporter', 'OpenVINOExporter', 'TensorRTExporter',
    'ParityReport', 'check_parity', 'compare_outputs', 'export_model',
    'BiasAlignment', 'align_bias_to_int32_grid_', 'bias_grid_offsets',
    'int8_pairs_saturate', 'BaseDeployHead', 'TensorDeployHead',
    'DetectionDeployHead', 'deploy_head_of'
]


def export_model(qmodel, example_input, onnx_path: str,
                 backend: str = 'onnxruntime', **kwargs) -> ExportResult:
    """Export a calibrated model with the exporter registered as
    ``backend`` (``'onnxruntime'``, ``'openvino'``, ``'tensorrt'``).

    Args:
        qmodel (MMArchitectureQuant): The calibrated model.
        example_input (Tensor): A preprocessed input batch.
        onnx_path (str): Where to write the ``.onnx``.
        backend (str): Registered exporter name. Defaults to
            ``'onnxruntime'``.
        **kwargs: Exporter arguments (``opset``, ``implicit``, ...).

    Returns:
        ExportResult: The files written.
    """
    from mmrazor_quant.registry import EXPORTERS
    name = backend if '.' in backend else f'mmrazor_quant.{backend}'
    # Build in the exporter's own scope: a detector config's default scope
    # (mmdet) has no exporter registry.
    exporter = EXPORTERS.build(
        dict(type=name, _scope_=name.split('.')[0], **kwargs))
    return exporter.export(qmodel, example_input, onnx_path)
