"""Front door: models as users have them (an ONNX file, a plain
``torch.nn.Module``) as mmengine models the quantizers take.

Importing this package registers the model types; ONNX and the converter
are imported only when an ONNX model is built.
"""
from .imported_model import (
    ImportedDataPreprocessor,
    ImportedModel,
    OnnxModel,
    TorchModel,
)
from .reference_metric import FloatReferenceMetric

__all__ = ['ImportedModel', 'OnnxModel', 'TorchModel',
           'ImportedDataPreprocessor', 'FloatReferenceMetric']
