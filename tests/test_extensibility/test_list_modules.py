"""tools/list_modules.py lists the known names, grouped."""
import os.path as osp
import subprocess
import sys

from .conftest import EXAMPLES, ROOT


def test_list_modules_prints_known_names_grouped():
    env = dict(PYTHONPATH=osp.join(EXAMPLES, 'custom_backend'))
    import os
    env = {**os.environ, **env}
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
                              'exporters', 'deploy heads']
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
        'runtime=onnxruntime] Binds the toy NPU')
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
            'LiteRTExporter', 'ToyNPUExporter'} <= set(sections['exporters'])
    assert sections['fake quants']['FakeQuantize'] == (
        'Fake quantization with qparams computed by an observer.')
