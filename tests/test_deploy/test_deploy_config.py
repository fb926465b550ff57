"""``deploy_cfg``: mmdeploy's schema parsed, bad values named by key, and
MMArchitectureQuant keeping it."""
import copy
import os.path as osp

import pytest
from mmengine.config import Config

from mmrazor_quant.deploy import DeployConfig
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.structures import InputShapes
from ..toys import openvino_w8a8, tiny_resnet

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
DEPLOY_DIR = osp.join(REPO, 'configs', 'quantization', 'deploy_cfgs')
OPENVINO = osp.join(DEPLOY_DIR, 'mmcls',
                    'classification_openvino_dynamic-224x224.py')
TENSORRT = osp.join(DEPLOY_DIR, 'mmcls',
                    'classification_tensorrt-int8-explicit_dynamic-224x224.py')


def _cfg(path):
    return Config.fromfile(path).deploy_cfg.to_dict()


def test_openvino_deploy_config():
    cfg = DeployConfig.from_dict(_cfg(OPENVINO))
    assert cfg.backend == 'openvino'
    assert (cfg.opset, cfg.save_file) == (13, 'end2end.onnx')
    assert (cfg.input_names, cfg.output_names) == (['input'], ['output'])
    assert cfg.dynamic_axes == {
        'input': {0: 'batch', 2: 'height', 3: 'width'},
        'output': {0: 'batch'}}
    assert cfg.input_shape is None
    assert cfg.model_inputs == {'input': InputShapes((1, 3, 224, 224))}
    # No input_shape: the export's example is OpenVINO's optimal shape.
    assert cfg.example_hw() == (224, 224)
    assert (cfg.codebase, cfg.task) == ('mmcls', 'Classification')
    assert not cfg.implicit and not cfg.post_processing


def test_tensorrt_deploy_config():
    cfg = DeployConfig.from_dict(_cfg(TENSORRT))
    assert cfg.backend == 'tensorrt' and not cfg.implicit
    shapes = cfg.model_inputs['input']
    assert (shapes.min, shapes.opt, shapes.max) == (
        (1, 3, 224, 224), (4, 3, 224, 224), (8, 3, 224, 224))
    assert shapes.contains((8, 3, 224, 224))
    assert not shapes.contains((9, 3, 224, 224))
    assert not shapes.contains((1, 3, 32, 32))


def test_input_shape_is_width_then_height():
    cfg = _cfg(TENSORRT)
    cfg['onnx_config']['input_shape'] = [320, 240]
    assert DeployConfig.from_dict(cfg).example_hw() == (240, 320)


def test_implicit_tensorrt_from_common_config():
    cfg = _cfg(TENSORRT)
    cfg['backend_config']['common_config']['explicit_quant_mode'] = False
    assert DeployConfig.from_dict(cfg).implicit


def test_mmrazor_opset_11_is_raised_to_13_with_a_warning():
    cfg = _cfg(OPENVINO)
    cfg['onnx_config']['opset_version'] = 11
    deploy = DeployConfig.from_dict(cfg)
    assert deploy.opset == 11
    with pytest.warns(UserWarning,
                      match=r'opset_version=11 has no per-channel'):
        assert deploy.export_opset() == 13


def test_output_groups_are_named_and_share_their_axes():
    from mmrazor_quant.deploy.onnx_export import _expand_axes, _name_outputs

    # A detector: (cls_scores, bbox_preds), 3 levels each.
    names, members = _name_outputs([3, 3], ['cls_scores', 'bbox_preds'])
    assert names == ['cls_scores_0', 'cls_scores_1', 'cls_scores_2',
                     'bbox_preds_0', 'bbox_preds_1', 'bbox_preds_2']
    assert _expand_axes({'input': {0: 'batch'}, 'bbox_preds': {0: 'batch'}},
                        ['input'], members) == {
        'input': {0: 'batch'}, 'bbox_preds_0': {0: 'batch'},
        'bbox_preds_1': {0: 'batch'}, 'bbox_preds_2': {0: 'batch'}}
    # One name per tensor, or a classifier's single output.
    assert _name_outputs([1, 1], ['a', 'b'])[0] == ['a', 'b']
    assert _name_outputs([1], ['logits'])[0] == ['logits']
    with pytest.raises(ValueError, match=r"output_names \['dets', 'labels', "
                       r"'x'\] fit neither the model's 6 output tensors nor "
                       r'its 2 output groups'):
        _name_outputs([3, 3], ['dets', 'labels', 'x'])
    with pytest.raises(ValueError, match=r"dynamic_axes names 'dets', which "
                       r'is neither an input'):
        _expand_axes({'dets': {0: 'batch'}}, ['input'], members)


