"""What the fx normalisation needs to know about the ONNX graph: the node
behind each converted module, the constants, and which nodes only compute
shapes and indices."""
from dataclasses import dataclass, field
from typing import Dict, Optional, Set

import numpy as np

__all__ = ['OnnxGraphInfo', 'SHAPE_SOURCE_OPS']

#: Ops whose output is a shape or a size, whatever their input.
SHAPE_SOURCE_OPS = frozenset({'Shape', 'Size'})

_FLOAT_TYPES = frozenset({1, 10, 11, 16})  # FLOAT, FLOAT16, DOUBLE, BFLOAT16


@dataclass
class OnnxGraphInfo:
    """The ONNX side of a converted model.

    Attributes:
        nodes (dict): Converted module name -> ``onnx.NodeProto``.
        constants (dict): Initializer name -> ``np.ndarray``.
        shape_modules (set): Module names of nodes that compute shapes and
            indices only (their values never depend on a float input
            through anything but ``Shape``): they stay float.
        input_names (list): Graph input names, in order.
        output_names (list): Graph output names, in order.
        dynamic_axes (dict): Input/output name -> ``{axis: dim name}`` of
            the symbolic dims.
        opset (int): The default-domain opset.
    """
    nodes: Dict[str, object] = field(default_factory=dict)
    constants: Dict[str, np.ndarray] = field(default_factory=dict)
    shape_modules: Set[str] = field(default_factory=set)
    input_names: list = field(default_factory=list)
    output_names: list = field(default_factory=list)
    dynamic_axes: Dict[str, Dict[int, str]] = field(default_factory=dict)
    opset: int = 0
    #: module name -> rank of its first input, where known
    ranks: Dict[str, int] = field(default_factory=dict)
    #: module name -> the ONNX node names it stands for after fusion
    fused: Dict[str, list] = field(default_factory=dict)

    def op_type(self, module_name: str) -> Optional[str]:
        node = self.nodes.get(module_name)
        return node.op_type if node is not None else None

    def onnx_name(self, module_name: str) -> str:
        node = self.nodes.get(module_name)
        return (node.name or module_name) if node is not None \
            else module_name

    def attribute(self, module_name: str, name: str, default=None):
        from onnx import helper
        for attr in self.nodes[module_name].attribute:
            if attr.name == name:
                return helper.get_attribute_value(attr)
        return default

    @classmethod
    def from_model(cls, model, module_names) -> 'OnnxGraphInfo':
        """Collect the info of an (already shape-inferred) ``model``;
        ``module_names`` are the converter's names of its nodes, in
        order."""
        from onnx import numpy_helper
        graph = model.graph
        constants = {t.name: numpy_helper.to_array(t)
                     for t in graph.initializer}
        elem_types = {v.name: v.type.tensor_type.elem_type
                      for v in list(graph.value_info) + list(graph.input) +
                      list(graph.output)}
        inputs = [i.name for i in graph.input if i.name not in constants]
        data_values = {n for n in inputs if elem_types.get(n) in _FLOAT_TYPES}
        value_ranks = {
            v.name: len(v.type.tensor_type.shape.dim)
            for v in list(graph.value_info) + list(graph.input)
            + list(graph.output) if v.type.tensor_type.HasField('shape')}
        nodes, shape_modules, ranks = {}, set(), {}
        for name, node in zip(module_names, graph.node):
            nodes[name] = node
            if node.input and node.input[0] in value_ranks:
                ranks[name] = value_ranks[node.input[0]]
            is_data = node.op_type not in SHAPE_SOURCE_OPS and any(
                i in data_values for i in node.input)
            float_out = [o for o in node.output
                         if elem_types.get(o, 1) in _FLOAT_TYPES]
            if is_data and float_out:
                data_values.update(float_out)
            else:
                shape_modules.add(name)
        dynamic_axes = {}
        for value in list(graph.input) + list(graph.output):
            if value.name in constants:
                continue
            dims = value.type.tensor_type.shape.dim
            axes = {i: d.dim_param for i, d in enumerate(dims)
                    if d.dim_param or not d.HasField('dim_value')}
            if axes:
                dynamic_axes[value.name] = {
                    i: n or f'{value.name}_dim{i}' for i, n in axes.items()}
        from .onnx_loader import default_opset
        return cls(nodes=nodes, constants=constants,
                   shape_modules=shape_modules, input_names=inputs,
                   output_names=[o.name for o in graph.output],
                   dynamic_axes=dynamic_axes, opset=default_opset(model),
                   ranks=ranks)
