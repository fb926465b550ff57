"""Fake-quant positions on a transformer block, per backend (issue 13).

The tables are derived by hand from the rule tables in docs/backends.md for
:class:`AttentionBlockNet`: ``norm1 -> qkv -> unflatten/permute -> q, k, v
(getitem) -> q @ k^T (matmul) -> * scale -> + bias (add) -> softmax ->
attn @ v (matmul_1) -> transpose/reshape -> proj -> + inputs (add_1) ->
norm2 -> fc1 -> GELU (act) -> fc2 -> + (add_2) -> mean -> head``.
"""
import pytest
import torch
from torch import fx

from mmrazor_quant.models.quantizers import (
    AcademicQuantizer,
    OpenVINOQuantizer,
    TensorRTQuantizer,
    TorchNativeQuantizer,
)
from mmrazor_quant.models.quantizers.op_kinds import OpKind, classify_node
from mmrazor_quant.models.quantizers.passes.insert_fake_quants import (
    is_fake_quant_node,
)
from .test_positions import UNSIGNED, W8_SIGNED, fake_quant_consumers, qconfig
from .toy_models import AttentionBlockNet

U8_SYM = dict(UNSIGNED, is_symmetry=True)
# Q @ K^T quantizes q (getitem) and k^T (transpose); attn @ V quantizes the
# softmax output and v (getitem_2).
QK = {'getitem': ['matmul'], 'transpose': ['matmul']}
AV = {'softmax': ['matmul_1'], 'getitem_2': ['matmul_1']}
LINEAR_INPUTS = {'norm1': ['qkv'], 'reshape': ['proj'], 'norm2': ['fc1'],
                 'act': ['fc2'], 'mean': ['head']}

EXPECTED = {
    # outputs of every quantized op; shape ops, the score scale and the
    # score bias add keep the float/grid of their input
    'native': (TorchNativeQuantizer, UNSIGNED, {}, {
        'inputs': ['add_1', 'norm1', 'size', 'size_1'],
        'norm1': ['qkv'],
        'qkv': ['unflatten'],
        'matmul': ['mul'],
        'softmax': ['matmul_1'],
        'matmul_1': ['transpose_1'],
        'proj': ['add_1'],
        'add_1': ['add_2', 'norm2'],
        'norm2': ['fc1'],
        'fc1': ['act'],
        'act': ['fc2'],
        'fc2': ['add_2'],
        'add_2': ['mean'],
        'add_2@mean': ['head'],  # mean keeps its input's qparams
        'head': ['output'],
    }),
    # NNCF's default (CNN) placement: residual adds and mean quantized too.
    # OpenVINO's fake quants sit before shape ops: q, k and v share one on
    # the permuted qkv tensor (the gathers then run in u8), proj's input is
    # attn @ V's output (before transpose/reshape), head's the mean; of a
    # residual add, the branch that is not the linear it is fused into.
    'openvino_cnn': (OpenVINOQuantizer, U8_SYM, {}, {
        'norm1': ['qkv'], 'norm2': ['fc1'], 'act': ['fc2'], 'mean': ['head'],
        'permute': ['getitem', 'getitem_1', 'getitem_2'],
        'softmax': ['matmul_1'],
        'matmul_1': ['transpose_1'],
        'inputs': ['add_1'],
        'add_1': ['add_2'],  # norm2 reads the float tensor
        'add_2': ['mean'],
    }),
    # NNCF's ModelType.TRANSFORMER: linear inputs and Q @ K^T only; v reads
    # the float qkv tensor
    'openvino_transformer': (OpenVINOQuantizer, U8_SYM,
                             dict(model_type='transformer'), {
                                 'norm1': ['qkv'], 'norm2': ['fc1'],
                                 'act': ['fc2'], 'mean': ['head'],
                                 'permute': ['getitem', 'getitem_1'],
                                 'matmul_1': ['transpose_1']}),
    # both attention matmuls; of a residual add the branch not coming from a
    # linear; mean's input (TensorRT's average pooling)
    'tensorrt': (TensorRTQuantizer, W8_SIGNED, {}, {
        **LINEAR_INPUTS, **QK, **AV,
        'inputs': ['add_1'],
        'add_1': ['add_2'],
        'add_2': ['mean'],
    }),
    'academic': (AcademicQuantizer, UNSIGNED, {}, {
        **LINEAR_INPUTS, **QK, **AV}),
}


def _prepare(name, modes=('tensor', 'loss')):
    cls, a_qscheme, kwargs, _ = EXPECTED[name]
    quantizer = cls(global_qconfig=qconfig(a_qscheme), **kwargs)
    model = AttentionBlockNet()
    return model, quantizer.prepare(model, modes)


