"""Tests of CustomTracer on mmcls classifiers and on toy modules."""
import re
from typing import List, Optional

import pytest
import torch
import torch.nn.functional as F
from mmengine import Config
from torch import nn
from torch.fx import GraphModule

from mmrazor_quant.models.task_modules import CustomTracer
from mmrazor_quant.models.task_modules.tracer import TraceError
from mmrazor_quant.registry import TASK_UTILS

mmcls = pytest.importorskip('mmcls')
from mmcls.models.heads import ClsHead, LinearClsHead  # noqa: E402
from mmcls.structures import ClsDataSample  # noqa: E402

HEAD_METHODS = [
    'mmcls.models.heads.ClsHead._get_loss',
    'mmcls.models.heads.cls_head.ClsHead._get_predictions',
]
MODES = ('tensor', 'predict', 'loss')

# Narrow versions of mmcls' own configs: fast on 2 CPU cores.
CONFIGS = {
    'resnet18_cifar':
    """
_base_ = ['mmcls::resnet/resnet18_8xb16_cifar10.py']
model = dict(
    backbone=dict(stem_channels=16, base_channels=16),
    head=dict(in_channels=128))
""",
    'mobilenet_v2':
    """
_base_ = ['mmcls::mobilenet_v2/mobilenet-v2_8xb32_in1k.py']
model = dict(backbone=dict(widen_factor=0.5), head=dict(num_classes=10))
""",
}


@pytest.fixture(scope='module', params=sorted(CONFIGS))
def classifier(request, tmp_path_factory) -> nn.Module:
    from mmcls.registry import MODELS
    from mmcls.utils import register_all_modules
    register_all_modules(init_default_scope=False)
    path = tmp_path_factory.mktemp('configs') / f'{request.param}.py'
    path.write_text(CONFIGS[request.param])
    torch.manual_seed(0)
    model = MODELS.build(Config.fromfile(str(path)).model)
    # Non-trivial BN statistics, then eval mode for determinism.
    model.train()
    with torch.no_grad():
        model(torch.randn(4, 3, 32, 32))
    return model.eval()


@pytest.fixture(scope='module')
def graph_modules(classifier) -> dict:
    tracer = CustomTracer(skipped_methods=HEAD_METHODS)
    return {mode: tracer.trace_mode(classifier, mode) for mode in MODES}


def _inputs() -> torch.Tensor:
    return torch.randn(2,
                       3,
                       32,
                       32,
                       generator=torch.Generator().manual_seed(1))


def _samples() -> List[ClsDataSample]:
    return [ClsDataSample().set_gt_label(label) for label in (3, 7)]


# -- mmcls classifiers ---------------------------------------------------
def test_tensor_mode_matches_eager(classifier, graph_modules):
    x = _inputs()
    out = graph_modules['tensor'](x)
    expected = classifier(x, mode='tensor')
    assert out.shape == (2, 10)
    torch.testing.assert_close(out, expected, atol=1e-6, rtol=0)
    # data_samples is accepted (and ignored) as in the model.
    torch.testing.assert_close(graph_modules['tensor'](x, _samples()),
                               expected,
                               atol=1e-6,
                               rtol=0)


@pytest.mark.parametrize('with_samples', [False, True])
def test_predict_mode_matches_eager(classifier, graph_modules, with_samples):
    x = _inputs()
    out = graph_modules['predict'](x, _samples() if with_samples else None)
    expected = classifier(x,
                          _samples() if with_samples else None,
                          mode='predict')
    assert len(out) == len(expected) == 2
    for got, want in zip(out, expected):
        assert isinstance(got, ClsDataSample)
        assert torch.equal(got.pred_label.label, want.pred_label.label)
        torch.testing.assert_close(got.pred_label.score,
                                   want.pred_label.score,
                                   atol=1e-6,
                                   rtol=0)
        if with_samples:
            assert torch.equal(got.gt_label.label, want.gt_label.label)


def test_loss_mode_matches_eager(classifier, graph_modules):
    x = _inputs()
    losses = graph_modules['loss'](x, _samples())
    expected = classifier(x, _samples(), mode='loss')
    assert set(losses) == set(expected) == {'loss'}
    assert losses['loss'].item() > 0
    torch.testing.assert_close(losses['loss'],
                               expected['loss'],
                               atol=1e-6,
                               rtol=0)


