"""MMRazor's ImageNet quantization configs run verbatim, only the scope
renamed (``mmrazor.`` -> ``mmrazor_quant.``), with their ``_base_`` deploy
configs beside them.

The configs below are written here in MMRazor's schema (PTQ ResNet-18/50
and MobileNetV2 for OpenVINO and TensorRT, QAT and LSQ ResNet-18), with
MMRazor's deploy configs (opset 11, ``function_record_to_pop``, ...). They
run through tools/ptq.py, tools/train.py, tools/test.py and tools/export.py
on a small JPEG folder in mmcls's ImageNet layout (MNIST digits at 32x32;
data root, batch size, input size and ``float_checkpoint=None`` come from
``--cfg-options``, as a user without ImageNet would set them).
"""
import os
import os.path as osp
import re
import runpy
import sys

import numpy as np
import onnx
import pytest
import torch
from PIL import Image

from ..int8_host import int8_weight_bits
from ..skips import CLS_HEAD_SKIPS

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
SIZE = 32

# MMRazor's deploy configs (configs/quantization/deploy_cfgs/mmcls/).
DEPLOY_CFGS = {
    'classification_openvino_dynamic-224x224.py': """
deploy_cfg = dict(
    onnx_config=dict(
        type='onnx', export_params=True, keep_initializers_as_inputs=False,
        opset_version=11, save_file='end2end.onnx', input_names=['input'],
        output_names=['output'], input_shape=None, optimize=True,
        dynamic_axes={'input': {0: 'batch', 2: 'height', 3: 'width'},
                      'output': {0: 'batch'}}),
    backend_config=dict(
        type='openvino',
        model_inputs=[dict(opt_shapes=dict(input=[1, 3, 224, 224]))]),
    codebase_config=dict(type='mmcls', task='Classification'),
    function_record_to_pop=[
        'mmcls.models.classifiers.ImageClassifier.forward',
        'mmcls.models.classifiers.BaseClassifier.forward'])
""",
    'classification_tensorrt-int8-explicit_dynamic-224x224.py': """
deploy_cfg = dict(
    onnx_config=dict(
        type='onnx', export_params=True, keep_initializers_as_inputs=False,
        opset_version=11, save_file='end2end.onnx', input_names=['input'],
        output_names=['output'], input_shape=[224, 224], optimize=True,
        dynamic_axes=dict(input=dict({0: 'batch', 2: 'height', 3: 'width'}),
                          output=dict({0: 'batch'}))),
    codebase_config=dict(type='mmcls', task='Classification'),
    backend_config=dict(
        type='tensorrt',
        common_config=dict(fp16_mode=False, max_workspace_size=1073741824,
                           int8_mode=True, explicit_quant_mode=True),
        model_inputs=[dict(input_shapes=dict(input=dict(
            min_shape=[1, 3, 224, 224], opt_shape=[4, 3, 224, 224],
            max_shape=[8, 3, 224, 224])))]),
    function_record_to_pop=[
        'mmcls.models.classifiers.ImageClassifier.forward',
        'mmcls.models.classifiers.BaseClassifier.forward', 'torch.cat'])
""",
}

PREPROCESSOR = """dict(
        type='mmcls.ClsDataPreprocessor',
        num_classes=1000,
        mean=[123.675, 116.28, 103.53],
        std=[58.395, 57.12, 57.375],
        to_rgb=True)"""
TRACER = f"""dict(
            type='mmrazor.CustomTracer',
            skipped_methods={CLS_HEAD_SKIPS!r})"""
MODELS = {
    'resnet18': 'resnet/resnet18_8xb32_in1k.py',
    'resnet50': 'resnet/resnet50_8xb32_in1k.py',
    'mbv2': 'mobilenet_v2/mobilenet-v2_8xb32_in1k.py',
}
A_DTYPE = dict(openvino='quint8', tensorrt='qint8')
DEPLOY = dict(
    openvino='classification_openvino_dynamic-224x224.py',
    tensorrt='classification_tensorrt-int8-explicit_dynamic-224x224.py')


