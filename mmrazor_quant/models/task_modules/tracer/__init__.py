"""Tracers that turn OpenMMLab models into ``torch.fx`` graphs."""
from .custom_tracer import CustomTracer
from .trace_error import TraceError

__all__ = ['CustomTracer', 'TraceError']
