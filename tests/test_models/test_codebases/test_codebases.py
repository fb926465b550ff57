"""The codebase adapters of mmcls, mmdet and plain mmengine models: which
models they handle, the input shape they derive from a config, and what the
tracer takes from them."""
import contextlib

import pytest
import torch
from mmengine.config import Config
from mmengine.hub import get_config
from mmengine.model import BaseModel
from torch import nn

from mmrazor_quant.models.codebases import (
    MMClsCodebase,
    MMDetCodebase,
    MMEngineCodebase,
    block_types_of,
    codebase_of,
    codebases_of,
)
from mmrazor_quant.models.task_modules import CustomTracer
from mmrazor_quant.utils.data_pipeline import add_test_pipeline

DEIT = 'mmcls::deit/deit-tiny_pt-4xb256_in1k.py'
SWIN = 'mmcls::swin_transformer/swin-tiny_16xb64_in1k.py'
SHUFFLENET = 'mmcls::shufflenet_v2/shufflenet-v2-1x_16xb64_in1k.py'


def _mmcls_model(config: str, **backbone):
    from mmcls.registry import MODELS
    from mmcls.utils import register_all_modules
    register_all_modules()
    cfg = get_config(config)
    cfg.model.backbone.update(backbone)
    torch.manual_seed(0)
    return MODELS.build(cfg.model).eval()


class _PlainModel(BaseModel):

    def forward(self, inputs, data_samples=None, mode='tensor'):
        return inputs


def _example_shape(gm):
    return next(n.meta['example_shape'] for n in gm.graph.nodes
                if n.op == 'placeholder')


def test_models_get_their_codebase_most_specific_first():
    resnet = _mmcls_model('mmcls::resnet/resnet18_8xb32_in1k.py')
    assert [type(c) for c in codebases_of(resnet)] == \
        [MMClsCodebase, MMEngineCodebase]
    assert [type(c) for c in codebases_of(_PlainModel())] == \
        [MMEngineCodebase]
    # A plain torch module has no codebase; the generic one stands in.
    assert codebases_of(nn.Conv2d(1, 1, 1)) == []
    assert isinstance(codebase_of(nn.Conv2d(1, 1, 1)), MMEngineCodebase)
    assert block_types_of(resnet.modules()) == (
        'BasicBlock', 'Bottleneck', 'InvertedResidual')
    assert block_types_of(_PlainModel().modules()) == ()


def test_mmdet_models_get_the_mmdet_adapter():
    from mmdet.models.detectors import SingleStageDetector
    assert MMDetCodebase().mro_depth(SingleStageDetector) == 0
    assert MMClsCodebase().mro_depth(SingleStageDetector) is None


@pytest.mark.parametrize('pipeline, hw, source', [
    ([dict(type='ResizeEdge', scale=256), dict(type='CenterCrop',
                                               crop_size=224),
      dict(type='PackClsInputs')], (224, 224), 'CenterCrop'),
    ([dict(type='mmcls.EfficientNetCenterCrop', crop_size=240)], (240, 240),
     'EfficientNetCenterCrop'),
    ([dict(type='Resize', scale=(96, 64))], (64, 96), 'Resize'),  # (w, h)
    ([dict(type='CenterCrop', crop_size=(48, 32))], (32, 48), 'CenterCrop'),
    ([dict(type='RandomResizedCrop', scale=160)], (160, 160),
     'RandomResizedCrop'),
    ([dict(type='RandomResizedCrop', scale=(40, 50))], (40, 50),  # (h, w)
     'RandomResizedCrop'),
])
def test_pipeline_size_is_the_last_transform_that_fixes_it(
        pipeline, hw, source):
    assert MMClsCodebase().pipeline_hw(pipeline) == (
        hw, f"the test pipeline's {source}")


@pytest.mark.parametrize('pipeline', [
    [dict(type='CenterCrop', crop_size=224), dict(type='ResizeEdge',
                                                  scale=256)],
    [dict(type='Resize', scale=(1333, 800), keep_ratio=True)],
    [dict(type='PackClsInputs')],
])
def test_pipeline_size_that_depends_on_the_image_is_not_used(pipeline):
    assert MMClsCodebase().pipeline_hw(pipeline) is None


def test_shape_order_pipeline_img_size_default():
    deit = _mmcls_model(DEIT, img_size=64)
    adapter = codebase_of(deit)
    assert adapter.input_shape(deit) == ((3, 64, 64),
                                         "the backbone's img_size")
    assert adapter.input_shape(
        deit, [dict(type='CenterCrop', crop_size=32)]) == (
            (3, 32, 32), "the test pipeline's CenterCrop")
    shufflenet = _mmcls_model(SHUFFLENET)
    assert adapter.input_shape(shufflenet) == (
        (3, 224, 224), 'the MMClsCodebase default for classification models')
    # Swin keeps its img_size in the patch embedding.
    swin = _mmcls_model(SWIN, img_size=96)
    assert adapter.input_shape(swin) == ((3, 96, 96),
                                         "the backbone's img_size")
    # The generic adapter guesses no size.
    assert MMEngineCodebase().input_shape(_PlainModel()) == (
        None, 'nothing in the config or model fixes it')


def test_mmcls_deit_traces_as_written():
    """mmcls's own DeiT-tiny config, 224 x 224, no input_shape."""
    deit = _mmcls_model(DEIT)
    gm = CustomTracer().trace_mode(deit, 'tensor')
    assert _example_shape(gm) == (2, 3, 224, 224)
    x = torch.randn(3, 3, 224, 224)
    with torch.no_grad():
        torch.testing.assert_close(gm(x), deit(x, mode='tensor'), atol=0,
                                   rtol=0)


def test_tools_hand_the_test_pipeline_to_the_model():
    cfg = get_config(SHUFFLENET)
    cfg.model = dict(type='mmrazor_quant.MMArchitectureQuant',
                     architecture=cfg.model, quantizer=dict())
    add_test_pipeline(cfg)
    assert cfg.model['test_pipeline'][-2] == dict(type='CenterCrop',
                                                  crop_size=224)
    # An explicit input_shape wins: no pipeline is added.
    cfg = Config(dict(model=dict(architecture={}, quantizer={},
                                 input_shape=(3, 8, 8)),
                      test_pipeline=[dict(type='CenterCrop', crop_size=4)]))
    assert 'test_pipeline' not in add_test_pipeline(cfg).model


def test_tracer_enters_only_the_rewrites_of_the_traced_model(monkeypatch):
    entered = []

    @contextlib.contextmanager
    def spy(self):
        entered.append(type(self).__name__)
        yield

    monkeypatch.setattr(MMDetCodebase, 'tracer_rewrites', spy)
    monkeypatch.setattr(MMClsCodebase, 'tracer_rewrites', spy)
    resnet = _mmcls_model('mmcls::resnet/resnet18_8xb32_in1k.py')
    CustomTracer().trace_mode(resnet, 'tensor')
    assert entered == ['MMClsCodebase']


def test_mmdet_adapter_skips_what_detection_configs_used_to_name():
    """The digit-canvas detection PTQ configs name no tracer skips: the
    adapter's defaults hold every head method they named."""
    import mmdet.models  # noqa: F401  (registers the head classes)

    from ...skips import DET_HEAD_SKIPS
    skipped = set(MMDetCodebase().skipped_methods)
    for detector in ('RetinaNet', 'YOLOX'):
        assert set(DET_HEAD_SKIPS[detector]) <= skipped, detector
