"""A codebase's modules are imported when a config or model names it.

``register_all_modules()`` imports no codebase and none of our modules built
on one; a classification config imports mmcls (and its adapter and dataset)
and nothing of mmdet, mmseg or mmpose; a codebase that is not there is
reported with the config key that names it and the extra that installs it.
"""
import json
import os
import os.path as osp
import subprocess
import sys
import textwrap

import pytest

from mmrazor_quant.registry import CODEBASES, DATASETS, TRANSFORMS
from mmrazor_quant.utils.codebase_imports import (
    CODEBASE_MODULES,
    LAZY_NAMES,
    CodebaseNotInstalledError,
    codebases_named_by,
)
from mmrazor_quant.utils.config_checks import load_config

ROOT = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
# The codebases, what they bring (mmcv, torchvision) and the runtimes, which
# only an export needs.
CODEBASE_PACKAGES = ('mmcls', 'mmdet', 'mmseg', 'mmpose', 'mmyolo',
                     'mmpretrain', 'mmcv', 'torchvision', 'onnx',
                     'onnxruntime', 'openvino')
OURS = tuple(sorted({m for m, _ in LAZY_NAMES.values()}))


def _imported_after(code: str) -> dict:
    """Run ``code`` in a fresh interpreter; which codebase packages and which
    of our lazily imported modules are in ``sys.modules`` afterwards."""
    probe = code + textwrap.dedent(f'''
        import json, sys
        print(json.dumps(dict(
            packages=sorted({{m.split('.')[0] for m in sys.modules}}
                            & set({CODEBASE_PACKAGES!r})),
            ours=sorted(set(sys.modules) & set({OURS!r})))))
    ''')
    out = subprocess.run([sys.executable, '-c', probe], cwd=ROOT,
                         capture_output=True, text=True, check=True,
                         env={**os.environ, 'PYTHONPATH': ROOT})
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_register_all_modules_imports_no_codebase():
    got = _imported_after(
        'from mmrazor_quant.registry import register_all_modules\n'
        'register_all_modules()')
    assert got == dict(packages=[], ours=[])


def test_a_classification_config_imports_only_mmcls():
    config = 'configs/quantization/ptq/ptq_openvino_resnet18_mnist.py'
    got = _imported_after(
        'from mmrazor_quant.registry import register_all_modules\n'
        'from mmrazor_quant.utils.config_checks import load_config\n'
        'register_all_modules()\n'
        f'load_config({config!r})')
    assert got['packages'] == ['mmcls', 'mmcv']
    assert got['ours'] == ['mmrazor_quant.datasets.mnist5k',
                           'mmrazor_quant.models.codebases.mmcls']


def test_every_name_of_a_lazy_module_is_listed():
    # A dataset added to one of these modules without a LAZY_NAMES entry
    # would be unknown to a config until something else imported it.
    import importlib
    for module in OURS:
        importlib.import_module(module)
    for codebase in CODEBASE_MODULES.values():
        assert codebase.adapter in OURS
        assert set(codebase.modules) <= set(OURS)
    registered = {
        name: cls.__module__
        for registry in (DATASETS, TRANSFORMS, CODEBASES)
        for name, cls in registry.module_dict.items()
        if cls.__module__ in OURS
    }
    assert registered == {n: m for n, (m, _) in LAZY_NAMES.items()}


def test_a_registry_lookup_imports_the_module(monkeypatch):
    name = 'DigitCanvasSegDataset'
    monkeypatch.delitem(DATASETS.module_dict, name, raising=False)
    monkeypatch.delitem(sys.modules, LAZY_NAMES[name][0], raising=False)
    assert DATASETS.get(f'mmrazor_quant.{name}').__name__ == name


def test_config_names_its_codebases():
    cfg = dict(default_scope='mmdet',
               model=dict(type='mmrazor_quant.MMArchitectureQuant',
                          architecture=dict(type='mmpose.TopdownPoseEstimator',
                                            backbone=dict(_scope_='mmcls'))),
               train_dataloader=dict(dataset=dict(
                   type='PoseDigitsDataset',
                   pipeline=[dict(type='mmrazor_quant.GrayToRGB')])),
               custom_imports=dict(
                   imports=['mmrazor_quant.datasets', 'mmseg.models']))
    assert codebases_named_by(cfg) == [
        ('mmdet', 'default_scope', 'mmdet'),
        ('mmpose', 'model.architecture.type', 'mmpose.TopdownPoseEstimator'),
        ('mmcls', 'model.architecture.backbone._scope_', 'mmcls'),
        ('mmpose', 'train_dataloader.dataset.type', 'PoseDigitsDataset'),
        ('mmcv', 'train_dataloader.dataset.pipeline[0].type',
         'mmrazor_quant.GrayToRGB'),
        ('mmseg', 'custom_imports.imports[1]', 'mmseg.models'),
    ]


def test_a_missing_codebase_names_the_key_and_the_extra(
        tmp_path, monkeypatch):
    # mmpose absent: an import of it fails as in an environment without it.
    monkeypatch.setitem(sys.modules, 'mmpose', None)
    config = tmp_path / 'pose.py'
    config.write_text(
        "train_dataloader = dict(dataset=dict("
        "type='mmrazor_quant.PoseDigitsDataset'))\n")
    with pytest.raises(CodebaseNotInstalledError) as err:
        load_config(str(config))
    assert str(err.value) == (
        "config key `train_dataloader.dataset.type` "
        "('mmrazor_quant.PoseDigitsDataset') needs mmpose, which is not "
        "installed: pip install 'mmrazor_quant[mmpose]'")
    monkeypatch.delitem(DATASETS.module_dict, 'PoseDigitsDataset',
                        raising=False)
    with pytest.raises(CodebaseNotInstalledError,
                       match=r"^dataset 'PoseDigitsDataset' needs mmpose, "
                       r"which is not installed: pip install "
                       r"'mmrazor_quant\[mmpose\]'$"):
        DATASETS.get('PoseDigitsDataset')


def test_a_missing_codebase_in_custom_imports_names_the_key(
        tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, 'mmdet', None)
    config = tmp_path / 'det.py'
    config.write_text("custom_imports = dict(imports=['mmdet.models'])\n")
    with pytest.raises(CodebaseNotInstalledError,
                       match=r"^config key `custom_imports.imports\[0\]` "
                       r"\('mmdet.models'\) needs mmdet, which is not "
                       r"installed: pip install 'mmrazor_quant\[mmdet\]'$"):
        load_config(str(config))
