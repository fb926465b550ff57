"""mmrazor_quant: config-driven PTQ/QAT on torch.fx for OpenMMLab models.

Importing the package registers nothing and patches nothing; modules register
themselves in :mod:`mmrazor_quant.registry` when their files are imported
(``register_all_modules()`` or a registry ``locations=`` lookup).
"""

__version__ = '0.3.0'

__all__ = ['__version__', 'digit_version']


def __getattr__(name: str):
    # MMRazor re-exported mmengine's digit_version here; resolved on first
    # use so that importing the package stays free of imports.
    if name == 'digit_version':
        from mmengine.utils import digit_version
        return digit_version
    raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
