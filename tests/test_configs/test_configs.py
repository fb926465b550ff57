"""Every config under configs/ builds; quantization configs run a step.

ImageNet configs cannot run here (no ImageNet, no network), so their models
are built without ``float_checkpoint`` and run one calibration step and one
training step on random 64x64 images: the quantizer must not assume 224x224
(principle 4 of docs/architecture.md). MNIST configs run the same steps on
random 28x28 digits.
"""
import glob
import os.path as osp

import pytest
import torch
from mmcls.structures import ClsDataSample
from mmengine.config import Config
from mmengine.optim import OptimWrapper
from mmengine.registry import DefaultScope

from mmrazor_quant.engine.runner.calibration import calibrate
from mmrazor_quant.models.codebases import MMClsCodebase
from mmrazor_quant.models.fake_quants.utils import (
    enable_fake_quant,
    enable_observer,
    iter_fake_quants,
)
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils.config_checks import check_loop_cfgs
from ..skips import CLS_HEAD_SKIPS

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(REPO, 'configs')
# Every config file; `_base_` and `deploy_cfgs` directories hold fragments,
# not configs.
CONFIGS = sorted(
    osp.relpath(path, CONFIG_DIR)
    for path in glob.glob(osp.join(CONFIG_DIR, '**', '*.py'), recursive=True)
    if not {'_base_', 'deploy_cfgs'} & set(
        osp.relpath(path, CONFIG_DIR).split(osp.sep)))

QUANT_TYPE = 'mmrazor_quant.MMArchitectureQuant'
QCONFIG_KEYS = {
    'w_observer', 'a_observer', 'w_fake_quant', 'a_fake_quant', 'w_qscheme',
    'a_qscheme'
}
OPENMMLAB_URL = 'https://download.openmmlab.com/mmclassification/v0/'

# What the issue asks for, by file name.
EXPECTED_MNIST = {
    'quantization/ptq/ptq_native_resnet18_mnist.py',
    'quantization/ptq/ptq_openvino_resnet18_mnist.py',
    'quantization/ptq/ptq_tensorrt_resnet18_mnist.py',
    'quantization/ptq/ptq_academic_resnet18_mnist.py',
    'quantization/ptq/ptq_openvino_mobilenetv2_mnist.py',
    'quantization/qat/qat_openvino_resnet18_mnist.py',
    'quantization/qat/lsq/lsq_openvino_resnet18_mnist.py',
    'quantization/qat/lsq/lsq_academic_w4a4_resnet18_mnist.py',
}
EXPECTED_IMAGENET = {
    f'quantization/ptq/ptq_{backend}_{model}_8xb32_in1k_calib32xb32.py'
    for backend in ('openvino', 'tensorrt')
    for model in ('resnet18', 'resnet50', 'mbv2')
} | {
    'quantization/qat/qat_openvino_resnet18_10e_8xb32_in1k.py',
    'quantization/qat/lsq/lsq_openvino_resnet18_8xb32_10e_in1k.py',
}

ISSUE_CONFIGS = sorted(EXPECTED_MNIST | EXPECTED_IMAGENET)
# Configs added for other features (e.g. advanced PTQ) only need to build.
# Data tables read by tests, benchmarks and tools/demo.py (configs/demo/),
# not runnable configs.
TABLES = {
    c for c in CONFIGS if c.startswith('demo' + osp.sep)
    or (c.startswith('model_zoo' + osp.sep) and c.endswith('_families.py'))}
# Configs whose model is a user's file (``--cfg-options``): run end to end
# by tests/test_frontends/test_tools.py on a generated file.
USER_FILE_CONFIGS = {osp.join('quantization', 'ptq', 'onnx',
                              'ptq_openvino_onnx_file.py')}
OTHER_CONFIGS = [
    c for c in CONFIGS
    if c not in EXPECTED_MNIST | EXPECTED_IMAGENET | TABLES
    | USER_FILE_CONFIGS and not c.startswith('fp32')
]

# (signed, symmetric, symmetric range) each backend's configs must use.
BACKEND_SCHEMES = {
    'TensorRTQuantizer': dict(w=('qint8', True, True),
                              a=('qint8', True, True)),
    'OpenVINOQuantizer': dict(w=('qint8', True, True),
                              a=('quint8', True, False)),
    'TorchNativeQuantizer': dict(w=('qint8', True, False),
                                 a=('quint8', False, False)),
}


