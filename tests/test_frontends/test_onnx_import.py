"""The ONNX importer: converted graphs against onnxruntime, the fx
normalisation (what the quantizers see), names and dynamic axes."""
import collections
import warnings

import numpy as np
import onnxruntime as ort
import pytest
import torch
from torch import nn

from mmrazor_quant.frontends.fx_normalize import HardSigmoid
from mmrazor_quant.frontends.onnx_import import import_onnx
from mmrazor_quant.models.quantizers.op_kinds import classify_node
from mmrazor_quant.registry import MODELS
from .onnx_toys import TOY_SHAPE, export_toy

#: The toy's Shape -> Gather -> Mul -> Unsqueeze -> Concat subgraph
#: feeding its Reshape: 4 Shape, 4 Gather, 1 Mul, 3 Unsqueeze, 1 Concat.
SHAPE_SUBGRAPH_OPS = {'Shape': 4, 'Gather': 4, 'Mul': 1, 'Unsqueeze': 3,
                      'Concat': 1}


def _onnxruntime(path: str, x: torch.Tensor) -> np.ndarray:
    return ort.InferenceSession(path).run(None, {'image': x.numpy()})[0]


@pytest.mark.parametrize('opset', [13, 17])
def test_converted_graph_matches_onnxruntime(toy_onnx, toy_onnx_13, opset):
    path = toy_onnx if opset == 17 else toy_onnx_13
    gm, _ = import_onnx(path)
    x = torch.randn(4, *TOY_SHAPE, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ours = gm(x).numpy()
    ref = _onnxruntime(path, x)
    assert ours.shape == ref.shape == (4, 10)
    assert np.abs(ours - ref).max() < 1e-5


def test_normalised_graph_looks_hand_written(toy_onnx_13):
    gm, info = import_onnx(toy_onnx_13)
    modules = dict(gm.named_modules())
    types = collections.Counter(type(m) for m in modules.values())
    # MatMul by a constant + Add of a constant: one nn.Linear with W.T, b
    assert types[nn.Linear] == 1
    linear = next(m for m in modules.values() if isinstance(m, nn.Linear))
    assert linear.weight.shape == (10, 16) and linear.bias.shape == (10, )
    # nine written-out ops of LayerNorm: one nn.LayerNorm (eps kept)
    assert types[nn.LayerNorm] == 1
    norm = next(m for m in modules.values() if isinstance(m, nn.LayerNorm))
    assert norm.normalized_shape == (16, )
    assert norm.eps == pytest.approx(1e-5, rel=1e-3)
    assert types[nn.Hardsigmoid] == 1 and types[HardSigmoid] == 0
    kinds = collections.Counter(
        classify_node(n, modules) for n in gm.graph.nodes)
    assert kinds['linear'] == 1 and kinds['norm'] == 1
    assert kinds['avgpool'] == 1  # mean over tokens
    assert kinds['softmax'] == 1
    # q @ k^T and attn @ v as torch.matmul (attention matmuls)
    assert kinds['matmul'] + kinds['attention_matmul'] == 2
    # the scale of the scores is a Python float, not a second tensor
    scaled = [n for n in gm.graph.nodes if n.op == 'call_function'
              and 0.25 in n.args]
    assert len(scaled) == 1 and scaled[0].target.__name__ == 'mul'
    shape_ops = collections.Counter(info.op_type(m)
                                    for m in info.shape_modules)
    assert dict(shape_ops) == SHAPE_SUBGRAPH_OPS
    for name in info.shape_modules:
        assert getattr(modules[name], 'op_kind', None) == 'shape'


def test_version_converted_softmax_keeps_the_batch_dynamic(tmp_path):
    """onnx's 12 -> 13 converter writes a softmax as Flatten, 2-D Softmax
    and a Reshape back to ``Shape(x)``. Imported, it is one last-axis
    ``nn.Softmax``: exported at batch 1, the file runs at batch 3 (a
    ``Shape`` of an activation would reach it as the constant [1, ...])."""
    import onnx
    from onnx import version_converter
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        path = export_toy(str(tmp_path / 'toy12.onnx'), opset=12)
    converted = version_converter.convert_version(onnx.load(path), 13)
    ops = [n.op_type for n in converted.graph.node]
    assert ops.count('Flatten') == 1 and ops.count('Softmax') == 1
    path = str(tmp_path / 'toy12to13.onnx')
    onnx.save(converted, path)
    gm, info = import_onnx(path)
    modules = dict(gm.named_modules())
    assert [type(m) for m in modules.values()].count(nn.Softmax) == 1
    left = collections.Counter(
        info.op_type(n.target) for n in gm.graph.nodes
        if n.op == 'call_module' and n.target in info.nodes)
    assert left['Flatten'] == 0 and left['Reshape'] == 1  # the toy's own
    exported = str(tmp_path / 'exported.onnx')
    with warnings.catch_warnings():
        warnings.simplefilter('ignore')
        torch.onnx.export(gm, (torch.randn(1, *TOY_SHAPE), ), exported,
                          input_names=['image'], output_names=['logits'],
                          dynamic_axes={'image': {0: 'batch'}},
                          opset_version=13, dynamo=False)
    x = torch.randn(3, *TOY_SHAPE, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        ours = gm(x).numpy()
    np.testing.assert_allclose(_onnxruntime(exported, x), ours, atol=1e-5)
    np.testing.assert_allclose(_onnxruntime(path, x), ours, atol=1e-5)


def test_names_and_dynamic_axes(toy_onnx):
    _, info = import_onnx(toy_onnx)
    assert info.input_names == ['image'] and info.output_names == ['logits']
    assert info.dynamic_axes == {'image': {0: 'batch'},
                                 'logits': {0: 'batch'}}
    assert info.onnx_name('conv/Conv') == '/conv/Conv'
    assert info.onnx_name('ln/LayerNormalization') == \
        '/ln/LayerNormalization'


def _reshape_to_computed_shape(dynamic: bool):
    """x [N, 4, 6] -> Reshape(x, Concat(Shape(x)[:1], [-1])): onnx's
    inference gives the output a shape only when N is known."""
    import onnx
    from onnx import TensorProto, helper
    batch = 'N' if dynamic else 2
    nodes = [
        helper.make_node('Shape', ['x'], ['shape']),
        helper.make_node('Slice', ['shape', 'zero', 'one'], ['batch']),
        helper.make_node('Concat', ['batch', 'minus_one'], ['target'],
                         axis=0),
        helper.make_node('Reshape', ['x', 'target'], ['y']),
        helper.make_node('Relu', ['y'], ['out']),
    ]
    inits = [onnx.numpy_helper.from_array(np.array([v], np.int64), name)
             for name, v in (('zero', 0), ('one', 1), ('minus_one', -1))]
    graph = helper.make_graph(
        nodes, 'g',
        [helper.make_tensor_value_info('x', TensorProto.FLOAT,
                                       [batch, 4, 6])],
        [helper.make_tensor_value_info('out', TensorProto.FLOAT, None)],
        inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid('',
                                                                       13)])


def test_shape_inference_falls_back_to_symbolic_only_where_needed(
        monkeypatch):
    """onnx's shape inference (milliseconds) is kept when it shapes every
    node output; a reshape to a shape computed from the input's shape
    needs onnxruntime's symbolic inference (seconds to minutes), which
    keeps the dynamic dim's name."""
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    from mmrazor_quant.frontends.onnx_prepasses import (
        infer_shapes,
        unshaped_outputs,
    )
    symbolic = SymbolicShapeInference.infer_shapes
    calls = []
    monkeypatch.setattr(SymbolicShapeInference, 'infer_shapes',
                        lambda *a, **k: calls.append(1) or symbolic(*a, **k))
    plain = _reshape_to_computed_shape(dynamic=False)
    del plain.graph.node[:4]  # x -> Relu -> out
    plain.graph.node[0].input[0] = 'x'
    assert unshaped_outputs(infer_shapes(plain)) == [] and calls == []
    inferred = infer_shapes(_reshape_to_computed_shape(dynamic=True))
    assert len(calls) == 1 and unshaped_outputs(inferred) == []
    dims = {v.name: [d.dim_value or d.dim_param
                     for d in v.type.tensor_type.shape.dim]
            for v in inferred.graph.value_info}
    assert dims['y'] == ['N', 24]


def _openvino_quant(path: str, normalize: bool):
    from mmrazor_quant.frontends.defaults import default_quantizer
    return MODELS.build(dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=dict(type='mmrazor_quant.OnnxModel', path=path,
                          normalize=normalize),
        quantizer=default_quantizer('openvino'), forward_modes=('tensor', )))


def test_fake_quants_with_and_without_normalisation(toy_onnx):
    """As converted, the quantizer sees two convs and 'other' ops: the
    head's weights stay float and the attention stays float. Normalised,
    it sees the linear head, LayerNorm and attention as in a torch
    model."""
    counts = {}
    for normalize in (False, True):
        qmodel = _openvino_quant(toy_onnx, normalize)
        names = [k for k, v in qmodel.named_modules()
                 if type(v).__name__ == 'FakeQuantize']
        counts[normalize] = (len(names),
                             sum('weight' in k for k in names))
    assert counts[False] == (4, 2)
    assert counts[True] == (13, 3)
