"""Tracers that turn OpenMMLab models into ``torch.fx`` graphs."""
from .custom_tracer import CustomTracer
from .fx import (
                 UntracedMethodRegistry,
                 build_graphmodule,
                 custom_symbolic_trace,
)
from .trace_error import TraceError

__all__ = [
    'CustomTracer', 'TraceError', 'UntracedMethodRegistry',
    'build_graphmodule', 'custom_symbolic_trace'
]
