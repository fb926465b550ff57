"""ONNX-level passes that run before conversion.

* ``Constant`` nodes become initializers, so weights exported as constants
  (Paddle2ONNX does this) are seen as weights, not as ops;
* unnamed nodes get names of their own: the converter names a module after
  its node (the op type when unnamed, ``_1``, ``_2`` on repeats), and an
  unnamed ``Shape`` next to nodes named ``/Shape`` and ``/Shape_1`` (what
  onnx's version converter leaves in a torch export) would take another
  node's module name and fail the conversion;
* shape inference fills ``value_info`` (the converter sizes LayerNorm and
  reads dtypes from it): onnx's own, with data propagation, and where it
  leaves a tensor without a shape (a ``Reshape`` to a computed shape),
  onnxruntime's symbolic inference. onnx's takes milliseconds; the
  symbolic one simplifies every dimension with sympy, which takes 30 s on
  PP-OCRv4's detector (its ``Resize`` nodes on dynamic height and width).
"""
import copy

__all__ = ['constants_to_initializers', 'name_unnamed_nodes',
           'infer_shapes', 'unshaped_outputs', 'prepare_onnx']


def constants_to_initializers(model):
    """Move each ``Constant`` node holding a tensor into the initializers
    (in place) and return ``model``."""
    from onnx import numpy_helper
    graph = model.graph
    keep = []
    for node in graph.node:
        attr = node.attribute[0] if node.op_type == 'Constant' and \
            len(node.attribute) == 1 else None
        if attr is None or node.domain not in ('', 'ai.onnx'):
            keep.append(node)
            continue
        if attr.name == 'value':
            tensor = copy.deepcopy(attr.t)
        elif attr.name in ('value_float', 'value_int'):
            import numpy as np
            value = attr.f if attr.name == 'value_float' else attr.i
            dtype = np.float32 if attr.name == 'value_float' else np.int64
            tensor = numpy_helper.from_array(np.array(value, dtype=dtype))
        elif attr.name in ('value_floats', 'value_ints'):
            import numpy as np
            values = attr.floats if attr.name == 'value_floats' else attr.ints
            dtype = np.float32 if attr.name == 'value_floats' else np.int64
            tensor = numpy_helper.from_array(np.array(values, dtype=dtype))
        else:
            keep.append(node)
            continue
        tensor.name = node.output[0]
        graph.initializer.append(tensor)
    del graph.node[:]
    graph.node.extend(keep)
    return model


def _module_name(node) -> str:
    """The converter's base module name of a node (before repeats)."""
    return (f'{node.domain}/' + (node.name.replace('.', '/') or
                                 node.op_type)).lstrip('/')


def name_unnamed_nodes(model):
    """Name each unnamed node ``<op type>_unnamed_<k>``, ``k`` the first
    number whose module name no other node takes (in place); returns
    ``model``."""
    taken = {_module_name(n) for n in model.graph.node if n.name}
    for node in model.graph.node:
        if node.name:
            continue
        k = 0
        while _module_name_for(node, f'{node.op_type}_unnamed_{k}') in taken:
            k += 1
        node.name = f'{node.op_type}_unnamed_{k}'
        taken.add(_module_name(node))
    return model


def _module_name_for(node, name: str) -> str:
    return (f'{node.domain}/' + name.replace('.', '/')).lstrip('/')


def infer_shapes(model):
    """``model`` with ``value_info`` filled: onnx's shape inference with
    data propagation, or onnxruntime's symbolic shape inference (merging
    symbolic dims) where that leaves a node output without a shape."""
    import onnx
    inferred = onnx.shape_inference.infer_shapes(
        model, strict_mode=False, data_prop=True)
    if not unshaped_outputs(inferred):
        return inferred
    try:
        from onnxruntime.tools.symbolic_shape_infer import (
            SymbolicShapeInference,
        )
        symbolic = SymbolicShapeInference.infer_shapes(
            model, auto_merge=True, guess_output_rank=False)
        if symbolic is not None:
            return symbolic
    except Exception:  # noqa: BLE001 - any failure keeps onnx's result
        pass
    return inferred


def unshaped_outputs(model) -> list:
    """The node outputs of ``model`` that no entry of its ``value_info``,
    inputs or outputs gives an element type and a shape."""
    graph = model.graph
    shaped = {v.name for v in (*graph.value_info, *graph.input,
                               *graph.output)
              if v.type.tensor_type.elem_type
              and v.type.tensor_type.HasField('shape')}
    return [name for node in graph.node for name in node.output
            if name and name not in shaped]


def prepare_onnx(model):
    """The pre-passes in order, on a copy of ``model``."""
    model = copy.deepcopy(model)
    constants_to_initializers(model)
    name_unnamed_nodes(model)
    return infer_shapes(model)
