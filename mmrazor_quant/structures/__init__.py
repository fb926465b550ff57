from .deploy_config import DeployConfig, InputShapes
from .quantization import (PerChannel, PerTensor, QConfigHandler, QSchema,
                           RoundingPolicy, calculate_qparams)

__all__ = [
    'QSchema', 'QConfigHandler', 'PerTensor', 'PerChannel', 'RoundingPolicy',
    'calculate_qparams', 'DeployConfig', 'InputShapes'
]
