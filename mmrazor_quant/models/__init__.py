"""Models: importing this package registers every model-side module."""
from . import (algorithms, codebases, fake_quants, observers,  # noqa: F401
               qat_modules, quantizers, task_modules)
