"""Models: importing this package registers every model-side module.

As in MMRazor, the public names of the subpackages are re-exported here
(``from mmrazor_quant.models import LearnableFakeQuantize``).
"""
from . import (  # noqa: F401
               algorithms,
               codebases,
               fake_quants,
               observers,
               qat_modules,
               quantizers,
               task_modules,
)
from .algorithms import *  # noqa: F401,F403
from .fake_quants import *  # noqa: F401,F403
from .observers import *  # noqa: F401,F403
from .quantizers import *  # noqa: F401,F403
from .task_modules import *  # noqa: F401,F403
