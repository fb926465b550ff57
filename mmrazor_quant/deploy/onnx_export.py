"""Export a deploy model to standard QDQ ONNX (principle 7 of
docs/architecture.md)."""
import os.path as osp
import tempfile
import warnings
from typing import Dict, List, Optional

import onnx
import torch
from onnx import helper, numpy_helper
from torch import fx, nn

from mmrazor_quant.structures.opsets import (
    DEFAULT_OPSET,
    DYNAMO_MIN_OPSET,
    MIN_OPSET,
)
from mmrazor_quant.utils.model_inputs import cat_inputs, num_samples
from .deform_conv import onnx_deform_conv
from .qdq_fake_quantize import QDQFakeQuantize
from .roi_align import onnx_roi_align
from .traceable_sizes import make_size_arithmetic_traceable

__all__ = [
    'export_onnx', 'prepare_qdq_export', 'fix_zero_point_types',
    'TensorNames', 'check_tensor_names',
    'INPUT_NAME', 'OUTPUT_NAME', 'MIN_OPSET', 'DEFAULT_OPSET'
]

INPUT_NAME, OUTPUT_NAME = 'input', 'output'


def prepare_qdq_export(model: nn.Module,
                       opset: int,
                       clip_narrow_range: bool = True) -> int:
    """Pick each fake quant's ONNX container type for ``opset``.

    Args:
        model (nn.Module): A deploy model.
        opset (int): The target opset.
        clip_narrow_range (bool): Clip before ``QuantizeLinear`` where the
            grid is narrower than its type (exact parity with the
            simulation). Defaults to True.

    Returns:
        int: How many fake quants the model has.

    Raises:
        ValueError: If ``opset`` is below :data:`MIN_OPSET`, or a fake
            quant's range or rounding cannot be exported at ``opset`` (the
            message names every such fake quant).
    """
    if opset < MIN_OPSET:
        raise ValueError(f'opset must be >= {MIN_OPSET} (per-channel '
                         f'QuantizeLinear), got {opset}')
    errors, count = [], 0
    for module in model.modules():
        if isinstance(module, QDQFakeQuantize):
            count += 1
            try:
                module.prepare_export(opset, _export_mode(opset),
                                      clip_narrow_range)
            except ValueError as e:
                errors.append(str(e))
    if errors:
        raise ValueError(f'{len(errors)} fake quant(s) cannot be exported '
                         f'at opset {opset}:\n  ' + '\n  '.join(errors))
    return count


def _export_mode(opset: int) -> str:
    # The dynamo exporter produces opset >= 18 only (its down-conversion
    # breaks ReduceMean); below, the TorchScript exporter maps torch's
    # fake-quant ops to Q/DQ itself.
    return 'symbolic' if opset >= DYNAMO_MIN_OPSET else 'aten'


