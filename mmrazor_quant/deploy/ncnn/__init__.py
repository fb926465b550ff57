"""ncnn: its exporter (a deploy model written as ncnn's int8
``.param``/``.bin`` with this project's scales), ncnn's int8 arithmetic as
the simulation, and ncnn's Python wheel as its runtime plugin. Importing
this package does not import ``ncnn``."""
from .arithmetic import NCNNInt8Layer, float2int8, ncnn_deploy_model
from .exporter import NCNNExporter
from .model_writer import NCNNExportError, NCNNModel, build_ncnn_model
from .runtime import NCNNRuntime, ncnn_paths_of

__all__ = [
    'NCNNInt8Layer', 'float2int8', 'ncnn_deploy_model', 'NCNNExportError',
    'NCNNModel', 'build_ncnn_model', 'ncnn_paths_of', 'NCNNExporter',
    'NCNNRuntime'
]