def test_head_methods_are_single_opaque_nodes(graph_modules):
    for mode, method in (('loss', '_get_loss'), ('predict',
                                                 '_get_predictions')):
        graph = graph_modules[mode].graph
        calls = [
            n for n in graph.nodes
            if n.op == 'call_method' and n.target == method
        ]
        assert len(calls) == 1
        owner = calls[0].args[0]
        assert (owner.op, owner.target) == ('get_attr', 'head')
        assert [p.target for p in graph.nodes if p.op == 'placeholder'] == \
            ['inputs', 'data_samples']
        assert list(calls[0].meta['nn_module_stack'])[-1] == 'head'
    # ...and nothing of them is traced in the tensor graph.
    assert not any(n.op == 'get_attr' and n.target == 'head'
                   for n in graph_modules['tensor'].graph.nodes)


def test_modes_share_submodules_with_model(classifier, graph_modules):
    model_modules = dict(classifier.named_modules())
    model_params = dict(classifier.named_parameters())
    for gm in graph_modules.values():
        assert isinstance(gm, GraphModule)
        assert gm.backbone is classifier.backbone
        assert gm.head is classifier.head
        targets = [
            n.target for n in gm.graph.nodes
            if n.op in ('call_module', 'get_attr')
        ]
        assert targets
        for target in targets:
            assert gm.get_submodule(target) is model_modules[target]
        for name, param in gm.named_parameters():
            assert param is model_params[name]
    assert len(dict(graph_modules['tensor'].named_parameters())) == \
        len(model_params)


def test_nn_module_stack_names_modules(graph_modules):
    graph = graph_modules['tensor'].graph
    for node in graph.nodes:
        if node.op == 'call_module':
            stack = node.meta['nn_module_stack']
            path, _ = list(stack.values())[-1]
            assert path == node.target
    # Ops between modules (e.g. residual adds) name their block.
    inner = [
        n for n in graph.nodes
        if n.op == 'call_function' and 'nn_module_stack' in n.meta
    ]
    assert any(
        re.fullmatch(r'backbone\.layer\d+\.\d+',
                     list(n.meta['nn_module_stack'].values())[-1][0])
        for n in inner)


def test_classes_are_restored_after_trace(classifier):
    originals = {
        n: ClsHead.__dict__[n]
        for n in ('_get_loss', '_get_predictions')
    }
    tracer = CustomTracer(skipped_methods=HEAD_METHODS * 2)
    tracer.trace_mode(classifier, 'loss')
    assert {n: ClsHead.__dict__[n] for n in originals} == originals


class SampleLoopingHead(LinearClsHead):
    """A user's head whose own ``_get_loss`` loops over data samples (the
    mmcls adapter skips only ``ClsHead``'s)."""

    def _get_loss(self, cls_score, data_samples, **kwargs):
        target = torch.cat([s.gt_label.label for s in data_samples])
        return dict(loss=F.cross_entropy(cls_score, target))


def test_mmcls_head_methods_are_skipped_by_default(classifier):
    graph = CustomTracer().trace_mode(classifier, 'loss')
    losses = graph(_inputs(), _samples())
    torch.testing.assert_close(losses['loss'],
                               classifier(_inputs(), _samples(),
                                          mode='loss')['loss'],
                               atol=1e-6, rtol=0)


def test_a_head_method_looping_over_samples_fails_with_suggestion(
        classifier):
    head_class = type(classifier.head)
    assert head_class is LinearClsHead
    classifier.head.__class__ = SampleLoopingHead
    try:
        with pytest.raises(TraceError) as info:
            CustomTracer().trace_mode(classifier, 'loss')
    finally:
        classifier.head.__class__ = head_class
    message = str(info.value)
    assert "module 'head'" in message
    assert re.search(r"skipped_methods=\['[\w.]*test_custom_tracer\."
                     r"SampleLoopingHead\._get_loss'\]", message), message
    assert info.value.__cause__ is not None


def test_trace_mode_rejects_unknown_mode(classifier):
    with pytest.raises(ValueError, match=r"mode must be one of .* 'train'"):
        CustomTracer().trace_mode(classifier, 'train')


def test_registered_in_task_utils():
    tracer = TASK_UTILS.build(
        dict(type='mmrazor_quant.CustomTracer', skipped_methods=HEAD_METHODS))
    assert isinstance(tracer, CustomTracer)
    assert tracer.skipped_methods == HEAD_METHODS