@pytest.fixture(scope='module', autouse=True)
def registered():
    register_all_modules(init_default_scope=False)


def load(name: str) -> Config:
    """The config, after the loop-argument check the tools run."""
    cfg = Config.fromfile(osp.join(CONFIG_DIR, name))
    check_loop_cfgs(cfg)
    return cfg


def unscoped(pipeline: list) -> list:
    """Transforms without the ``_scope_`` that ``mmcls::`` bases add."""
    return [{k: v for k, v in t.items() if k != '_scope_'} for t in pipeline]


def build_without_checkpoint(cfg: Config) -> torch.nn.Module:
    model_cfg = cfg.model.copy()
    if model_cfg.get('type') == QUANT_TYPE:
        model_cfg['float_checkpoint'] = None
    elif 'data_preprocessor' in cfg:
        # What the Runner does for a float model.
        model_cfg.setdefault('data_preprocessor', cfg.data_preprocessor)
    torch.manual_seed(0)
    # The Runner builds in the config's default scope (``mmdet`` for the
    # float detectors), whatever scope an earlier test left current.
    with DefaultScope.overwrite_default_scope(
            cfg.get('default_scope', 'mmrazor_quant')):
        return MODELS.build(model_cfg)


def random_batch(cfg: Config, batch_size: int, size: int) -> dict:
    """uint8 images (as the pipeline packs them) and labels."""
    channels = len(cfg.model.data_preprocessor.get('mean', [0] * 3)) \
        if cfg.model.get('type') == QUANT_TYPE else len(
            cfg.data_preprocessor.mean)
    num_classes = cfg.model.get('architecture', cfg.model).head.num_classes
    generator = torch.Generator().manual_seed(0)
    images = torch.randint(
        0, 256, (batch_size, channels, size, size),
        dtype=torch.uint8, generator=generator)
    labels = torch.randint(0, num_classes, (batch_size, ),
                           generator=generator)
    return dict(
        inputs=list(images),
        data_samples=[ClsDataSample().set_gt_label(int(i)) for i in labels])


def test_the_issue_configs_exist():
    assert EXPECTED_MNIST | EXPECTED_IMAGENET <= set(CONFIGS)
    assert {'fp32/resnet18_mnist.py', 'fp32/mobilenetv2_mnist.py'} <= set(
        CONFIGS)


@pytest.mark.parametrize('name', ISSUE_CONFIGS)
def test_mmrazor_schema(name):
    cfg = load(name)
    model = cfg.model
    assert model.type == QUANT_TYPE
    assert model.data_preprocessor.type == 'mmcls.ClsDataPreprocessor'
    assert model.architecture.type == 'ImageClassifier'
    quantizer = model.quantizer
    # the head's sample loops are skipped by the mmcls adapter, not listed
    assert quantizer.get('tracer', {}) in (
        {}, dict(type='mmrazor_quant.CustomTracer'))
    assert list(MMClsCodebase.skipped_methods) == CLS_HEAD_SKIPS
    qconfig = quantizer.global_qconfig
    assert set(qconfig) == QCONFIG_KEYS
    assert cfg.model_wrapper_cfg == dict(
        type='mmrazor_quant.MMArchitectureQuantDDP',
        broadcast_buffers=False,
        find_unused_parameters=True)
    for kind in ('w', 'a'):
        assert qconfig[f'{kind}_qscheme']['bit'] == (
            4 if 'w4a4' in name else 8)
    backend = quantizer.type.split('.')[-1]
    for kind, expected in BACKEND_SCHEMES.get(backend, {}).items():
        qscheme = qconfig[f'{kind}_qscheme']
        assert (qscheme['qdtype'], qscheme.get('is_symmetry', False),
                qscheme.get('is_symmetric_range', False)) == expected, kind

    if 'in1k' in name:
        assert model.float_checkpoint.startswith(OPENMMLAB_URL)
    else:
        arch = 'mobilenetv2' if 'mobilenetv2' in name else 'resnet18'
        assert model.float_checkpoint == \
            f'work_dirs/fp32/{arch}_mnist/float.pth'

    if '/ptq/' in name and 'in1k' in name:
        # MMRazor's: the mmdeploy description of the quantizer's backend.
        assert model.deploy_cfg == cfg.deploy_cfg
        assert backend.lower() == \
            f'{model.deploy_cfg.backend_config.type}quantizer'
    if '/ptq/' in name:
        loop = cfg.test_cfg
        assert loop.type == 'mmrazor_quant.PTQLoop'
        assert loop.calibrate_steps == 32
        # Principle 5: calibration data is the training split, seen through
        # the deterministic test pipeline.
        dataset = loop.calibrate_dataloader.dataset
        assert dataset.get('split', dataset.get('ann_file')) in (
            'train', 'meta/train.txt')
        assert unscoped(dataset.pipeline) == unscoped(
            cfg.test_dataloader.dataset.pipeline)
    else:
        loop_type = ('mmrazor_quant.LSQEpochBasedLoop'
                     if '/lsq/' in name else 'mmrazor_quant.QATEpochBasedLoop')
        assert cfg.train_cfg.type == loop_type
        assert cfg.val_cfg.type == 'mmrazor_quant.QATValLoop'
        assert cfg.default_hooks.sync.type == 'SyncBuffersHook'
        # Schedulers end where training ends, so a resumed run steps them.
        for scheduler in cfg.param_scheduler:
            assert scheduler['end'] == cfg.train_cfg.max_epochs