def fix_zero_point_types(model: onnx.ModelProto) -> int:
    """Give each ``QuantizeLinear`` carrying ``output_dtype`` (opset 21) a
    zero-point initializer of that type, shared with its DequantizeLinear.

    torch has no 4-bit (nor ONNX-compatible uint16) tensors, so such
    zero-points are exported in a wider container (and the exporter may
    merge equal ones); ONNX requires the zero-point to have the type of the
    quantized tensor.

    Args:
        model (onnx.ModelProto): Modified in place.

    Returns:
        int: How many zero-points were retyped.
    """
    graph = model.graph
    inits = {t.name: t for t in graph.initializer}
    consumers: Dict[str, List[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input[:1]:  # Constant nodes have no input
            consumers.setdefault(name, []).append(node)
    fixed = 0
    for node in list(graph.node):
        want = next((a.i for a in node.attribute
                     if a.name == 'output_dtype'), 0)
        if node.op_type != 'QuantizeLinear' or not want or \
                len(node.input) < 3 or node.input[2] not in inits:
            continue
        old = inits[node.input[2]]
        if old.data_type == want:
            continue
        values = numpy_helper.to_array(old).astype('int64')
        name = f'{node.output[0]}_zero_point'
        graph.initializer.append(
            helper.make_tensor(name, want, list(old.dims),
                               values.flatten().tolist()))
        node.input[2] = name
        for dq in consumers.get(node.output[0], []):
            if dq.op_type == 'DequantizeLinear' and len(dq.input) > 2:
                dq.input[2] = name
        fixed += 1
    return fixed


class _PositionalInputs(nn.Module):
    """A model taking a dict of inputs by name, called with the tensors in
    ``names`` order: the exporters name positional inputs only."""

    def __init__(self, model: nn.Module, names: List[str]) -> None:
        super().__init__()
        self.model = model
        self.names = list(names)

    def forward(self, *tensors: torch.Tensor):
        return self.model(dict(zip(self.names, tensors)))


def _torch_export(model: nn.Module, example_input, path: str, opset: int,
                  names: 'TensorNames') -> None:
    dynamo = opset >= DYNAMO_MIN_OPSET
    kwargs = dict(dynamo=dynamo, opset_version=opset)
    if dynamo:
        kwargs.update(external_data=False)
    args = (example_input, )
    if isinstance(example_input, dict):
        model = _PositionalInputs(model, names.inputs)
        args = tuple(example_input[n] for n in names.inputs)
    if names.dynamic_axes is not None:
        # Both exporters take torch's dict form, axis names included.
        kwargs.update(dynamic_axes=names.dynamic_axes)
    elif names.dynamic_batch and dynamo and len(args) == 1:
        kwargs.update(dynamic_shapes={
            'inputs': {0: torch.export.Dim('batch')}})
    elif names.dynamic_batch:
        kwargs.update(dynamic_axes={
            name: [0] for name in names.inputs + names.outputs})
    with warnings.catch_warnings():
        # The exporters' chatter about torch.export internals and
        # deprecations is not actionable for users.
        warnings.simplefilter('ignore')
        torch.onnx.export(
            model, args,
            path,
            input_names=names.inputs,
            output_names=names.outputs,
            verbose=False,
            **kwargs)


class TensorNames:
    """The graph's input and output names and dynamic axes.

    ``output_names`` may name the model's outputs one by one, or name the
    groups of a nested output (a detector's ``(cls_scores, bbox_preds)``,
    one tensor per level): a group's tensors become ``<name>_<i>`` and
    share the group's dynamic axes.

    Args:
        model (nn.Module): The deploy model.
        example_input (Tensor): Its example input.
        input_names (list[str], optional): Defaults to ``['input']``.
        output_names (list[str], optional): Defaults to ``['output']``
            (further outputs keep the exporter's names).
        dynamic_axes (dict, optional): ``{name: {axis: axis_name}}``; a
            group name applies to each member. Defaults to None.
        dynamic_batch (bool): Without ``dynamic_axes``, make axis 0 of
            every input and output symbolic. Defaults to True.

    Raises:
        ValueError: If ``output_names`` fits neither the outputs nor their
            groups, ``input_names`` does not have one name, or
            ``dynamic_axes`` names a tensor the graph lacks.
    """

    def __init__(self, model: nn.Module, example_input: torch.Tensor,
                 input_names: Optional[List[str]] = None,
                 output_names: Optional[List[str]] = None,
                 dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None,
                 dynamic_batch: bool = True) -> None:
        self.inputs = list(input_names or [INPUT_NAME])
        given = list(example_input) if isinstance(example_input, dict) \
            else None
        if given is None and len(self.inputs) != 1:
            raise ValueError(f'input_names {self.inputs}: the model takes '
                             'one input tensor')
        if given is not None and sorted(given) != sorted(self.inputs):
            raise ValueError(f'input_names {self.inputs}: the example '
                             f'batch holds the inputs {given}')
        groups = _output_groups(model, example_input)
        self.outputs, members = _name_outputs(groups, output_names)
        self.dynamic_batch = dynamic_batch
        self.dynamic_axes = None if dynamic_axes is None else \
            _expand_axes(dynamic_axes, self.inputs, members)


def _output_groups(model: nn.Module,
                   example_input: torch.Tensor) -> List[int]:
    """How many tensors each top-level output holds (1 for a tensor)."""
    with torch.no_grad():
        out = model(example_input)
    if isinstance(out, torch.Tensor):
        return [1]
    return [len(_flatten(item)) for item in out]


def _flatten(item) -> list:
    if isinstance(item, torch.Tensor):
        return [item]
    return [t for sub in item for t in _flatten(sub)]


def _name_outputs(groups: List[int], names: Optional[List[str]]):
    """Flat output names, and each given name's members."""
    total = sum(groups)
    if names is None:
        return [OUTPUT_NAME], {OUTPUT_NAME: [OUTPUT_NAME]}
    if len(names) == total:
        return list(names), {n: [n] for n in names}
    if len(names) == len(groups):
        members = {
            name: [name] if size == 1 else
            [f'{name}_{i}' for i in range(size)]
            for name, size in zip(names, groups)
        }
        return [m for name in names for m in members[name]], members
    raise ValueError(
        f'output_names {list(names)} fit neither the model\'s {total} '
        f'output tensors nor its {len(groups)} output groups (of '
        f'{groups} tensors)')


def _expand_axes(axes: Dict[str, Dict[int, str]], inputs: List[str],
                 members: Dict[str, List[str]]) -> Dict[str, Dict[int, str]]:
    expanded = {}
    for name, dims in axes.items():
        if name in inputs:
            expanded[name] = dict(dims)
        elif name in members:
            expanded.update({m: dict(dims) for m in members[name]})
        else:
            raise ValueError(
                f'dynamic_axes names {name!r}, which is neither an input '
                f'{inputs} nor an output {list(members)}')
    return expanded


def check_tensor_names(onnx_model: onnx.ModelProto,
                       names: TensorNames) -> None:
    """Raise if the exported graph lacks a requested name or left a
    requested dynamic axis static (the exporter specialized it)."""
    graph = onnx_model.graph
    values = {v.name: v for v in list(graph.input) + list(graph.output)}
    missing = [n for n in names.inputs + names.outputs if n not in values]
    if missing:
        raise ValueError(f'the exported graph has no tensor named '
                         f'{missing}; it has {list(values)}')
    for name, dims in (names.dynamic_axes or {}).items():
        shape = values[name].type.tensor_type.shape.dim
        static = {axis: shape[axis].dim_value for axis in dims
                  if axis < len(shape) and not shape[axis].dim_param}
        if static:
            raise ValueError(
                f'dynamic axes of {name!r} came out static in the export '
                f'({static}): the model fixes them; remove them from '
                'dynamic_axes')


def export_onnx(model: nn.Module,
                example_input: torch.Tensor,
                path: Optional[str] = None,
                opset: int = DEFAULT_OPSET,
                dynamic_batch: bool = True,
                clip_narrow_range: bool = True,
                input_names: Optional[List[str]] = None,
                output_names: Optional[List[str]] = None,
                dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None
                ) -> onnx.ModelProto:
    """Export a deploy model (see :func:`build_deploy_model`) to QDQ ONNX.

    Each :class:`QDQFakeQuantize` becomes ``QuantizeLinear`` →
    ``DequantizeLinear`` of the default domain (0-d per-tensor scales,
    ``axis`` per channel), preceded by a ``Max``/``Min`` clip where the grid
    is narrower than its container type; a float model exports as float.
    The result passes ``onnx.checker`` (full check).

    Args:
        model (nn.Module): The deploy model (eval mode).
        example_input (Tensor | dict): An input batch (its batch size need
            not be the deployed one when axis 0 is dynamic); a dict of
            tensors by input name for a model with several inputs.
        path (str, optional): Where to write the ``.onnx`` (atomically:
            nothing is written on error). Defaults to None (not written).
        opset (int): Target opset; 4-bit grids need 21. Defaults to
            :data:`DEFAULT_OPSET`.
        dynamic_batch (bool): Make axis 0 of input and output symbolic
            (when ``dynamic_axes`` is not given). Defaults to True.
        clip_narrow_range (bool): See :func:`prepare_qdq_export`.
            Defaults to True.
        input_names, output_names, dynamic_axes: See :class:`TensorNames`
            (mmdeploy's ``onnx_config`` keys). Default to ``['input']``,
            ``['output']`` and None.

    Returns:
        onnx.ModelProto: The exported model.

    Raises:
        ValueError: If a fake quant cannot be exported at ``opset``, or the
            names or dynamic axes do not fit the model (see
            :class:`TensorNames`, :func:`check_tensor_names`).
    """
    model = model.eval()
    names = TensorNames(model, example_input, input_names, output_names,
                        dynamic_axes, dynamic_batch)
    prepare_qdq_export(model, opset, clip_narrow_range)
    if isinstance(model, fx.GraphModule):
        make_size_arithmetic_traceable(model)
    batch_dynamic = 0 in (names.dynamic_axes or {}).get(
        names.inputs[0], {0: 'batch'} if dynamic_batch else {})
    if batch_dynamic and num_samples(example_input) < 2:
        # torch.export specialises a dimension of size 1.
        example_input = cat_inputs([example_input, example_input])
    with tempfile.TemporaryDirectory() as tmpdir:
        raw = osp.join(tmpdir, 'raw.onnx')
        with onnx_roi_align(model), onnx_deform_conv():
            _torch_export(model, example_input, raw, opset, names)
        onnx_model = onnx.load(raw)
    check_tensor_names(onnx_model, names)
    fix_zero_point_types(onnx_model)
    onnx_model.producer_name = 'mmrazor_quant'
    onnx.checker.check_model(onnx_model, full_check=True)
    if path is not None:
        from .atomic import atomic_outputs
        with atomic_outputs([path]) as (tmp, ):
            onnx.save(onnx_model, tmp)
    return onnx_model

