"""tools/export.py's output paths, the OpenMMLab way: ``--work-dir`` (file
named from the deploy_cfg, or the config and backend), ``--out FILE``, a
directory as ``--out`` taken as a work dir; temporary files only beside the
target, and nothing left that looks like a result after a failure."""
import os

import pytest
import torch

from mmrazor_quant.deploy import DeployConfig, export_model
from mmrazor_quant.deploy.atomic import atomic_outputs
from mmrazor_quant.deploy.config_export import (
    ExportSettings,
    resolve_output_path,
)
from mmrazor_quant.registry import MODELS, register_all_modules
from ..toys import openvino_w8a8, tiny_resnet

CONFIG = 'configs/quantization/ptq/ptq_openvino_resnet18_mnist.py'
CKPT = 'work_dirs/ptq/model_ptq.pth'
PLAIN = ExportSettings(backend='openvino')
DEPLOY = ExportSettings.resolve(DeployConfig.from_dict(dict(
    onnx_config=dict(save_file='end2end.onnx', opset_version=13),
    backend_config=dict(type='tensorrt'))))


@pytest.mark.parametrize('settings,kwargs,expected', [
    (PLAIN, dict(work_dir='out'),
     'out/ptq_openvino_resnet18_mnist_openvino.onnx'),
    (DEPLOY, dict(work_dir='out'), 'out/end2end.onnx'),
    (PLAIN, dict(out='a/b.onnx'), 'a/b.onnx'),
    (PLAIN, dict(), 'work_dirs/ptq/model_ptq_openvino.onnx'),
    (DEPLOY, dict(), 'work_dirs/ptq/end2end.onnx'),
    (PLAIN, dict(out='some_dir/'),
     'some_dir/ptq_openvino_resnet18_mnist_openvino.onnx'),
])
def test_output_path(settings, kwargs, expected):
    assert resolve_output_path(settings, CONFIG, CKPT, **kwargs) == expected


def test_existing_directory_as_out_is_a_work_dir(tmp_path):
    assert resolve_output_path(DEPLOY, CONFIG, CKPT, out=str(tmp_path)) == \
        str(tmp_path / 'end2end.onnx')


def test_out_must_be_onnx_and_not_with_work_dir():
    with pytest.raises(ValueError, match=r"--out 'model.bin' must name an "
                       r'.onnx file'):
        resolve_output_path(PLAIN, CONFIG, CKPT, out='model.bin')
    with pytest.raises(ValueError, match='give --out FILE or --work-dir '
                       'DIR, not both'):
        resolve_output_path(PLAIN, CONFIG, CKPT, out='a.onnx', work_dir='d')


def test_command_line_overrides_the_deploy_cfg():
    settings = ExportSettings.resolve(
        DeployConfig.from_dict(dict(
            onnx_config=dict(opset_version=13, output_names=['logits']),
            backend_config=dict(type='tensorrt'))),
        backend='openvino', opset=17, input_hw=(64, 48))
    assert (settings.backend, settings.opset, settings.input_hw,
            settings.output_names) == ('openvino', 17, (64, 48), ['logits'])
    with pytest.raises(ValueError, match='no backend to export for: the '
                       'config has no model.deploy_cfg; pass --backend'):
        ExportSettings.resolve(None)


def test_atomic_outputs_refuse_a_directory_and_write_nothing(tmp_path):
    target = tmp_path / 'dir'
    target.mkdir()
    for path in (str(target), str(target) + '/'):
        with pytest.raises(IsADirectoryError, match='is a directory; give '
                           'the file to write'):
            with atomic_outputs([path]):
                pass
    # Nothing in the directory, nor in its parent (the old '/.tmp...').
    assert os.listdir(target) == []
    assert sorted(os.listdir(tmp_path)) == ['dir']


def test_temporary_files_live_beside_the_target(tmp_path):
    target = tmp_path / 'sub' / 'model.onnx'
    with atomic_outputs([str(target)]) as (tmp, ):
        assert os.path.dirname(tmp) == str(target.parent)
        with open(tmp, 'w') as f:
            f.write('x')
    assert os.listdir(target.parent) == ['model.onnx']


def test_failed_export_leaves_no_file(tmp_path):
    register_all_modules(init_default_scope=False)
    model = MODELS.build(openvino_w8a8(tiny_resnet())).eval()
    out = tmp_path / 'export' / 'end2end.onnx'
    # Never calibrated: refused before anything is written.
    with pytest.raises(RuntimeError, match='calibrated'):
        export_model(model, torch.rand(2, 3, 32, 32), str(out), 'openvino')
    assert not out.exists()
    assert not out.parent.exists() or os.listdir(out.parent) == []


def test_ptq_export_without_deploy_cfg_fails_before_the_run():
    from mmengine.config import Config

    from mmrazor_quant.deploy.config_export import check_exportable
    cfg = Config(dict(model=dict(type='mmrazor_quant.MMArchitectureQuant')))
    with pytest.raises(ValueError, match=r'--export: the config has no '
                       r'model.deploy_cfg; name the backend'):
        check_exportable(cfg)
    check_exportable(cfg, 'openvino')
    cfg.model.deploy_cfg = dict(backend_config=dict(type='tensorrtt'))
    with pytest.raises(ValueError, match=r"backend_config.type='tensorrtt'"):
        check_exportable(cfg)
