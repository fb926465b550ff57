"""Bad input: a clear error and no file left behind."""
import os

import pytest

from mmrazor_quant.deploy import export_model
from .conftest import W8, build_quantized, calibrate


def _assert_empty(directory):
    assert os.listdir(directory) == []


def test_uncalibrated_model(float_weights, digits, tmp_path):
    model = build_quantized('resnet', float_weights, 'OpenVINOQuantizer',
                            dict(qdtype='quint8', bit=8, is_symmetry=True))
    with pytest.raises(RuntimeError, match='never calibrated'):
        export_model(model, digits[2][:2], str(tmp_path / 'm.onnx'))
    _assert_empty(tmp_path)


def test_asymmetric_to_tensorrt(float_weights, digits, tmp_path):
    model = calibrate(
        build_quantized('resnet', float_weights, 'TorchNativeQuantizer',
                        dict(qdtype='quint8', bit=8)), digits[0], 1)
    # TensorRTQuantizer's BackendSpec is what the export checks, each
    # fake quant named with the key it breaks
    with pytest.raises(ValueError, match=r"(?s)tensorrt does not execute "
                       r"the scheme.*: a_qscheme\.qdtype must be one of "
                       r"\('qint8',\), got 'quint8'"):
        export_model(model, digits[2][:2], str(tmp_path / 'm.onnx'),
                     'tensorrt')
    _assert_empty(tmp_path)


def test_openvino_refuses_what_its_spec_does_not_declare(
        float_weights, digits, tmp_path):
    model = calibrate(
        build_quantized('resnet', float_weights, 'AcademicQuantizer',
                        dict(qdtype='quint8', bit=8),
                        w_qscheme=dict(W8, bit=9)), digits[0], 1)
    # each fake quant named by its layer and role
    with pytest.raises(ValueError, match=r'(?s)openvino does not execute '
                       r'the scheme.*backbone\.conv1 \(weight\): '
                       r'w_qscheme\.bit must be one of '
                       r'\(2, 3, 4, 5, 6, 7, 8\), got 9'):
        export_model(model, digits[2][:2], str(tmp_path / 'm.onnx'),
                     'openvino')
    _assert_empty(tmp_path)


def test_4bit_at_opset_13(float_weights, digits, tmp_path):
    model = calibrate(
        build_quantized('resnet', float_weights, 'AcademicQuantizer',
                        dict(qdtype='quint8', bit=4),
                        w_qscheme=dict(W8, bit=4)), digits[0], 1)
    with pytest.raises(ValueError, match='UINT4 needs opset >= 21'):
        export_model(model, digits[2][:2], str(tmp_path / 'm.onnx'),
                     opset=13)
    _assert_empty(tmp_path)


def test_int32_bias_needs_frozen_qparams(float_weights, digits):
    from mmrazor_quant.deploy import align_bias_to_int32_grid_
    from mmrazor_quant.models.fake_quants import enable_observer
    model = calibrate(
        build_quantized('resnet', float_weights, 'OpenVINOQuantizer',
                        dict(qdtype='quint8', bit=8, is_symmetry=True)),
        digits[0], 1)
    enable_observer(model)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    with pytest.raises(RuntimeError, match='still observe: .*disable_obs'):
        align_bias_to_int32_grid_(model)
    after = model.state_dict()
    assert all(bool((before[k] == after[k]).all()) for k in before)