def ptq_config(model: str, backend: str) -> str:
    """MMRazor's configs/quantization/ptq/base/ptq_<backend>_<model>_
    8xb32_in1k_calib32xb32.py, in its schema."""
    return f"""_base_ = [
    'mmcls::{MODELS[model]}',
    '../../deploy_cfgs/mmcls/{DEPLOY[backend]}'
]

val_dataloader = dict(batch_size=32)

test_cfg = dict(
    type='mmrazor.PTQLoop',
    calibrate_dataloader=val_dataloader,
    calibrate_steps=32,
)

global_qconfig = dict(
    w_observer=dict(type='mmrazor.PerChannelMinMaxObserver'),
    a_observer=dict(type='mmrazor.MovingAverageMinMaxObserver'),
    w_fake_quant=dict(type='mmrazor.FakeQuantize'),
    a_fake_quant=dict(type='mmrazor.FakeQuantize'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(
        qdtype='{A_DTYPE[backend]}', bit=8, is_symmetry=True,
        averaging_constant=0.1),
)

float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/{model}.pth'  # noqa: E501

model = dict(
    _delete_=True,
    type='mmrazor.MMArchitectureQuant',
    data_preprocessor={PREPROCESSOR},
    architecture=_base_.model,
    deploy_cfg=_base_.deploy_cfg,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        type='mmrazor.{'OpenVINO' if backend == 'openvino' else 'TensorRT'}Quantizer',
        global_qconfig=global_qconfig,
        tracer={TRACER}))

model_wrapper_cfg = dict(
    type='mmrazor.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)
"""


def qat_config(lsq: bool) -> str:
    """MMRazor's qat/base/qat_openvino_resnet18_10e_8xb32_in1k.py and
    qat/lsq/lsq_openvino_resnet18_8xb32_10e_in1k.py, in its schema."""
    observers = ("LSQPerChannelObserver", "LSQObserver",
                 "LearnableFakeQuantize") if lsq else (
                     "PerChannelMinMaxObserver",
                     "MovingAverageMinMaxObserver", "FakeQuantize")
    loop = ("dict(_delete_=True, type='mmrazor.LSQEpochBasedLoop', "
            "max_epochs=10, val_interval=1, freeze_bn_begin=1)") if lsq \
        else ("dict(_delete_=True, type='mmrazor.QATEpochBasedLoop', "
              "max_epochs=10, val_interval=1)")
    return f"""_base_ = ['mmcls::resnet/resnet18_8xb32_in1k.py']

resnet = _base_.model
float_checkpoint = 'https://download.openmmlab.com/mmclassification/v0/resnet18.pth'  # noqa: E501

global_qconfig = dict(
    w_observer=dict(type='mmrazor.{observers[0]}'),
    a_observer=dict(type='mmrazor.{observers[1]}'),
    w_fake_quant=dict(type='mmrazor.{observers[2]}'),
    a_fake_quant=dict(type='mmrazor.{observers[2]}'),
    w_qscheme=dict(
        qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True),
    a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True),
)

model = dict(
    _delete_=True,
    _scope_='mmrazor',
    type='MMArchitectureQuant',
    data_preprocessor={PREPROCESSOR},
    architecture=resnet,
    float_checkpoint=float_checkpoint,
    quantizer=dict(
        type='mmrazor.OpenVINOQuantizer',
        global_qconfig=global_qconfig,
        tracer={TRACER}))

optim_wrapper = dict(
    optimizer=dict(type='SGD', lr=0.0001, momentum=0.9, weight_decay=0.0001))

param_scheduler = dict(
    _delete_=True, type='ConstantLR', factor=1.0, by_epoch=True)

model_wrapper_cfg = dict(
    type='mmrazor.MMArchitectureQuantDDP',
    broadcast_buffers=False,
    find_unused_parameters=True)

train_cfg = {loop}
val_cfg = dict(_delete_=True, type='mmrazor.QATValLoop')

default_hooks = dict(sync=dict(type='SyncBuffersHook'))
"""


def rescope(text: str) -> str:
    """The one change a user makes: MMRazor's scope becomes ours."""
    return text.replace("'mmrazor.", "'mmrazor_quant.").replace(
        "'mmrazor'", "'mmrazor_quant'")


