"""The quantization-state format: saved with every state, migrated from
older formats, newer ones refused; fixtures of every format kept load."""
import collections
import copy
import io

import pytest
import torch

from mmrazor_quant import __version__
from mmrazor_quant.engine.runner.checkpoint_meta import QuantStateMetaHook
from mmrazor_quant.models.algorithms.quant_state_format import (
    QUANT_STATE_FORMAT,
)
from tests import quant_state_fixtures as fixtures

_ACT = 'architecture.act_fake_quants.'


def _renamed(state_dict, renames):
    """A copy of ``state_dict`` with act fake quants renamed and the
    format of its metadata set to 1 (a 0.1.0 checkpoint)."""
    out = collections.OrderedDict()
    for key, value in state_dict.items():
        for new, old in renames.items():
            key = key.replace(f'{_ACT}{new}.', f'{_ACT}{old}.')
        out[key] = value.clone()
    out._metadata = copy.deepcopy(state_dict._metadata)
    out._metadata['']['version'] = 1
    del out._metadata['']['mmrazor_quant']
    return out


def test_every_fixture_of_every_format_loads_with_its_outputs():
    found = fixtures.fixture_paths()
    # A format bump ships the fixtures of the new format.
    assert set(found[f'format{QUANT_STATE_FORMAT}']) == set(fixtures.BACKENDS)
    for folder, paths in found.items():
        for backend, path in paths.items():
            saved = fixtures.read(path)
            model = fixtures.build(saved['meta']['model_cfg'])
            # strict: a renamed, added or dropped fake quant fails here
            # unless a migration maps it.
            model.load_state_dict(saved['state_dict'], strict=True)
            report = model.migration_report
            assert report is None or not report.recalibrate, (folder, backend)
            torch.testing.assert_close(
                fixtures.evaluate(model, saved['inputs']), saved['outputs'],
                rtol=1e-5, atol=1e-5, msg=f'{folder}/{backend}')


def test_format_and_version_are_saved_with_the_state():
    model, _ = fixtures.calibrated('tensorrt')
    buffer = io.BytesIO()
    torch.save(model.state_dict(), buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=True)
    assert loaded._metadata[''] == dict(version=QUANT_STATE_FORMAT,
                                        mmrazor_quant=__version__)
    checkpoint = dict(meta=dict(seed=0))
    QuantStateMetaHook().before_save_checkpoint(None, checkpoint)
    assert checkpoint['meta'] == dict(seed=0, mmrazor_quant=dict(
        version=__version__, quant_state_format=QUANT_STATE_FORMAT))


def test_openvino_checkpoint_before_the_placement_change_migrates():
    """Before 261f42a OpenVINO quantized the output of max pooling and of
    the neck's flatten (view), and each residual branch's output; now the
    inputs of the first two (the same grid: same outputs) and not the
    third (summed in float into the conv)."""
    model, inputs = fixtures.calibrated('openvino')
    expected = fixtures.evaluate(model, inputs)
    state = _renamed(model.state_dict(), {
        'backbone_conv1': 'backbone_maxpool',
        'neck_gap': 'neck_view'
    })
    for key, value in list(state.items()):
        if key.startswith(f'{_ACT}neck_view.'):
            state[key.replace('neck_view', 'backbone_layer1_0_drop_path')] = \
                value.clone()
    fresh = fixtures.build(fixtures.model_cfg('openvino'))
    fresh.load_state_dict(state, strict=True)
    report = fresh.migration_report
    assert (report.from_format, report.to_format) == (1, QUANT_STATE_FORMAT)
    assert report.renamed == {'backbone_maxpool': 'backbone_conv1',
                              'neck_view': 'neck_gap'}
    assert report.unused == ['backbone_layer1_0_drop_path']
    assert report.recalibrate == []
    assert torch.equal(fixtures.evaluate(fresh, inputs), expected)


def test_rknn_checkpoint_without_the_average_pool_fake_quant():
    """Before f380183 RKNN kept the average pool's output on its input's
    grid: that fake quant is reported for recalibration, the rest loads."""
    model, _ = fixtures.calibrated('rknn')
    state = _renamed(model.state_dict(), {})
    for key in [k for k in state if k.startswith(f'{_ACT}neck_gap.')]:
        del state[key]
    fresh = fixtures.build(fixtures.model_cfg('rknn'))
    missing, unexpected = fresh.load_state_dict(state, strict=False)
    assert fresh.migration_report.recalibrate == ['neck_gap']
    assert sorted(missing) == sorted(
        k for k in model.state_dict() if k.startswith(f'{_ACT}neck_gap.'))
    assert unexpected == []
    own = fresh.state_dict()
    assert all(torch.equal(own[k], v) for k, v in state.items())


def test_a_newer_format_is_refused_naming_both():
    model, _ = fixtures.calibrated('openvino')
    state = model.state_dict()
    state._metadata[''].update(version=QUANT_STATE_FORMAT + 1,
                               mmrazor_quant='9.0.0')
    with pytest.raises(
            ValueError,
            match=rf'^the checkpoint holds quantization-state format '
            rf'{QUANT_STATE_FORMAT + 1} \(written by mmrazor_quant 9\.0\.0\), '
            rf'newer than format {QUANT_STATE_FORMAT}, the newest that '
            rf'mmrazor_quant {__version__} reads: upgrade mmrazor_quant$'):
        fixtures.build(fixtures.model_cfg('openvino')).load_state_dict(state)


def test_openvino_scale_shift_fake_quant_of_format_2_is_left_out():
    """Format 2's OpenVINO placement quantized the input of an add or mul
    by a constant; format 3 does not: such a fake quant in a format-2 state
    is reported and not loaded, the rest loads as it was."""
    model, _ = fixtures.calibrated('openvino')
    state = _renamed(model.state_dict(), {})
    state._metadata['']['version'] = 2
    for key, value in list(state.items()):
        if key.startswith(f'{_ACT}neck_gap.'):
            state[key.replace('neck_gap', 'head_fc_mul')] = value.clone()
    fresh = fixtures.build(fixtures.model_cfg('openvino'))
    fresh.load_state_dict(state, strict=True)
    report = fresh.migration_report
    assert (report.from_format, report.to_format) == (2, QUANT_STATE_FORMAT)
    assert report.unused == ['head_fc_mul'] and report.renamed == {}
    assert report.recalibrate == []
    own = fresh.state_dict()
    assert all(torch.equal(own[k], v) for k, v in state.items()
               if 'head_fc_mul' not in k)