@pytest.mark.parametrize('name', [c for c in CONFIGS if c.startswith('fp32')])
def test_fp32_config_builds_and_runs(name):
    cfg = load(name)
    model = build_without_checkpoint(cfg)
    data = model.data_preprocessor(random_batch(cfg, 2, 28), False)
    assert model(data['inputs'], mode='tensor').shape == (2, 10)


def run_quant_steps(name: str, size: int):
    """Build, calibrate one batch, check every fake quant, one train step."""
    cfg = load(name)
    model = build_without_checkpoint(cfg)
    fake_quants = list(iter_fake_quants(model))
    assert len(fake_quants) > 10
    assert not any(fq.is_initialized for fq in fake_quants)
    batch = random_batch(cfg, 2, size)

    if '/ptq/' in name:
        # PTQLoop's calibration: observers on, fake quants off, one batch.
        assert calibrate(model, [batch], 1, show_progress=False) == 1
        assert all(fq.is_initialized for fq in fake_quants)
    else:
        # QAT: the first training batch initialises (LSQ) or updates the
        # observers with fake quants on, as the QAT loops do.
        enable_observer(model)
        enable_fake_quant(model)

    model.train()
    optimizer = OptimWrapper(torch.optim.SGD(model.parameters(), lr=1e-4))
    losses = model.train_step(batch, optimizer)
    assert set(losses) == {'loss'} and torch.isfinite(losses['loss'])
    assert all(fq.is_initialized for fq in fake_quants)
    scales = [fq.scale for fq in fake_quants]
    assert all(torch.isfinite(s).all() and (s > 0).all() for s in scales)

    model.eval()
    with torch.no_grad():
        data = model.data_preprocessor(batch, False)
        logits = model(data['inputs'], mode='tensor')
    num_classes = cfg.model.architecture.head.num_classes
    assert logits.shape == (2, num_classes)
    assert torch.isfinite(logits).all()
    return model


@pytest.mark.parametrize('name', sorted(EXPECTED_IMAGENET))
def test_imagenet_config_steps_on_random_images(name):
    # 64x64, not 224x224: nothing may depend on the ImageNet input size.
    run_quant_steps(name, 64)


@pytest.mark.parametrize('name', sorted(EXPECTED_MNIST))
def test_mnist_config_steps_on_random_digits(name):
    run_quant_steps(name, 28)


#: Codebase models (mmseg, mmpose, mmyolo, mmdet) take seconds each to
#: build, so they are slow-tier; their OpenVINO PTQ configs build in
#: ``make test``, the other backends' and the QAT configs on the same
#: bases only in ``make test-all`` (``extended``, docs/testing.md).
_CODEBASE_DIRS = ('/segmentation/', '/pose/', '/yolo/', '/detection/')


def _codebase_config_marks(name: str) -> tuple:
    if not any(d in name for d in _CODEBASE_DIRS):
        return ()
    if osp.basename(name).startswith('ptq_openvino'):
        return (pytest.mark.slow, )
    return (pytest.mark.slow, pytest.mark.extended)


@pytest.mark.parametrize('name', [
    pytest.param(c, marks=_codebase_config_marks(c)) for c in OTHER_CONFIGS
])
def test_other_config_builds(name):
    # Configs of other features are exercised by their own tests; here
    # they only have to load and build (tracing included).
    cfg = load(name)
    model = build_without_checkpoint(cfg)
    assert isinstance(model, torch.nn.Module)