@pytest.fixture(scope='module')
def config_dir(tmp_path_factory):
    """MMRazor's configs/quantization tree, rescoped."""
    root = tmp_path_factory.mktemp('mmrazor') / 'configs' / 'quantization'
    files = {f'deploy_cfgs/mmcls/{k}': v for k, v in DEPLOY_CFGS.items()}
    for backend in DEPLOY:
        for model in MODELS:
            files[f'ptq/base/ptq_{backend}_{model}_8xb32_in1k_calib32xb32'
                  '.py'] = ptq_config(model, backend)
    files['qat/base/qat_openvino_resnet18_10e_8xb32_in1k.py'] = qat_config(
        False)
    files['qat/lsq/lsq_openvino_resnet18_8xb32_10e_in1k.py'] = qat_config(
        True)
    for name, text in files.items():
        os.makedirs(osp.dirname(root / name), exist_ok=True)
        (root / name).write_text(rescope(text))
    return root


@pytest.fixture(scope='module')
def imagenet_dir(tmp_path_factory):
    """mmcls's ImageNet layout: ``train/<class>/*.JPEG``, ``val/...`` and
    ``meta/{train,val}.txt``; 8 + 4 MNIST digits as 32x32 RGB JPEGs."""
    from mmrazor_quant.datasets.mnist5k import (
        find_mnist5k_file,
        load_mnist5k_arrays,
    )
    images, labels = load_mnist5k_arrays(find_mnist5k_file())
    root = tmp_path_factory.mktemp('imagenet')
    os.makedirs(root / 'meta')
    for split, index in (('train', range(8)), ('val', range(8, 12))):
        lines = []
        for i in index:
            digit = images[i].reshape(28, 28).astype(np.uint8)
            rel = f'n{int(labels[i]):08d}/{split}_{i}.JPEG'
            os.makedirs(root / split / osp.dirname(rel), exist_ok=True)
            Image.fromarray(digit).convert('RGB').resize(
                (SIZE, SIZE)).save(root / split / rel)
            lines.append(f'{rel} {int(labels[i])}\n')
        (root / 'meta' / f'{split}.txt').write_text(''.join(lines))
    return str(root)


def small_run_options(data_root: str, ptq: bool) -> list:
    """--cfg-options for 32x32 images, batches of 2, no download."""
    options = ['model.float_checkpoint=None']
    for loader in ('train_dataloader', 'val_dataloader', 'test_dataloader'):
        options += [f'{loader}.dataset.data_root={data_root}',
                    f'{loader}.batch_size=2', f'{loader}.num_workers=0',
                    f'{loader}.persistent_workers=False']
    options += ['train_dataloader.dataset.pipeline.1.scale=32']
    for loader in ('val_dataloader', 'test_dataloader'):
        options += [f'{loader}.dataset.pipeline.1.scale=36',
                    f'{loader}.dataset.pipeline.2.crop_size=32']
    if ptq:
        options += ['test_cfg.calibrate_steps=1']
    else:
        options += ['train_cfg.max_epochs=1']
    return options


def run_tool(name: str, argv: list, monkeypatch) -> None:
    monkeypatch.setattr(sys, 'argv', [f'{name}.py'] + argv)
    runpy.run_path(osp.join(REPO, 'tools', f'{name}.py'))['main']()


def check_scales(checkpoint: str) -> int:
    state = torch.load(checkpoint, map_location='cpu',
                       weights_only=False)['state_dict']
    scales = [v for k, v in state.items() if k.endswith('.scale')]
    assert all(torch.isfinite(s).all() and (s > 0).all() for s in scales)
    return len(scales)


def graph_dims(path: str) -> dict:
    graph = onnx.load(path).graph
    return {v.name: [d.dim_param or d.dim_value
                     for d in v.type.tensor_type.shape.dim]
            for v in list(graph.input) + list(graph.output)}


