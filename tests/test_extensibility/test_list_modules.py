"""tools/list_modules.py lists the known names, grouped."""
import os
import os.path as osp
import subprocess
import sys

from .conftest import EXAMPLES, ROOT


def test_list_modules_prints_known_names_grouped():
    # this checkout first, whatever the environment has installed
    env = {**os.environ, 'PYTHONPATH': os.pathsep.join(
        [osp.join(EXAMPLES, 'custom_backend'), ROOT])}
    out = subprocess.run(
        [sys.executable, '-W', 'ignore',
         osp.join(ROOT, 'tools', 'list_modules.py'), '--import', 'toy_npu'],
        capture_output=True, text=True, check=True, env=env).stdout
    sections = {}
    current = None
    for line in out.splitlines():
        if not line.startswith(' '):
            current = line.rstrip(':')
            sections[current] = {}
        else:
            name, _, desc = line.strip().partition('  ')
            sections[current][name] = desc.strip()
    assert list(sections) == ['backends', 'codebases', 'quantizers',
                              'observers', 'fake quants', 'loops',
                              'exporters', 'runtimes', 'deploy heads']
    assert {'MMClsCodebase', 'MMDetCodebase',
            'MMEngineCodebase'} <= set(sections['codebases'])
    assert sections['codebases']['MMDetCodebase'].startswith(
        '[packages=mmdet, task=detection]')
    assert {'classification', 'detection', 'tensor'} <= set(
        sections['deploy heads'])
    assert {'academic', 'litert', 'native', 'onnxruntime', 'openvino', 'rknn',
            'tensorrt', 'toy_npu'} <= set(sections['backends'])
    assert sections['backends']['toy_npu'].startswith(
        '[quantizer=ToyNPUQuantizer, exporter=ToyNPUExporter, '
        'runtime=toy_npu_reference] Binds the toy NPU')
    assert sections['backends']['native'].startswith(
        '[quantizer=TorchNativeQuantizer, exporter=None, runtime=None]')
    assert {'OpenVINOQuantizer', 'TensorRTQuantizer', 'AcademicQuantizer',
            'TorchNativeQuantizer', 'ToyNPUQuantizer'} <= set(
                sections['quantizers'])
    assert sections['quantizers']['ToyNPUQuantizer'].startswith(
        '[backend=toy_npu] A toy NPU')
    assert {'MinMaxObserver', 'PerChannelMinMaxObserver',
            'LSQObserver'} <= set(sections['observers'])
    assert {'FakeQuantize', 'LearnableFakeQuantize',
            'FixedFakeQuantize'} <= set(sections['fake quants'])
    assert {'PTQLoop', 'QATEpochBasedLoop',
            'LSQEpochBasedLoop'} <= set(sections['loops'])
    assert {'ONNXRuntimeExporter', 'OpenVINOExporter', 'TensorRTExporter',
            'LiteRTExporter', 'NCNNExporter',
            'ToyNPUExporter'} <= set(sections['exporters'])
    # every runtime plugin with the arithmetic it declares, the user's too
    assert {'onnxruntime', 'openvino', 'litert', 'ncnn', 'rknn_simulator',
            'toy_npu_reference'} <= set(sections['runtimes'])
    assert sections['runtimes']['onnxruntime'].startswith(
        '[quantizes_by=division, accumulates_exactly=False]')
    assert sections['runtimes']['ncnn'].startswith(
        '[quantizes_by=multiplication, accumulates_exactly=True]')
    assert sections['runtimes']['toy_npu_reference'].startswith(
        '[quantizes_by=division, accumulates_exactly=False]')
    assert sections['fake quants']['FakeQuantize'] == (
        'Fake quantization with qparams computed by an observer.')
