"""Where an exported model's runtime departs from the simulation, tensor by
tensor: the file cut after each activation ``QuantizeLinear`` /
``DequantizeLinear`` pair (:func:`onnx.utils.extract_model`), the runtime's
codes there compared with those of the simulation's fake quant of the same
name."""
import os.path as osp
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np
import onnx
import torch
from torch import Tensor, nn

from mmrazor_quant.utils.sqnr import sqnr_db
from .qdq_fake_quantize import QDQFakeQuantize
from .qparams_table import onnx_constants
from .runtimes import get_runtime, load_runtime

__all__ = ['TensorParity', 'tensor_parity']

_ACT_PREFIX = 'act_fake_quants.'


@dataclass
class TensorParity:
    """One activation fake quant's codes in the runtime and the simulation.

    Attributes:
        name (str): The fake quant (``act_fake_quants.<node>``).
        sources (list[str]): The fake quants the cut-out segment starts
            from (``'input'`` for the graph input); empty for a whole-graph
            cut.
        differing (float): Fraction of the codes that differ.
        max_steps (int): Largest difference, in quantization steps.
        sqnr_db (float): SQNR of the runtime's dequantized values against
            the simulation's.
    """
    name: str
    sources: List[str]
    differing: float
    max_steps: int
    sqnr_db: float


def _producers(graph: onnx.GraphProto) -> Dict[str, onnx.NodeProto]:
    return {out: node for node in graph.node for out in node.output}


def _fake_quant_of(node: onnx.NodeProto) -> Optional[str]:
    """The fake quant an activation ``QuantizeLinear`` exports (its scale
    initializer is named after it), or None for a weight's."""
    if node.op_type != 'QuantizeLinear' or \
            not node.input[1].startswith(_ACT_PREFIX):
        return None
    return node.input[1][:-len('.scale')]


def _segment_sources(graph: onnx.GraphProto,
                     quant: onnx.NodeProto) -> Dict[str, Optional[str]]:
    """``{tensor: fake quant}`` the segment ending at ``quant`` reads: the
    float inputs of the activation ``QuantizeLinear`` nodes met walking up
    from it (the graph input maps to None). A quantized constant stays
    inside the segment."""
    producers = _producers(graph)
    constants = {t.name for t in graph.initializer} | {
        out for node in graph.node if node.op_type == 'Constant'
        for out in node.output}
    graph_inputs = {i.name for i in graph.input}
    sources, seen, stack = {}, set(), [quant.input[0]]
    while stack:
        tensor = stack.pop()
        if tensor in seen or tensor in constants or not tensor:
            continue
        seen.add(tensor)
        node = producers.get(tensor)
        if tensor in graph_inputs:
            sources[tensor] = None
        elif node is not None and _fake_quant_of(node) and \
                node.input[0] not in constants:
            sources[node.input[0]] = _fake_quant_of(node)
        elif node is not None:
            stack.extend(node.input)
    return sources


def tensor_parity(deploy_model: nn.Module,
                  onnx_path: str,
                  inputs: Tensor,
                  runtime: str = 'onnxruntime',
                  forced: bool = True,
                  **runtime_options) -> List[TensorParity]:
    """Compare every activation fake quant of an export with the runtime.

    Args:
        deploy_model (nn.Module): The simulation that was exported (its
            fake quants named as in the file).
        onnx_path (str): The export.
        inputs (Tensor): A preprocessed batch.
        runtime (str): A registered runtime. Defaults to ``'onnxruntime'``.
        forced (bool): Run each segment alone, from the inputs of the fake
            quants it starts with (the simulation's own float values there)
            to the next fake quant: a difference is then made by that
            segment (its ops, its roundings). False runs the graph from its
            input up to each fake quant: differences accumulate. Defaults
            to True.
        **runtime_options: Passed to the runtime loader.

    Returns:
        list[TensorParity]: In graph order.
    """
    modules = dict(deploy_model.named_modules())
    # each fake quant's input (a segment's feed, so that a runtime merging
    # or dropping the rounding at its start shows) and output
    values: Dict[str, Tensor] = {}
    floats: Dict[str, Tensor] = {}

    def record(module, args, out, name):
        floats[name], values[name] = args[0], out

    hooks = [
        module.register_forward_hook(
            lambda m, args, out, name=name: record(m, args, out, name))
        for name, module in modules.items()
        if isinstance(module, QDQFakeQuantize) and name.startswith(
            _ACT_PREFIX) and not module.is_per_channel
    ]
    inputs = inputs.float().contiguous()
    try:
        with torch.no_grad(), get_runtime(runtime).simulation(
                deploy_model, **runtime_options) as simulation:
            simulation.eval()(inputs)
    finally:
        for hook in hooks:
            hook.remove()
    graph = onnx.load(onnx_path).graph
    input_name = graph.input[0].name
    dequantized = {node.input[0]: node for node in graph.node
                   if node.op_type == 'DequantizeLinear'}
    constants = onnx_constants(graph)
    report = []
    with tempfile.TemporaryDirectory() as tmp:
        cut = osp.join(tmp, 'cut.onnx')
        for node in graph.node:
            name = _fake_quant_of(node)
            if name not in values:
                continue
            sources = _segment_sources(graph, node) if forced else {
                input_name: None}
            if not sources:  # a constant (a quantized parameter)
                continue
            # cut after the DequantizeLinear: a runtime's rewrites of a
            # Q -> DQ pair need the pair
            dq = dequantized[node.output[0]]
            onnx.utils.extract_model(onnx_path, cut, list(sources),
                                     [dq.output[0]])
            feeds = [inputs if fq is None else floats[fq]
                     for fq in sources.values()]
            report.append(
                _compare(name, [fq or 'input' for fq in sources.values()]
                         if forced else [], modules[name], values[name],
                         _run(runtime, cut, feeds, runtime_options) -
                         _zero_point_shift(node, dq, constants)))
    return report


def _zero_point_shift(quantize: onnx.NodeProto, dequantize: onnx.NodeProto,
                      constants: Dict[str, np.ndarray]) -> float:
    """``s * (z_q - z_dq)``: what the ``DequantizeLinear`` adds to the
    fake quant's value where the export moved the zero-point into the bias
    of the linear layer reading it (OpenVINO's
    ``linear_zero_points_into_bias``); 0 elsewhere."""

    def zero_point(node):
        return int(constants[node.input[2]].reshape(-1)[0]) \
            if len(node.input) > 2 and node.input[2] else 0

    shift = zero_point(quantize) - zero_point(dequantize)
    if not shift:
        return 0.
    return float(constants[dequantize.input[1]].reshape(-1)[0]) * shift


def _run(runtime: str, path: str, feeds: List[Tensor],
         options: dict) -> np.ndarray:
    """The cut-out file's one output; its inputs in ``feeds``' order."""
    run = load_runtime(runtime, path, **options)
    return np.asarray(run([f.numpy() for f in feeds]))


def _compare(name: str, sources: List[str], fake_quant: QDQFakeQuantize,
             sim: Tensor, runtime: np.ndarray) -> TensorParity:
    """Both dequantized tensors as codes (both lie on the grid)."""
    scale = float(fake_quant.scale.reshape(-1)[0])
    sim = sim.double().numpy()
    runtime = runtime.astype(np.float64)
    diff = np.round(runtime / scale).astype(np.int64) - np.round(
        sim / scale).astype(np.int64)
    return TensorParity(name, sources, float((diff != 0).mean()),
                        int(np.abs(diff).max()), sqnr_db(sim, runtime))
