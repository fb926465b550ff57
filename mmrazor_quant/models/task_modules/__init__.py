"""Helpers built from config: tracers."""
from .tracer import CustomTracer, TraceError

__all__ = ['CustomTracer', 'TraceError']