BAD = [
    (('backend_config', 'type'), 'tnn', ValueError,
     r"deploy_cfg.backend_config.type='tnn' is not a registered backend; "
     r"expected one of \[.*'onnxruntime', 'openvino', .*'tensorrt'"),
    (('backend_config', 'type'), 'native', ValueError,
     r"deploy_cfg.backend_config.type='native' has no exporter \(it is only "
     r"simulated\); deploy targets: \[.*'onnxruntime', 'openvino', "
     r".*'tensorrt'"),
    (('onnx_config', 'opset_version'), 9, ValueError,
     r'deploy_cfg.onnx_config.opset_version=9 is not supported: '
     r'QuantizeLinear needs opset >= 10'),
    (('onnx_config', 'opset_version'), 30, ValueError,
     r'opset_version=30 is not supported.*checked up to 21'),
    (('onnx_config', 'opset_version'), '13', TypeError,
     r"deploy_cfg.onnx_config.opset_version must be an int, got '13'"),
    (('onnx_config', 'save_file'), 'out/end2end.onnx', ValueError,
     r'deploy_cfg.onnx_config.save_file must be a file name ending in '
     r'.onnx'),
    (('onnx_config', 'input_shape'), [224], ValueError,
     r'deploy_cfg.onnx_config.input_shape must be \[width, height\]'),
    (('onnx_config', 'input_names'), 'input', TypeError,
     r'deploy_cfg.onnx_config.input_names must be a non-empty list'),
    (('onnx_config', 'export_params'), False, ValueError,
     r'deploy_cfg.onnx_config.export_params=False is not supported'),
    (('onnx_config', 'keep_initializers_as_inputs'), True, ValueError,
     r'keep_initializers_as_inputs=True is not supported'),
    (('onnx_config', 'dynamic_axes'), {'input': {'0': 'batch'}}, ValueError,
     r"deploy_cfg.onnx_config.dynamic_axes\['input'\]: axes must be "
     r'non-negative ints'),
    (('backend_config', 'model_inputs'),
     [dict(input_shapes=dict(input=dict(min_shape=[1, 3, 224, 224],
                                        opt_shape=[1, 3, 112, 112],
                                        max_shape=[1, 3, 224, 224])))],
     ValueError,
     r'deploy_cfg.backend_config.model_inputs\[0\].input_shapes.input: '
     r'expected min_shape <= opt_shape <= max_shape'),
    (('backend_config', 'model_inputs'),
     [dict(opt_shapes=dict(image=[1, 3, 224, 224]))], ValueError,
     r"model_inputs names input\(s\) \['image'\] that "
     r"onnx_config.input_names \['input'\] lacks"),
]


@pytest.mark.parametrize('keys,value,error,message', BAD,
                         ids=[f'{k[1]}={v!r}'[:40] for k, v, *_ in BAD])
def test_bad_values_name_their_key(keys, value, error, message):
    cfg = _cfg(TENSORRT)
    cfg[keys[0]][keys[1]] = value
    with pytest.raises(error, match=message):
        DeployConfig.from_dict(cfg)


def test_missing_backend_config():
    with pytest.raises(TypeError, match='deploy_cfg.backend_config must be '
                       'a dict, got NoneType'):
        DeployConfig.from_dict(dict(onnx_config=dict()))


@pytest.fixture(scope='module')
def tiny_model_cfg():
    register_all_modules(init_default_scope=False)
    return openvino_w8a8(tiny_resnet())


def test_model_keeps_the_parsed_deploy_cfg(tiny_model_cfg):
    model = MODELS.build(dict(tiny_model_cfg, deploy_cfg=_cfg(OPENVINO)))
    assert model.deploy_cfg == DeployConfig.from_dict(_cfg(OPENVINO))
    assert MODELS.build(tiny_model_cfg).deploy_cfg is None


def test_model_refuses_another_backends_deploy_cfg(tiny_model_cfg):
    with pytest.raises(ValueError, match=(
            r"model.deploy_cfg.backend_config.type='tensorrt' does not "
            r"match model.quantizer \(OpenVINOQuantizer, backend "
            r"'openvino'\)")):
        MODELS.build(dict(tiny_model_cfg, deploy_cfg=_cfg(TENSORRT)))


def test_model_refuses_an_unknown_backend_before_tracing(tiny_model_cfg):
    deploy_cfg = copy.deepcopy(_cfg(OPENVINO))
    deploy_cfg['backend_config']['type'] = 'openvion'
    with pytest.raises(ValueError, match=(
            r"deploy_cfg.backend_config.type='openvion' is not a registered "
            r"backend")):
        MODELS.build(dict(tiny_model_cfg, deploy_cfg=deploy_cfg))
