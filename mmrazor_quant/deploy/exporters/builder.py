"""Build the exporter of a registered backend."""
from mmrazor_quant.backends import get_backend
from mmrazor_quant.registry import EXPORTERS
from .base import BaseExporter

__all__ = ['build_exporter']


def build_exporter(backend: str, **kwargs) -> BaseExporter:
    """The exporter of the backend called ``backend``, built with
    ``kwargs``.

    Args:
        backend (str): A registered backend with an exporter (e.g.
            ``'openvino'``, or a user's own, see docs/add_backend.md).
        **kwargs: Exporter arguments (``opset``, ``implicit``, ...).

    Raises:
        ValueError: If ``backend`` is unknown or has no exporter, or its
            exporter does not take one of ``kwargs``.
    """
    plugin = get_backend(backend, deployable=True)
    # The exporter's own scope: a detector config's default scope (mmdet)
    # has no exporter registry.
    cls = EXPORTERS.get(plugin.exporter if '.' in plugin.exporter else
                        f'mmrazor_quant.{plugin.exporter}')
    if cls is None:
        raise ValueError(f'backend {backend!r} names exporter '
                         f'{plugin.exporter!r}, which is not registered in '
                         'EXPORTERS')
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise ValueError(f'the {backend} exporter ({cls.__name__}) does not '
                         f'take these options: {e}') from e
