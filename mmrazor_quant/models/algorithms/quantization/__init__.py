"""MMRazor's module path of the quantization algorithm."""
from ..mm_architecture import MMArchitectureQuant, MMArchitectureQuantDDP

__all__ = ['MMArchitectureQuant', 'MMArchitectureQuantDDP']
