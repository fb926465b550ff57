"""mmrazor_quant: config-driven PTQ/QAT on torch.fx for OpenMMLab models.

Importing the package registers nothing and patches nothing; modules register
themselves in :mod:`mmrazor_quant.registry` when their files are imported
(``register_all_modules()`` or a registry ``locations=`` lookup).
"""

__version__ = '0.1.0'
