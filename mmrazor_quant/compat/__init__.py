"""MMRazor's public quantization API on this project's own machinery.

The modules here adapt names, signatures and idioms of MMRazor (torch-style
observer kwargs, ``with_args`` factories, MMRazor checkpoints) onto
mmrazor_quant's classes. torch.ao-bound names raise
:class:`~.torch_ao.TorchAONotSupportedError` saying what to use instead.
See ``docs/mmrazor_compat.md``. Importing this package imports nothing
else.
"""
