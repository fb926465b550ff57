from mmrazor_quant.compat.qconfig_api import QConfigFactories, QSchemeHandler
from mmrazor_quant.compat.torch_ao import NotSupportedMapping, not_supported
from .qconfig import QConfigHandler
from .qparams import calculate_qparams
from .qscheme import PerChannel, PerTensor, QSchema, RoundingPolicy

__all__ = [
    'QSchema', 'QConfigHandler', 'PerTensor', 'PerChannel', 'RoundingPolicy',
    'calculate_qparams', 'QSchemeHandler', 'QConfigFactories',
    'BackendConfigs', 'get_native_backend_config',
    'get_native_backend_config_dict', 'get_academic_backend_config',
    'get_academic_backend_config_dict', 'get_openvino_backend_config',
    'get_openvino_backend_config_dict', 'get_tensorrt_backend_config',
    'get_tensorrt_backend_config_dict'
]

# MMRazor's backend configs are torch.ao BackendConfig objects: not supported.
_BACKEND_INSTEAD = ("the quantizer's declared scheme and rules "
                    '(e.g. OpenVINOQuantizer.scheme / .rules; '
                    'docs/add_backend.md for a new backend)')
BackendConfigs = NotSupportedMapping('BackendConfigs', _BACKEND_INSTEAD)
get_native_backend_config = not_supported('get_native_backend_config',
                                          _BACKEND_INSTEAD)
get_native_backend_config_dict = not_supported(
    'get_native_backend_config_dict', _BACKEND_INSTEAD)
get_academic_backend_config = not_supported('get_academic_backend_config',
                                            _BACKEND_INSTEAD)
get_academic_backend_config_dict = not_supported(
    'get_academic_backend_config_dict', _BACKEND_INSTEAD)
get_openvino_backend_config = not_supported('get_openvino_backend_config',
                                            _BACKEND_INSTEAD)
get_openvino_backend_config_dict = not_supported(
    'get_openvino_backend_config_dict', _BACKEND_INSTEAD)
get_tensorrt_backend_config = not_supported('get_tensorrt_backend_config',
                                            _BACKEND_INSTEAD)
get_tensorrt_backend_config_dict = not_supported(
    'get_tensorrt_backend_config_dict', _BACKEND_INSTEAD)
