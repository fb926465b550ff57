"""The entry points end to end: tools/quantize_model.py (one command) and
tools/ptq.py with a model-file config (slow: each starts a process)."""
import os
import os.path as osp
import re
import subprocess
import sys

import onnx
import pytest

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
pytestmark = pytest.mark.slow


def _run(args, cwd=ROOT):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable] + args, cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_quantize_model_one_command(toy_onnx, calib_dir, tmp_path):
    out = str(tmp_path / 'toy_int8.onnx')
    run = _run(['tools/quantize_model.py', toy_onnx, '--calib', calib_dir,
                '--backend', 'openvino', '--out', out,
                '--float-nodes', '/conv2/Conv'])
    assert run.returncode == 0, run.stderr[-3000:]
    sqnr = {rt: float(db) for rt, db in re.findall(
        r'parity in (\w+): ([\d.]+|inf) dB', run.stdout)}
    assert set(sqnr) == {'onnxruntime', 'openvino'}
    assert min(sqnr.values()) >= 35
    assert re.search(r'/conv2/Conv\s+Conv\s+kept float by the config',
                     run.stdout)
    graph = onnx.load(out).graph
    assert [i.name for i in graph.input] == ['image']


def test_quantize_model_bad_file_writes_nothing(calib_dir, tmp_path):
    bad = tmp_path / 'cut.onnx'
    bad.write_bytes(b'\x08\x07\x12')
    out = tmp_path / 'out' / 'x.onnx'
    run = _run(['tools/quantize_model.py', str(bad), '--calib', calib_dir,
                '--out', str(out)])
    assert run.returncode != 0
    assert 'cut.onnx' in run.stderr and not osp.exists(out.parent)


def test_ptq_tool_with_an_onnx_file_config(toy_onnx, calib_dir, tmp_path):
    work = str(tmp_path / 'work')
    run = _run([
        'tools/ptq.py',
        'configs/quantization/ptq/onnx/ptq_openvino_onnx_file.py',
        '--work-dir', work, '--export', '--cfg-options',
        f'model.architecture.path={toy_onnx}',
        f'test_cfg.calibrate_dataloader.dataset.data_root={calib_dir}',
        f'test_dataloader.dataset.data_root={calib_dir}',
        f'test_evaluator.path={toy_onnx}'])
    log = run.stdout + run.stderr
    assert run.returncode == 0, log[-3000:]
    sqnr = float(re.search(r'float_ref/sqnr_db: ([\d.]+)', log).group(1))
    assert sqnr >= 30  # the quantized model against the float file
    parity = float(re.search(r'output SQNR\s*: ([\d.]+) dB', log).group(1))
    assert parity >= 35
    exported = [f for f in os.listdir(work) if f.endswith('.onnx')]
    graph = onnx.load(osp.join(work, exported[0])).graph
    assert [o.name for o in graph.output] == ['logits']
