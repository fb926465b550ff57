"""OpenVINO: its runtime plugin and the passes of its QDQ export."""
from .runtime import OpenVINORuntime

__all__ = ['OpenVINORuntime']