# -- toy modules ---------------------------------------------------------
class GatedBlock(nn.Module):
    """A block whose output depends on the sign of its input's mean."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self._gate(self.conv(x)) + 1

    def _gate(self, x: torch.Tensor) -> torch.Tensor:
        if x.mean() > 0:  # data-dependent: untraceable
            return x * 2
        return -x


class LenBlock(nn.Module):

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * len(x)


class IterBlock(nn.Module):

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.stack([row * 2 for row in x])


class FlagLeaf(nn.Module):
    """Untraceable itself, but declared an fx leaf like our observers."""
    is_fx_leaf = True

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x if x.sum() > 0 else -x


class ToyModel(nn.Module):
    """A toy with mmengine's BaseModel forward signature."""

    def __init__(self, block: nn.Module) -> None:
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 3, 3, padding=1), block)
        self.head = nn.Linear(3, 4)

    def forward(self,
                inputs: torch.Tensor,
                data_samples: Optional[list] = None,
                mode: str = 'tensor'):
        feats = self.backbone(inputs).mean((2, 3))
        if mode == 'tensor':
            return self.head(feats)
        return {'loss': self.head(feats).sum()}


def _toy(block: nn.Module) -> nn.Module:
    torch.manual_seed(0)
    return ToyModel(block).eval()


def _gated_inputs() -> List[torch.Tensor]:
    x = torch.randn(2, 3, 8, 8, generator=torch.Generator().manual_seed(2))
    return [x, x + 5, x - 5]


def test_data_dependent_method_error_names_module_and_fix():
    model = _toy(GatedBlock())
    entry = f'{GatedBlock.__module__}.GatedBlock._gate'
    original = GatedBlock.__dict__['_gate']
    with pytest.raises(TraceError) as info:
        CustomTracer().trace_mode(model, 'tensor')
    message = str(info.value)
    assert "ToyModel.forward(mode='tensor')" in message
    assert "module 'backbone.1' (GatedBlock)" in message
    assert 'failed in GatedBlock._gate' in message
    assert f"skipped_methods=['{entry}']" in message
    assert 'control flow' in message
    assert isinstance(info.value, RuntimeError)
    assert isinstance(info.value.__cause__, torch.fx.proxy.TraceError)
    # The suggested entry fixes it and keeps the branch dynamic.
    gm = CustomTracer(skipped_methods=[entry]).trace_mode(model, 'tensor')
    for x in _gated_inputs():
        torch.testing.assert_close(gm(x), model(x), atol=1e-6, rtol=0)
    call = next(n for n in gm.graph.nodes
                if n.op == 'call_method' and n.target == '_gate')
    assert call.args[0].target == 'backbone.1'
    # Patched for the traces only, failed or not.
    assert GatedBlock.__dict__['_gate'] is original


@pytest.mark.parametrize('block, needle', [(LenBlock(), "'len' is not"),
                                           (IterBlock(), 'iterate')])
def test_forward_failure_suggests_leaf_entries(block, needle):
    model = _toy(block)
    name = type(block).__name__
    with pytest.raises(TraceError, match=re.escape(needle)) as info:
        CustomTracer().trace_mode(model, 'loss')
    message = str(info.value)
    assert f"module 'backbone.1' ({name}) failed in {name}.forward" in message
    assert f"skipped_methods=['{type(block).__module__}.{name}.forward']" \
        in message
    assert f"skipped_module_classes=['{name}']" in message
    assert "skipped_module_names=['backbone.1']" in message
    # Each suggestion works.
    x = torch.randn(2, 3, 8, 8)
    forward = f'{type(block).__module__}.{name}.forward'
    for tracer in (CustomTracer(skipped_methods=[forward]),
                   CustomTracer(skipped_module_names=['backbone.1']),
                   CustomTracer(skipped_module_classes=[name])):
        gm = tracer.trace_mode(model, 'loss')
        torch.testing.assert_close(gm(x)['loss'],
                                   model(x, mode='loss')['loss'],
                                   atol=1e-6,
                                   rtol=0)


