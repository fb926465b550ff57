"""Models: importing this package registers every model-side module."""
from . import (algorithms, fake_quants, observers, qat_modules,  # noqa: F401
               quantizers, task_modules)
