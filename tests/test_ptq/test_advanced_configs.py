"""The low-bit PTQ configs cover the benchmark grid and say what their
names say; the benchmark's command line rejects bad input."""
import os.path as osp

import pytest
from mmengine.config import Config

from benchmarks.ptq_lowbit import (
    BITS,
    CONFIG_DIR,
    METHODS,
    MODELS_,
    checkpoints,
    parse_args,
    ptq_config,
)

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
RECONSTRUCTION = dict(iters=200, num_samples=1024, batch_size=32, lr=1e-2,
                      seed=0)
PASSES = {
    'naive': [],
    'adaround': [dict(type='adaround', **RECONSTRUCTION)],
    'brecq': [dict(type='brecq', **RECONSTRUCTION)],
    'qdrop': [dict(type='qdrop', drop_prob=0.5, **RECONSTRUCTION)],
}
GRID = [(m, b, k) for m in MODELS_ for b in BITS for k in METHODS]


def _load(model: str, bits: str, method: str) -> Config:
    name = f'{method}_{bits.lower()}_{model}_mnist.py'
    return Config.fromfile(osp.join(REPO, CONFIG_DIR, name))


@pytest.mark.parametrize('model,bits,method', GRID)
def test_config_of_each_cell(model, bits, method):
    cfg = _load(model, bits, method)
    qconfig = cfg.model.quantizer.global_qconfig
    assert (qconfig.w_qscheme.bit, qconfig.a_qscheme.bit) == (
        int(bits[1]), int(bits[3]))
    assert qconfig.a_observer.type == 'mmrazor_quant.HistogramMSEObserver'
    assert cfg.model.quantizer.type == 'mmrazor_quant.AcademicQuantizer'
    assert cfg.model.quantizer.first_last_bit == 8
    assert cfg.test_cfg.type == 'mmrazor_quant.PTQLoop'
    assert cfg.test_cfg.calibrate_steps * \
        cfg.test_cfg.calibrate_dataloader.batch_size == 1024
    assert cfg.test_cfg.ptq_passes == PASSES[method]


def test_benchmark_overrides_only_reconstruction(tmp_path):
    args = parse_args(['--iters', '7', '--num-samples', '64',
                       '--work-dir', str(tmp_path)])
    cfg = ptq_config('resnet18', 'W2A4', 'qdrop', 'x.pth', args)
    assert cfg.model.float_checkpoint == 'x.pth'
    assert cfg.test_cfg.ptq_passes == [
        dict(RECONSTRUCTION, type='qdrop', drop_prob=0.5, iters=7,
             num_samples=64)
    ]
    assert cfg.work_dir == osp.join(str(tmp_path),
                                    'qdrop_w2a4_resnet18_mnist')
    args = parse_args(['--seed', '3', '--work-dir', str(tmp_path)])
    cfg = ptq_config('mobilenetv2', 'W4A4', 'adaround', 'x.pth', args)
    assert cfg.randomness.seed == 3
    assert cfg.test_cfg.ptq_passes == [
        dict(RECONSTRUCTION, type='adaround', seed=3)]
    assert cfg.work_dir.endswith('adaround_w4a4_mobilenetv2_mnist_seed3')
    naive = ptq_config('mobilenetv2', 'W4A4', 'naive', 'x.pth', args)
    assert naive.test_cfg.ptq_passes == [] and naive.randomness.seed == 3


def test_benchmark_checkpoint_errors(tmp_path):
    ckpt = tmp_path / 'float.pth'
    ckpt.write_bytes(b'')
    assert checkpoints([f'resnet18={ckpt}'], ['resnet18']) == {
        'resnet18': str(ckpt)}
    with pytest.raises(ValueError, match=r'--checkpoint takes MODEL=PATH'):
        checkpoints(['resnet34=x.pth'], ['resnet18'])
    with pytest.raises(ValueError, match=r"got 'x.pth'"):
        checkpoints(['x.pth'], ['resnet18'])
    with pytest.raises(FileNotFoundError, match='fp32 checkpoint of '
                       'resnet18 not found: nope.pth'):
        checkpoints(['resnet18=nope.pth'], ['resnet18'])
