"""Bad input to the tools is a clear error, and leaves no work behind.

A missing ``_base_`` file and an unknown loop argument are caught before
the Runner creates the work dir; a checkpoint of another model is refused
instead of loading half of it (mmengine only warns) and quantizing a partly
random network.
"""
import os.path as osp
import runpy
import sys

import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.models.algorithms.mm_architecture import (
    _load_float_checkpoint,
)
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils.config_checks import check_loop_cfgs, load_config
from ..toys import tiny_mbv2, tiny_resnet

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
PTQ_CONFIG = osp.join(REPO, 'configs', 'quantization', 'ptq',
                      'ptq_native_resnet18_mnist.py')
FP32_CONFIG = osp.join(REPO, 'configs', 'fp32', 'resnet18_mnist.py')
TINY_RESNET = tiny_resnet()
TINY_MBV2 = tiny_mbv2()


def _run_tool(name, argv, monkeypatch):
    monkeypatch.setattr(sys, 'argv', [f'{name}.py'] + argv)
    runpy.run_path(osp.join(REPO, 'tools', f'{name}.py'))['main']()


def _write(path, text):
    with open(path, 'w') as f:
        f.write(text)
    return str(path)


def test_missing_base_names_both_files(tmp_path, monkeypatch):
    cfg = _write(tmp_path / 'bad.py', "_base_ = ['./no_such_base.py']\n")
    work_dir = tmp_path / 'work'
    with pytest.raises(FileNotFoundError) as err:
        _run_tool('ptq', [cfg, '--work-dir', str(work_dir)], monkeypatch)
    assert 'bad.py' in str(err.value)
    assert 'no_such_base.py' in str(err.value)
    assert '`_base_`' in str(err.value)
    assert not work_dir.exists()


def test_missing_config_file(tmp_path):
    with pytest.raises(FileNotFoundError, match='nope.py.*does not exist'):
        load_config(str(tmp_path / 'nope.py'))


def test_unknown_loop_argument_before_the_work_dir(tmp_path, monkeypatch):
    work_dir = tmp_path / 'work'
    with pytest.raises(ValueError) as err:
        _run_tool('ptq', [
            PTQ_CONFIG, '--work-dir', str(work_dir), '--cfg-options',
            'test_cfg.calibrate_stepz=4'
        ], monkeypatch)
    message = str(err.value)
    assert message.startswith('test_cfg: PTQLoop got unknown argument(s) '
                              "['calibrate_stepz']")
    assert "'calibrate_steps'" in message  # lists what it accepts
    assert not work_dir.exists()


def test_unregistered_loop_type():
    cfg = Config(dict(train_cfg=dict(type='NoSuchLoop', max_epochs=1)))
    with pytest.raises(KeyError, match="train_cfg.type='NoSuchLoop'"):
        check_loop_cfgs(cfg)


def _float_checkpoint(arch, path):
    torch.manual_seed(0)
    torch.save({'state_dict': MODELS.build(arch).state_dict()}, path)
    return str(path)


def _quant_model(float_checkpoint):
    cfg = load_config(PTQ_CONFIG)
    cfg.model.architecture = TINY_RESNET
    cfg.model.float_checkpoint = float_checkpoint
    return MODELS.build(cfg.model)


def test_float_checkpoint_of_another_model(tmp_path):
    register_all_modules(init_default_scope=False)
    other = _float_checkpoint(TINY_MBV2, tmp_path / 'mbv2.pth')
    with pytest.raises(ValueError) as err:
        _quant_model(other)
    message = str(err.value)
    assert message.startswith(
        f'model.float_checkpoint {other!r} does not fit ImageClassifier')
    assert 'missing keys' in message and 'unexpected keys' in message
    assert "'head.fc.weight (10, 1280) vs (10, 64)'" in message


def test_float_checkpoint_of_the_same_model_loads_exactly(tmp_path):
    register_all_modules(init_default_scope=False)
    path = _float_checkpoint(TINY_RESNET, tmp_path / 'resnet.pth')
    saved = torch.load(path)['state_dict']
    torch.manual_seed(1)
    architecture = MODELS.build(TINY_RESNET)
    _load_float_checkpoint(architecture, path)
    loaded = architecture.state_dict()
    assert loaded.keys() == saved.keys()
    for key, value in saved.items():
        assert torch.equal(loaded[key], value), key


