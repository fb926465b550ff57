"""The mmseg, mmpose, mmyolo and mmdet model zoos: each family's config as
the codebase ships it (only SyncBN -> BN and pretrained weights removed),
random weights with BN statistics drawn as training leaves them, every
mode traced with MMRazor's OpenVINO W8A8 scheme and the adapter's
rewrites (no hand-written skips), calibrated, predict and one training
step on the adapter's data samples, exported, and the export run in
OpenVINO and onnxruntime against the simulation.

By default one or two families per codebase run (``DEFAULT``, chosen to
cover each adapter's rewrites at the lowest cost);
``MMRAZOR_QUANT_ZOO_CODEBASES=all`` runs every family of
``configs/model_zoo/<codebase>_families.py``, and
``MMRAZOR_QUANT_ZOO_CODEBASES=mmseg:unet,mmpose:hrnet`` picks some
(docs/model_zoo.md, docs/testing.md).
"""
import math
import os
import re

import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.analysis.zoo_check import check_zoo_config
from ..int8_host import int8_weight_bits

CODEBASES = ('mmpose', 'mmseg', 'mmyolo', 'mmdet')
DEFAULT = {
    'mmpose': ('mobilenetv2', ),  # flip test outside the graph
    'mmseg': ('stdc', ),  # a loss-only auxiliary head, own loss_by_feat
    'mmyolo': ('yolov5', ),  # the packed-target loss of mmyolo's heads
    'mmdet': ('ssdlite', ),  # mmdet's anchor head, depthwise convs
}
#: Lowest SQNR a family's export may have in a runtime, unless its entry
#: says otherwise with the op that departs (docs/model_zoo.md).
MIN_SQNR_DB = 30.


def _families(codebase: str) -> dict:
    path = f'configs/model_zoo/{codebase}_families.py'
    return Config.fromfile(path).families if os.path.exists(path) else {}


def _params():
    picked = os.environ.get('MMRAZOR_QUANT_ZOO_CODEBASES', '')
    for codebase in CODEBASES:
        for name in sorted(_families(codebase)):
            chosen = (picked == 'all' or f'{codebase}:{name}'
                      in picked.split(',')
                      or (not picked and name in DEFAULT[codebase]))
            marks = () if chosen else pytest.mark.skip(
                reason='MMRAZOR_QUANT_ZOO_CODEBASES=all runs it')
            yield pytest.param(codebase, name, marks=marks,
                               id=f'{codebase}-{name}')


@pytest.mark.parametrize('codebase,name', list(_params()))
def test_family_traces_trains_and_deploys(codebase, name):
    pytest.importorskip(codebase)
    family = _families(codebase)[name]
    report = check_zoo_config(family['config'], tuple(family['hw']),
                              weight_bits=int8_weight_bits())
    print(name, report.to_dict())
    if 'refused' in family:  # the adapter's error names module and method
        assert report.failed_stage == 'quantize', report.stages
        assert re.search(r'^TraceError: .*' + family['refused'],
                         report.stages['quantize']), report.stages
        return
    assert report.passed, (report.failed_stage, report.stages)
    assert report.num_fake_quants > 0
    # every activation fake quant of the tensor graph became a Q/DQ pair
    assert report.num_q == report.num_dq > 0
    assert math.isfinite(report.qat_loss) and report.qat_grad_norm > 0
    floor = family.get('min_sqnr_db', MIN_SQNR_DB)
    for runtime in ('openvino', 'onnxruntime'):
        assert report.sqnr_db[runtime] >= floor, report.parity[runtime]


def test_mmseg_dummy_edge_map_marks_stripe_borders():
    """PIDNet's boundary loss reads ``gt_edge_map``: the pixels within one
    pixel of a stripe border of ``gt_sem_seg``, grown by mmseg's default
    edge width 3."""
    pytest.importorskip('mmseg')
    from mmrazor_quant.models.codebases.mmseg import MMSegCodebase
    samples = MMSegCodebase().dummy_data_samples(
        torch.zeros(1, 3, 4, 8), torch.zeros(1, 2, 4, 8))
    label = samples[0].gt_sem_seg.data
    edge = samples[0].gt_edge_map.data
    assert label[0, 0].tolist() == [0, 0, 0, 0, 1, 1, 1, 1]
    # the border between columns 3 and 4 marks both, then grows by one
    assert edge[0].tolist() == [[0, 0, 1, 1, 1, 1, 0, 0]] * 4
    assert edge.dtype == torch.uint8


@pytest.mark.slow
def test_loss_needing_ground_truth_the_samples_lack_names_the_head():
    """PIDNet's boundary loss reads ``gt_edge_map``; samples without it (a
    pipeline without ``GenerateEdge``) stop the training step with an error
    naming the config key of the head whose loss reads it."""
    pytest.importorskip('mmseg')
    from mmrazor_quant.analysis import zoo_check
    from mmrazor_quant.analysis.model_check import w8a8_model_cfg
    from mmrazor_quant.registry import MODELS
    family = _families('mmseg')['pidnet']
    cfg = zoo_check.zoo_config(family['config'])
    architecture = zoo_check._build_architecture(cfg, 0)
    model_cfg = w8a8_model_cfg(architecture, 'openvino')
    model_cfg['input_shape'] = (3, *family['hw'])
    qmodel = MODELS.build(model_cfg)
    x = torch.randn(2, 3, *family['hw'])
    outputs = zoo_check._calibrate(qmodel, [x])
    samples = zoo_check._samples(qmodel, x, outputs, cfg)
    for sample in samples:
        del sample.gt_edge_map
    with pytest.raises(ValueError, match=r'model\.decode_head \(PIDHead\): '
                       r'its loss reads .*gt_edge_map.* dummy samples do '
                       r'not carry'):
        zoo_check._qat_step(qmodel, x, samples)