@pytest.mark.parametrize('backend', sorted(DEPLOY))
@pytest.mark.parametrize('model', sorted(MODELS))
def test_ptq_config_runs_and_exports_as_its_deploy_cfg(
        model, backend, config_dir, imagenet_dir, tmp_path, monkeypatch,
        capsys):
    config = str(config_dir / 'ptq' / 'base' /
                 f'ptq_{backend}_{model}_8xb32_in1k_calib32xb32.py')
    work_dir = tmp_path / 'work'
    options = small_run_options(imagenet_dir, ptq=True)
    if backend == 'openvino':  # checked in OpenVINO's int8 kernels
        options.append('model.quantizer.global_qconfig.w_qscheme.bit='
                       f'{int8_weight_bits()}')
    # tools/ptq.py --export: the deploy_cfg's ONNX right after calibration.
    export = ['--export'] if (model, backend) == ('resnet18',
                                                  'openvino') else []
    run_tool('ptq', [config, '--work-dir', str(work_dir)] + export +
             ['--num-samples', '4', '--cfg-options'] + options, monkeypatch)
    checkpoint = str(work_dir / 'model_ptq.pth')
    assert check_scales(checkpoint) > 20
    if export:
        assert graph_dims(str(work_dir / 'end2end.onnx'))['input'] == [
            'batch', 3, 'height', 'width']
    if model == 'resnet18':  # tools/test.py on the saved checkpoint
        capsys.readouterr()
        run_tool('test', [config, checkpoint, '--work-dir', str(work_dir),
                          '--cfg-options', 'test_cfg.only_val=True'] +
                 options, monkeypatch)
        assert re.search(r'accuracy/top1: [\d.]+', capsys.readouterr().out)

    export_dir = tmp_path / 'export'
    # ResNet-18 at the deploy_cfg's 224x224; the larger models at a
    # smaller --shape (the flag overrides the deploy_cfg), for time.
    size = 224 if model == 'resnet18' else 64
    shape = [] if size == 224 else ['--shape', str(size), str(size)]
    with pytest.warns(UserWarning, match='opset_version=11 has no '
                      'per-channel QuantizeLinear; exporting at opset 13'):
        run_tool('export', [config, checkpoint, '--work-dir',
                            str(export_dir), '--num-samples', '4'] + shape +
                 ['--cfg-options'] + options, monkeypatch)
    out = capsys.readouterr().out
    onnx_path = export_dir / 'end2end.onnx'  # deploy_cfg's save_file
    assert sorted(os.listdir(export_dir)) == [
        'end2end.onnx', 'end2end.qparams.json']
    assert onnx.load(str(onnx_path)).opset_import[0].version == 13
    assert graph_dims(str(onnx_path)) == {
        'input': ['batch', 3, 'height', 'width'], 'output': ['batch', 1000]}
    # Exported and compared at the deploy_cfg's 224x224 (TensorRT's
    # input_shape, OpenVINO's opt_shapes), in the backend's runtime.
    assert f'export and parity at {size}x{size}' in out
    runtime = 'openvino' if backend == 'openvino' else 'onnxruntime'
    assert f'parity with the simulation ({runtime}, 4 samples)' in out
    sqnr = re.search(r'output SQNR\s*:\s*(\S+) dB', out)
    assert sqnr and float(sqnr.group(1)) > 25, out


@pytest.mark.parametrize('lsq', [False, True], ids=['qat', 'lsq'])
def test_qat_config_trains_an_epoch_and_tests(lsq, config_dir, imagenet_dir,
                                              tmp_path, monkeypatch,
                                              capsys):
    name = 'lsq/lsq_openvino_resnet18_8xb32_10e_in1k.py' if lsq else \
        'base/qat_openvino_resnet18_10e_8xb32_in1k.py'
    config = str(config_dir / 'qat' / name)
    work_dir = tmp_path / 'work'
    options = small_run_options(imagenet_dir, ptq=False)
    run_tool('train', [config, '--work-dir', str(work_dir),
                       '--cfg-options'] + options, monkeypatch)
    checkpoint = str(work_dir / 'epoch_1.pth')
    assert check_scales(checkpoint) > 20
    capsys.readouterr()
    run_tool('test', [config, checkpoint, '--work-dir', str(work_dir),
                      '--cfg-options'] + options, monkeypatch)
    top1 = re.search(r'accuracy/top1: ([\d.]+)', capsys.readouterr().out)
    assert top1 and 0 <= float(top1.group(1)) <= 100
