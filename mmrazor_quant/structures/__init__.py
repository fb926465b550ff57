from .deploy_config import DeployConfig, InputShapes
from .quantization import *  # noqa: F401,F403
from .quantization import __all__ as _quantization_all

__all__ = list(_quantization_all) + ['DeployConfig', 'InputShapes']
