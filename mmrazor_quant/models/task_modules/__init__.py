"""Helpers built from config: tracers."""
from .tracer import (
                     CustomTracer,
                     TraceError,
                     UntracedMethodRegistry,
                     build_graphmodule,
                     custom_symbolic_trace,
)

__all__ = [
    'CustomTracer', 'TraceError', 'UntracedMethodRegistry',
    'build_graphmodule', 'custom_symbolic_trace'
]
