"""A codebase adapter from a user's own package (examples/custom_codebase),
loaded through ``custom_imports`` as a config loads it: the tracer applies
its rewrite and traces its model at the input shape it derives."""
import os.path as osp
import runpy
import sys

import onnx
import pytest
import torch
from mmcls.structures import ClsDataSample
from mmengine.config import Config
from mmengine.utils import import_modules_from_strings

from mmrazor_quant.models.codebases import codebase_of
from mmrazor_quant.models.task_modules.tracer import CustomTracer, TraceError
from mmrazor_quant.registry import CODEBASES, MODELS
from mmrazor_quant.utils.data_pipeline import add_test_pipeline

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
EXAMPLE = osp.join(ROOT, 'examples', 'custom_codebase')
CONFIG = osp.join(EXAMPLE, 'configs', 'ptq_openvino_tally.py')


@pytest.fixture()
def cfg():
    """The example config with its ``custom_imports`` imported (as the
    Runner does); the user's registrations are removed afterwards."""
    sys.path.insert(0, EXAMPLE)
    cfg = Config.fromfile(CONFIG)
    import_modules_from_strings(**cfg.custom_imports)
    yield cfg
    CODEBASES.module_dict.pop('TallyCodebase', None)
    MODELS.module_dict.pop('TallyNet', None)
    for name in [n for n in sys.modules if n.startswith('toy_codebase')]:
        del sys.modules[name]
    sys.path.remove(EXAMPLE)


def _samples(*labels):
    return [ClsDataSample().set_gt_label(label) for label in labels]


def _example_shape(gm):
    return next(n.meta['example_shape'] for n in gm.graph.nodes
                if n.op == 'placeholder')


def test_user_adapter_is_the_models_codebase(cfg):
    net = MODELS.build(cfg.model.architecture)
    assert type(codebase_of(net)).__name__ == 'TallyCodebase'
    # mmengine's generic adapter comes after it (TallyNet is a BaseModel).
    from mmrazor_quant.models.codebases import codebases_of
    assert [type(c).__name__ for c in codebases_of(net)] == \
        ['TallyCodebase', 'MMEngineCodebase']


def test_config_traces_at_the_test_pipeline_size_with_the_rewrite(cfg):
    model = MODELS.build(add_test_pipeline(cfg).model)
    assert 'input_shape' not in cfg.model
    # Resize(scale=(20, 18)) is mmcv's (w, h); the conv takes 1 channel.
    for gm in model.qmodels.values():
        assert _example_shape(gm) == (2, 1, 18, 20)
    # The adapter's rewrite put the loop over data samples into one node.
    loss_graph = model.qmodels['loss'].graph
    assert [n.target.__name__ for n in loss_graph.nodes
            if n.op == 'call_function'
            and getattr(n.target, '__name__', '') == 'labels_of'] == \
        ['labels_of']
    # ...which runs for real, at any batch size.
    model.eval()
    x = torch.randn(3, 1, 18, 20)
    samples = _samples(1, 4, 7)
    loss = model(x, samples, mode='loss')['loss']
    expected = torch.nn.functional.cross_entropy(
        model(x, mode='tensor'), torch.tensor([1, 4, 7]))
    torch.testing.assert_close(loss, expected, atol=0, rtol=0)
    # The rewrite is undone after tracing.
    from toy_codebase.models import TallyNet
    assert TallyNet.loss.__module__ == 'toy_codebase.models'


def test_adapter_default_size_without_pipeline(cfg):
    net = MODELS.build(cfg.model.architecture)
    assert codebase_of(net).input_shape(net) == (
        (1, 12, 12), 'the TallyCodebase default for classification models')
    gm = CustomTracer().trace_mode(net, 'tensor')
    assert _example_shape(gm) == (2, 1, 12, 12)
    x = torch.randn(2, 1, 12, 12)
    torch.testing.assert_close(gm(x), net(x), atol=0, rtol=0)


def test_explicit_input_shape_wins(cfg):
    model_cfg = dict(add_test_pipeline(cfg).model, input_shape=(1, 8, 8))
    model = MODELS.build(model_cfg)
    assert _example_shape(model.qmodels['tensor']) == (2, 1, 8, 8)


def test_without_the_adapter_the_model_does_not_trace(cfg):
    net = MODELS.build(cfg.model.architecture)
    CODEBASES.module_dict.pop('TallyCodebase')
    with pytest.raises(TraceError, match=r'TallyNet.forward\(mode=.loss.\)'
                       r'(.|\n)*CustomTracer\(input_shape=\(C, H, W\)\)'):
        CustomTracer().trace_mode(net, 'loss')


def test_ptq_tool_quantizes_and_exports_the_user_codebase(
        cfg, tmp_path, monkeypatch):
    """``tools/ptq.py --export`` on the example config, as a user runs it:
    traced at the pipeline's 18 x 20, calibrated, exported, checked."""
    monkeypatch.setattr(sys, 'argv', [
        'ptq.py', CONFIG, '--work-dir', str(tmp_path), '--export',
        'openvino', '--cfg-options', 'test_cfg.calibrate_steps=2'
    ])
    runpy.run_path(osp.join(ROOT, 'tools', 'ptq.py'))['main']()
    graph = onnx.load(str(tmp_path / 'ptq_openvino_tally_openvino.onnx')).graph
    dims = [d.dim_value for d in graph.input[0].type.tensor_type.shape.dim]
    assert dims[1:] == [1, 18, 20]
    ops = [n.op_type for n in graph.node]
    assert ops.count('QuantizeLinear') == ops.count('DequantizeLinear') > 0