def test_failed_trace_restores_patched_methods():
    original = GatedBlock.__dict__['_gate']
    tracer = CustomTracer(
        skipped_methods=[f'{GatedBlock.__module__}.GatedBlock._gate'])
    with pytest.raises(TraceError, match="'len' is not supported"):
        tracer.trace_mode(_toy(LenBlock()))
    assert GatedBlock.__dict__['_gate'] is original
    # The tracer stays usable, and its node metadata does not depend on
    # the failed trace.
    gm = tracer.trace_mode(_toy(GatedBlock()))
    conv = next(n for n in gm.graph.nodes if n.target == 'backbone.1.conv')
    assert list(conv.meta['nn_module_stack']) == \
        ['backbone', 'backbone.1', 'backbone.1.conv']


@pytest.mark.parametrize(
    'entry',
    ['GatedBlock',
     type(GatedBlock()), f'{GatedBlock.__module__}.GatedBlock'])
def test_skipped_module_classes_make_call_module_leaves(entry):
    model = _toy(GatedBlock())
    gm = CustomTracer(skipped_module_classes=[entry]).trace_mode(model)
    calls = [n.target for n in gm.graph.nodes if n.op == 'call_module']
    assert calls == ['backbone.0', 'backbone.1', 'head']
    for x in _gated_inputs():
        torch.testing.assert_close(gm(x), model(x), atol=1e-6, rtol=0)


def test_skipped_module_names_make_call_module_leaves():
    model = _toy(GatedBlock())
    gm = CustomTracer(skipped_module_names=['backbone.1']).trace_mode(model)
    node = next(n for n in gm.graph.nodes if n.target == 'backbone.1')
    assert node.op == 'call_module'
    path, cls = list(node.meta['nn_module_stack'].values())[-1]
    assert (path, cls) == ('backbone.1', GatedBlock)
    assert gm.backbone[1] is model.backbone[1]
    for x in _gated_inputs():
        torch.testing.assert_close(gm(x), model(x), atol=1e-6, rtol=0)


def test_is_fx_leaf_modules_are_leaves():
    model = _toy(FlagLeaf())
    gm = CustomTracer().trace_mode(model)
    assert [n.target for n in gm.graph.nodes if n.op == 'call_module'] == \
        ['backbone.0', 'backbone.1', 'head']
    x = torch.randn(2, 3, 8, 8)
    torch.testing.assert_close(gm(x), model(x), atol=1e-6, rtol=0)


def test_trace_failing_in_the_model_itself_points_to_concrete_args():
    model = _toy(nn.Identity())
    with pytest.raises(TraceError) as info:
        CustomTracer().trace(model)
    message = str(info.value)
    assert 'the model itself (ToyModel) failed in ToyModel.forward' in message
    assert 'specialise its non-tensor arguments with `concrete_args`' \
        in message
    graph = CustomTracer().trace(model, concrete_args={'mode': 'tensor'})
    assert [n.target for n in graph.nodes if n.op == 'call_module'] == \
        ['backbone.0', 'backbone.1', 'head']


def test_unknown_skipped_module_name_is_rejected():
    with pytest.raises(ValueError,
                       match=r"\['backbone\.9'\] are not "
                       'submodules of ToyModel'):
        CustomTracer(skipped_module_names=['backbone.9']).trace_mode(
            _toy(nn.Identity()))


@pytest.mark.parametrize('entry, reason', [
    ('mmcls.models.heads.ClsHead._no_such_method',
     "class ClsHead has no attribute '_no_such_method'"),
    ('mmcls.models.heads.NoSuchHead._get_loss',
     "'mmcls.models.heads' has no attribute 'NoSuchHead'"),
    ('no_such_package.Head._get_loss', 'no prefix of it is an importable'),
    ('_get_loss', 'is not a dotted path'),
    ('mmcls.models.heads.ClsHead', 'is not a class'),
])
def test_unresolvable_skipped_method_is_a_value_error(entry, reason):
    with pytest.raises(ValueError) as info:
        CustomTracer(skipped_methods=[entry])
    message = str(info.value)
    assert f'skipped_methods entry {entry!r}' in message
    assert reason in message


def test_bad_skipped_module_classes():
    with pytest.raises(ValueError, match="entry 'torch.nn.NoSuchModule'"):
        CustomTracer(skipped_module_classes=['torch.nn.NoSuchModule'])
    with pytest.raises(TypeError, match='torch.relu.* is a builtin'):
        CustomTracer(skipped_module_classes=['torch.relu'])
