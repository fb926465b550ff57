"""Codebase adapters: what is specific to each OpenMMLab codebase."""
from .base import BaseCodebase, InputShape
from .lookup import block_types_of, codebase_of, codebases_of
from .mmcls import MMClsCodebase
from .mmdet import MMDetCodebase
from .mmengine import MMEngineCodebase
from .mmpose import MMPoseCodebase
from .mmpretrain import MMPretrainCodebase
from .mmseg import MMSegCodebase
from .mmyolo import MMYOLOCodebase

__all__ = [
    'BaseCodebase', 'InputShape', 'codebases_of', 'codebase_of',
    'block_types_of', 'MMClsCodebase', 'MMDetCodebase', 'MMEngineCodebase',
    'MMPoseCodebase', 'MMPretrainCodebase', 'MMSegCodebase', 'MMYOLOCodebase'
]