def _requantized_through_shape_ops(graph: fx.Graph, modules) -> list:
    """Fake quants whose input is another fake quant's output seen through
    shape ops only."""
    found = []
    for node in graph.nodes:
        if not is_fake_quant_node(node):
            continue
        src = node.args[0]
        while not is_fake_quant_node(src) and \
                classify_node(src, modules) == OpKind.SHAPE:
            src = src.args[0]
        if is_fake_quant_node(src):
            found.append(node.name)
    return found


@pytest.mark.parametrize('name', list(EXPECTED))
def test_attention_positions_follow_rule_table(name):
    expected = EXPECTED[name][3]
    model, gms = _prepare(name)
    for mode, gm in gms.items():
        final = 'output' if mode == 'tensor' else 'cross_entropy'
        want = {k: sorted(final if c == 'output' else c for c in v)
                for k, v in expected.items()}
        assert fake_quant_consumers(gm.graph) == want, mode
        modules = dict(gm.named_modules())
        assert _requantized_through_shape_ops(gm.graph, modules) == []
        # shape ops and size arithmetic never feed a fake quant that only
        # shape ops consume, and sizes are never quantized
        for node in gm.graph.nodes:
            if node.op == 'call_method' and node.target == 'size':
                assert not any(is_fake_quant_node(u) for u in node.users)
    weighted = {n for n, m in model.named_modules()
                if hasattr(m, 'weight_fake_quant')}
    assert weighted == {'qkv', 'proj', 'fc1', 'fc2', 'head'}


def test_attention_op_kinds():
    gm = fx.symbolic_trace(AttentionBlockNet(),
                           concrete_args=dict(data_samples=None,
                                              mode='tensor'))
    modules = dict(gm.named_modules())
    kinds = {n.name: classify_node(n, modules) for n in gm.graph.nodes}
    assert kinds['matmul'] == OpKind.MATMUL
    assert kinds['matmul_1'] == OpKind.ATTN_MATMUL
    assert kinds['softmax'] == OpKind.SOFTMAX
    assert kinds['norm1'] == kinds['norm2'] == OpKind.NORM
    assert kinds['act'] == OpKind.GELU
    # the score bias add feeds the softmax only: not a residual add
    assert kinds['add'] == OpKind.OTHER
    assert kinds['add_1'] == kinds['add_2'] == OpKind.ADD
    for shape_op in ('unflatten', 'permute', 'getitem', 'transpose',
                     'transpose_1', 'reshape'):
        assert kinds[shape_op] == OpKind.SHAPE, shape_op


def test_attention_simulation_is_calibrated_everywhere():
    # every fake quant sees data in tensor mode and the loss backpropagates
    # through the quantized attention (finite gradients on every weight)
    model, gms = _prepare('tensorrt')
    x = torch.randn(4, 6, 16)
    with torch.no_grad():
        gms['tensor'](x, None)
    assert all(fq.is_initialized for fq in model.act_fake_quants.values())
    model.train()
    loss = gms['loss'](x, torch.tensor([0, 1, 2, 3]))['loss']
    loss.backward()
    for name in ('qkv', 'proj', 'fc1', 'fc2', 'head'):
        grad = model.get_submodule(name).weight.grad
        assert grad is not None and torch.isfinite(grad).all(), name
        assert grad.abs().sum() > 0, name


def test_openvino_model_type_is_checked():
    with pytest.raises(ValueError, match="model_type must be one of "
                       r"\('cnn', 'transformer'\), got 'vit'"):
        OpenVINOQuantizer(global_qconfig=qconfig(U8_SYM), model_type='vit')


def test_mmcv_linear_wrapper_is_quantized_like_linear():
    # mmcv's FFN builds its layers with mmcv's Linear wrapper; traced
    # through, it would be a float F.linear call
    wrappers = pytest.importorskip('mmcv.cnn.bricks.wrappers')
    model = AttentionBlockNet()
    for name in ('fc1', 'fc2'):
        old = getattr(model, name)
        new = wrappers.Linear(old.in_features, old.out_features)
        new.load_state_dict(old.state_dict())
        setattr(model, name, new)
    x = torch.randn(2, 6, 16)
    with torch.no_grad():
        want = model(x)
    cls, a_qscheme, kwargs, expected = EXPECTED['openvino_transformer']
    gm = cls(global_qconfig=qconfig(a_qscheme), **kwargs).prepare(
        model, ('tensor', ))['tensor']
    assert fake_quant_consumers(gm.graph) == expected
    assert not any(n.target is torch.nn.functional.linear
                   for n in gm.graph.nodes)
    for name in ('fc1', 'fc2'):
        assert hasattr(model.get_submodule(name), 'weight_fake_quant')
    # the same function up to 8-bit weight rounding
    with torch.no_grad():
        torch.testing.assert_close(gm(x, None), want, rtol=0, atol=0.02)
