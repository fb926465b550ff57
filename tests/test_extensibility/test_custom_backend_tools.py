"""The toy NPU of examples/custom_backend, a backend written in a user's own
files, used through the tools exactly like a built-in one: its deploy_cfg
drives ``tools/ptq.py --export`` and ``tools/export.py``, with no edit to
the package."""
import json
import os
import os.path as osp
import re
import subprocess
import sys

import numpy as np
import pytest
import torch

from mmrazor_quant.backends import backend_names, get_backend
from .conftest import BACKEND_CONFIG, EXAMPLES, ROOT


def _tool(name, *args):
    env = dict(os.environ,
               PYTHONPATH=os.pathsep.join(
                   [osp.join(EXAMPLES, 'custom_backend'), ROOT]))
    proc = subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools', f'{name}.py'), *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


def _parity(log):
    """(top-1 agreement %, SQNR dB) of the last parity report in a log."""
    agree = re.findall(r'top-1 agreement : ([\d.]+) %', log)
    sqnr = re.findall(r'output SQNR     : ([-\d.inf]+) dB', log)
    assert agree and sqnr, log[-3000:]
    return float(agree[-1]), float(sqnr[-1])


def _scale_rows(path):
    with open(path) as f:
        return json.load(f)


def _checkpoint_scales(path):
    """``{fake quant name: scales}`` of a PTQ checkpoint, named as in the
    scale table (without the ``architecture.`` prefix)."""
    state = torch.load(path, map_location='cpu',
                       weights_only=False)['state_dict']
    return {k[len('architecture.'):-len('.scale')]: v.reshape(-1).numpy()
            for k, v in state.items() if k.endswith('.scale')}


@pytest.mark.slow
def test_toy_npu_through_ptq_export_and_export_tools(tmp_path,
                                                     float_checkpoint):
    work = tmp_path / 'ptq'
    log = _tool('ptq', BACKEND_CONFIG, '--work-dir', str(work), '--export',
                '--num-samples', '64', '--cfg-options',
                f'model.float_checkpoint={float_checkpoint}',
                'test_cfg.calibrate_steps=2',
                'test_dataloader.dataset.indices=128')
    # deploy_cfg.onnx_config.save_file, and the exporter's side file.
    assert (work / 'toy_npu.onnx').is_file()
    table = _scale_rows(work / 'toy_npu.npu_scales.json')
    agreement, sqnr = _parity(log)
    # the runtime of the user's package ran the file
    assert 'parity with the simulation (toy_npu_reference' in log
    # 100 % and 55.5 dB here (AVX-512); float sums in another order on
    # an AVX2 CPU may flip one rounding (one of the 64 digits at most)
    assert agreement >= 100 * 63 / 64 and sqnr >= 40

    # tools/export.py on the saved checkpoint: the same files, the same
    # scales, the same parity.
    ckpt = work / 'model_ptq.pth'
    out = tmp_path / 'export'
    log = _tool('export', BACKEND_CONFIG, str(ckpt), '--work-dir', str(out),
                '--num-samples', '64')
    again = _scale_rows(out / 'toy_npu.npu_scales.json')
    assert again == table
    agreement, sqnr = _parity(log)
    assert agreement >= 100 * 63 / 64 and sqnr >= 40
    # The table holds the checkpoint's scales bit for bit: 21 weights (20
    # convs + fc) and 29 inputs of conv, fc and add.
    scales = _checkpoint_scales(str(ckpt))
    assert sorted(table) == sorted(scales) and len(table) == 50
    for name, row in table.items():
        np.testing.assert_array_equal(np.float32(row['scale']), scales[name])
        assert row['zero_point'] == [0] * len(row['scale'])


def test_toy_npu_is_listed_once_imported():
    import toy_npu  # noqa: F401  (the user's package registers it)
    assert 'toy_npu' in backend_names(deployable=True)
    backend = get_backend('toy_npu')
    assert (backend.quantizer, backend.exporter, backend.runtime) == (
        'ToyNPUQuantizer', 'ToyNPUExporter', 'toy_npu_reference')


def test_unknown_export_backend_names_the_registered_ones(tmp_path):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run(
        [sys.executable, osp.join(ROOT, 'tools', 'ptq.py'), BACKEND_CONFIG,
         '--export', 'npu2', '--work-dir', str(tmp_path / 'w')],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    # Without PYTHONPATH=examples/custom_backend the config's custom_imports
    # fails first: the user sees which package is missing.
    assert proc.returncode != 0
    assert 'toy_npu' in proc.stderr


@pytest.mark.parametrize('name, message', [
    ('npu2', r"--export='npu2' is not a registered backend; expected one of "
             r"\[.*'onnxruntime', 'openvino', .*'tensorrt'"),
    ('academic', r"--export='academic' has no exporter"),
])
def test_check_exportable_names_the_deploy_targets(name, message):
    from mmengine.config import Config

    from mmrazor_quant.deploy.config_export import check_exportable
    with pytest.raises(ValueError, match=message):
        check_exportable(Config(dict(model=dict())), name)
