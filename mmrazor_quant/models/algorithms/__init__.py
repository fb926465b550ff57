from .mm_architecture import MMArchitectureQuant, MMArchitectureQuantDDP

__all__ = ['MMArchitectureQuant', 'MMArchitectureQuantDDP']
