"""The mmcls and mmpretrain model zoo: each family's own config in each
codebase, random weights, small input, wrapped in MMRazor's schema without
``input_shape`` (the tracer takes the shape from the config when the model
needs one): quantize (OpenVINO W8A8), predict, one QAT step, QDQ export and
onnxruntime parity."""
import math
import os

import pytest
from mmengine.config import Config
from mmengine.hub import get_config

from benchmarks.model_zoo import family_config
from mmrazor_quant.analysis.model_check import check_model, w8a8_model_cfg
from mmrazor_quant.utils.data_pipeline import add_test_pipeline
from ..int8_host import int8_weight_bits

FAMILIES = Config.fromfile('configs/model_zoo/mmcls_families.py').families
#: By default ``make test`` runs the families below from mmcls's configs,
#: one per kind of graph the tracer and quantizers must handle (residual
#: CNN, depthwise with Hardswish and SE, Swish with SE, LayerNorm and GELU,
#: attention with a class token, shifted windows);
#: ``MMRAZOR_QUANT_ZOO=all`` runs all 32 (about 4 min on 2 quiet cores),
#: ``MMRAZOR_QUANT_ZOO=mobilevit,shufflenet_v2`` picks some.
MMCLS_DEFAULT = ('resnet50', 'mobilenet_v3', 'efficientnet', 'convnext',
                 'deit', 'swin')
#: mmpretrain's models are mmcls's code renamed: by default its renamed
#: DeiT config runs, all 32 with ``MMRAZOR_QUANT_ZOO_PRETRAIN=all``
#: (passed, docs/model_zoo.md).
PRETRAIN_DEFAULT = ('deit', )


def _selected(name: str, scope: str):
    picked = os.environ.get('MMRAZOR_QUANT_ZOO', '')
    if picked and picked != 'all' and name not in picked.split(','):
        return pytest.param(name, scope, marks=pytest.mark.skip(
            reason=f'MMRAZOR_QUANT_ZOO={picked}'))
    if not picked and scope == 'mmcls' and name not in MMCLS_DEFAULT:
        return pytest.param(name, scope, marks=pytest.mark.skip(
            reason='MMRAZOR_QUANT_ZOO=all runs it'))
    if scope == 'mmpretrain' and name not in PRETRAIN_DEFAULT and \
            os.environ.get('MMRAZOR_QUANT_ZOO_PRETRAIN') != 'all':
        return pytest.param(name, scope, marks=pytest.mark.skip(
            reason='mmpretrain: MMRAZOR_QUANT_ZOO_PRETRAIN=all runs it'))
    return pytest.param(name, scope)


def mmrazor_config(family: dict, weight_bits: int,
                   scope: str = 'mmcls') -> Config:
    """The family's config in ``scope`` as a user at ``family['size']``
    pixels runs it: the family's model overrides, the test pipeline cropping
    to that size, and the model wrapped in MMRazor's schema (no
    ``input_shape``), then completed as the tools complete it."""
    cfg = get_config(family_config(family, scope))
    if family.get('model'):
        cfg.merge_from_dict(dict(model=family['model']))
    size = family['size']
    for transform in cfg.test_dataloader.dataset.pipeline:
        if 'crop_size' in transform:
            transform['crop_size'] = size
        if transform['type'] == 'ResizeEdge':
            transform['scale'] = size
    cfg.model = w8a8_model_cfg(cfg.model, 'openvino',
                               weight_bits=weight_bits)
    return add_test_pipeline(cfg)


@pytest.mark.parametrize('name,scope', [
    _selected(name, scope) for scope in ('mmcls', 'mmpretrain')
    for name in sorted(FAMILIES)
])
def test_family_quantizes_trains_and_deploys(name, scope):
    family = FAMILIES[name]
    cfg = mmrazor_config(family, int8_weight_bits(), scope)
    assert 'input_shape' not in cfg.model
    assert cfg.default_scope == scope
    report = check_model(cfg, 'openvino', family['size'], num_samples=4,
                         calib_batches=1)
    print(name, report.to_dict())
    assert report.passed, report.stages
    assert report.num_fake_quants > 0
    # every fake quant became one Q/DQ pair, none got lost in export
    assert report.num_q == report.num_dq == report.num_fake_quants
    assert report.predict_max_diff < 1e-6  # scores == softmax(logits)
    assert math.isfinite(report.qat_loss) and report.qat_grad_norm > 0
    # Random weights amplify single rounding flips; the runtime must be at
    # least as close as the simulation is to itself under a 1e-5 nudge,
    # within 6 dB, or 30 dB outright.
    assert report.sqnr_db >= min(30., report.nudge_sqnr_db - 6.)
