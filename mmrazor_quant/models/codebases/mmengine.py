"""The generic adapter of plain mmengine models."""
from mmrazor_quant.registry import CODEBASES
from .base import BaseCodebase

__all__ = ['MMEngineCodebase']


@CODEBASES.register_module()
class MMEngineCodebase(BaseCodebase):
    """Any mmengine ``BaseModel`` (and the fallback for plain modules).

    Nothing codebase-specific: no rewrite, no default skip, no guessed
    input size (the test pipeline's or the backbone's ``img_size`` are still
    used), tensor outputs compared as they are at deploy.
    """
    packages = ('mmengine', )
