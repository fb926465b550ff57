"""An import-only stand-in for ``torch`` inside the RKNN toolchain's venv.

``make rknn-env`` copies this file to ``.venv-rknn``'s
``site-packages/torch/__init__.py``. rknn-toolkit2 imports torch when it
loads (for ``load_pytorch`` and its ``gdq`` quantizer) and pins
``torch<=2.4``; the path this project uses (``load_onnx`` of a QDQ model,
``build(do_quantization=False)``, the simulator) never calls it. Every
``torch.*`` submodule, attribute, class and call is a harmless dummy, so
the toolkit imports without a 5 GB torch install.

Imported under any other name (e.g. loaded by path in the main
venv) it defines its classes and nothing
else: the import hook is installed only when it *is* ``torch``.
"""
import importlib.abc
import importlib.machinery
import sys
import types

__version__ = '2.4.0'


class _Dummy:
    """Any object, class or callable the toolkit takes from torch."""

    def __init__(self, *args, **kwargs) -> None:
        pass

    def __init_subclass__(cls, **kwargs) -> None:
        pass

    def __call__(self, *args, **kwargs) -> '_Dummy':
        return _Dummy()

    def __getattr__(self, attr: str) -> '_Dummy':
        if attr.startswith('__'):
            raise AttributeError(attr)
        return _Dummy()


def _dummy_attr(attr: str) -> type:
    # Dunder lookups (``__file__``, ``__spec__``) must fail as usual.
    if attr.startswith('__'):
        raise AttributeError(attr)
    return type(attr, (_Dummy, ), {})


class _StubFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Makes every ``torch.<sub>`` import an empty package of dummies."""

    def find_spec(self, fullname, path, target=None):
        if fullname.startswith('torch.'):
            return importlib.machinery.ModuleSpec(
                fullname, self, is_package=True)
        return None

    def create_module(self, spec):
        module = types.ModuleType(spec.name)
        module.__path__ = []
        module.__getattr__ = _dummy_attr
        return module

    def exec_module(self, module) -> None:
        pass


def __getattr__(attr: str) -> type:
    return _dummy_attr(attr)


if __name__ == 'torch':
    __path__ = []
    sys.meta_path.insert(0, _StubFinder())
