"""The export pipeline every backend's exporter builds on
(:class:`BaseExporter`), and the exporter of a registered backend
(:func:`build_exporter`). Each backend's exporter lives in its own folder,
``deploy/<backend>/exporter.py``."""
from .base import BaseExporter, ExportResult
from .builder import build_exporter

__all__ = ['BaseExporter', 'ExportResult', 'build_exporter']
