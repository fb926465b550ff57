"""ncnn: a deploy model written as ncnn's int8 ``.param``/``.bin`` with this
project's scales, ncnn's arithmetic as the simulation, and ncnn's Python
wheel as a runtime. Importing this package does not import ``ncnn``."""
from .arithmetic import NCNNInt8Layer, float2int8, ncnn_deploy_model
from .model_writer import NCNNExportError, NCNNModel, build_ncnn_model
from .runtime import ncnn_paths_of, ncnn_runner

__all__ = [
    'NCNNInt8Layer', 'float2int8', 'ncnn_deploy_model', 'NCNNExportError',
    'NCNNModel', 'build_ncnn_model', 'ncnn_paths_of', 'ncnn_runner'
]
