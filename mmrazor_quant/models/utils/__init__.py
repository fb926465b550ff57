"""Helpers over quantized models shared by the passes, deploy and
analysis."""
from .tensor_graph import tensor_graph_module

__all__ = ['tensor_graph_module']