def test_float_checkpoint_with_a_missing_tensor(tmp_path):
    register_all_modules(init_default_scope=False)
    torch.manual_seed(0)
    state_dict = MODELS.build(TINY_RESNET).state_dict()
    del state_dict['head.fc.bias']
    path = str(tmp_path / 'cut.pth')
    torch.save(state_dict, path)  # a bare state dict is accepted too
    with pytest.raises(ValueError,
                       match=r"1 missing keys \('head.fc.bias'\)"):
        _quant_model(path)


def test_resume_from_another_model(tmp_path, monkeypatch):
    other = _float_checkpoint(TINY_MBV2, tmp_path / 'mbv2.pth')
    work_dir = tmp_path / 'work'
    with pytest.raises(ValueError, match=r"--resume checkpoint .*mbv2.pth' "
                       r'does not fit ImageClassifier'):
        _run_tool('train', [
            FP32_CONFIG, '--work-dir', str(work_dir), '--resume', other
        ], monkeypatch)
    # Refused before training: no checkpoint was written.
    assert not list(work_dir.glob('*.pth'))


def _truncated(tmp_path, arch=TINY_RESNET):
    """A float checkpoint cut in half, as an interrupted copy leaves it."""
    good = _float_checkpoint(arch, tmp_path / 'good.pth')
    with open(good, 'rb') as f:
        data = f.read()
    return _write_bytes(tmp_path / 'cut.pth', data[:len(data) // 2])


def _write_bytes(path, data: bytes) -> str:
    with open(path, 'wb') as f:
        f.write(data)
    return str(path)


@pytest.mark.parametrize('damage', ['truncated', 'empty', 'random'])
def test_corrupt_load_from_named_before_the_work_dir(damage, tmp_path,
                                                     monkeypatch):
    """torch says ``OSError: Invalid argument``, ``EOFError`` or
    ``IndexError: pop from empty list``; we name the file."""
    path = dict(
        truncated=lambda: _truncated(tmp_path),
        empty=lambda: _write_bytes(tmp_path / 'cut.pth', b''),
        random=lambda: _write_bytes(tmp_path / 'cut.pth', bytes(
            range(256)) * 8))[damage]()
    work_dir = tmp_path / 'work'
    with pytest.raises(ValueError) as err:
        _run_tool('test', [FP32_CONFIG, path, '--work-dir', str(work_dir)],
                  monkeypatch)
    message = str(err.value)
    assert message.startswith(f'load_from {path!r} is corrupt or truncated')
    assert 'weights_only' not in message
    assert not work_dir.exists()


def test_truncated_float_checkpoint(tmp_path):
    register_all_modules(init_default_scope=False)
    path = _truncated(tmp_path)
    with pytest.raises(ValueError, match=r"^model.float_checkpoint "
                       r"'.*cut.pth' is corrupt or truncated"):
        _quant_model(path)


class _Payload:
    """Not a weight: torch's weights-only unpickler refuses it."""


def test_checkpoint_with_python_objects_is_refused(tmp_path):
    from mmrazor_quant.utils import read_checkpoint
    path = str(tmp_path / 'objects.pth')
    torch.save({'state_dict': {}, 'extra': _Payload()}, path)
    with pytest.raises(ValueError) as err:
        read_checkpoint(path, '--checkpoint')
    message = str(err.value)
    assert message.startswith(f'--checkpoint {path!r} holds Python objects '
                              'other than weights, which are not loaded')
    assert '_Payload' in message
    assert 'weights_only=False' not in message


def _calibrated(a_bits: int):
    """A tiny ResNet with asymmetric unsigned activations of ``a_bits``,
    calibrated on normal inputs (the input's zero-point is mid-grid)."""
    from mmrazor_quant.models.fake_quants import disable_observer
    register_all_modules(init_default_scope=False)
    torch.manual_seed(0)
    arch = MODELS.build(TINY_RESNET)
    w_qscheme = dict(qdtype='qint8', bit=8, is_symmetry=True)
    model = MODELS.build(dict(
        type='mmrazor_quant.MMArchitectureQuant', architecture=arch,
        forward_modes=('tensor', ),
        quantizer=dict(
            type='mmrazor_quant.AcademicQuantizer',
            global_qconfig=dict(
                w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
                a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                w_qscheme=w_qscheme,
                a_qscheme=dict(qdtype='quint8', bit=a_bits,
                               is_symmetry=False)))))
    model.eval()
    with torch.no_grad():
        model(torch.randn(8, 3, 28, 28), mode='tensor')
    disable_observer(model)
    return model


def test_checkpoint_of_another_bit_width_is_refused():
    """A W8A8 checkpoint's activation zero-points (mid-grid, ~128) do not
    fit a 4-bit grid [0, 15]: refused, naming the tensor."""
    state = _calibrated(8).state_dict()
    four_bit = _calibrated(4)
    with pytest.raises(ValueError, match=r"zero_point: the checkpoint's "
                       r'zero-points span \[\d+, \d+\], outside this fake '
                       r"quant's grid \[0, 15\]: the checkpoint was "
                       'quantized for another backend or bit-width'):
        four_bit.load_state_dict(state)
    # and the same config loads its own checkpoint
    fresh = _calibrated(8)
    fresh.load_state_dict(state)
    assert all(torch.equal(fresh.state_dict()[k], v)
               for k, v in state.items())


def test_work_dir_under_a_file(tmp_path, monkeypatch):
    blocker = _write(tmp_path / 'results.txt', 'not a directory\n')
    work_dir = osp.join(blocker, 'run')
    with pytest.raises(ValueError) as err:
        _run_tool('test', [FP32_CONFIG, 'unused.pth', '--work-dir',
                           work_dir], monkeypatch)
    assert str(err.value) == (f'--work-dir {work_dir!r} is not writable: '
                              f'{blocker!r} is a file, not a directory')


def test_work_dir_without_write_permission(tmp_path, monkeypatch):
    from mmrazor_quant.apis.runner_cli import check_work_dir_writable
    locked = tmp_path / 'locked'
    locked.mkdir()
    locked.chmod(0o500)
    # root writes anywhere: ask os.access what a normal user would get
    monkeypatch.setattr('os.access', lambda path, mode: path != str(locked))
    with pytest.raises(ValueError, match=r"^--work-dir '.*locked/run' is "
                       r"not writable: no write permission on '.*locked'$"):
        check_work_dir_writable(str(locked / 'run'))
    check_work_dir_writable(str(tmp_path / 'fresh' / 'run'))  # creatable
    assert not (tmp_path / 'fresh').exists()  # and not created by the check


def test_empty_image_folder(tmp_path):
    """An ImageNet-layout data folder with no image: mmcls's message names
    the folder and the extensions it looks for."""
    from mmcls.datasets import CustomDataset
    (tmp_path / 'train' / 'class_a').mkdir(parents=True)
    with pytest.raises(RuntimeError, match=r"Found 0 files in subfolders "
                       r"of: \{'img_path': '.*train/?'\}. Supported "
                       r'extensions are: .*\.jpg'):
        CustomDataset(data_root=str(tmp_path / 'train'), pipeline=[])


@pytest.mark.parametrize('work_dir_exists', [False, True])
def test_model_config_failing_in_the_runner_leaves_no_log_dir(
        work_dir_exists, tmp_path, monkeypatch):
    """The quantizer validates when the Runner builds the model, after the
    Runner made ``work_dir/<timestamp>/``: that dir goes again (and the
    work dir, if the run created it); older runs stay."""
    work_dir = tmp_path / 'work'
    if work_dir_exists:
        (work_dir / '20240101_000000').mkdir(parents=True)
    with pytest.raises(ValueError, match=r'TensorRTQuantizer cannot execute '
                       r'this qconfig:\n  global_qconfig.w_qscheme.bit must '
                       r'be one of \(8,\)'):
        _run_tool('ptq', [
            osp.join(REPO, 'configs', 'quantization', 'ptq',
                     'ptq_tensorrt_resnet18_mnist.py'),
            '--work-dir', str(work_dir), '--cfg-options',
            'model.quantizer.global_qconfig.w_qscheme.bit=4',
            # no float checkpoint on a fresh clone (the demo writes it)
            'model.float_checkpoint=None'
        ], monkeypatch)
    if work_dir_exists:
        assert sorted(p.name for p in work_dir.iterdir()) == [
            '20240101_000000']
    else:
        assert not work_dir.exists()
