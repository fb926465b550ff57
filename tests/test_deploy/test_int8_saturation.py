"""The int8 saturation probe and what a parity report says about it."""
import platform

import numpy as np

from mmrazor_quant.deploy import compare_outputs, int8_pairs_saturate
from mmrazor_quant.deploy.int8_saturation import SATURATION_NOTE
from mmrazor_quant.deploy.runtimes import get_runtime


def _cpu_flags() -> set:
    with open('/proc/cpuinfo') as f:
        for line in f:
            if line.startswith('flags'):
                return set(line.split(':', 1)[1].split())
    return set()


def test_probe_agrees_with_the_cpu_flags():
    """onnxruntime's u8 x s8 kernels saturate exactly on x86 CPUs that
    have no VNNI instruction (AVX-512 VNNI or AVX-VNNI)."""
    saturates = int8_pairs_saturate()
    print('int8 pairs saturate:', saturates)
    if platform.machine() in ('x86_64', 'AMD64'):
        flags = _cpu_flags()
        assert saturates == (not {'avx512_vnni', 'avx_vnni'} & flags)


def test_report_notes_saturation_only_for_int8_kernels():
    assert get_runtime('openvino').runs_int8_kernels()
    onnxruntime = get_runtime('onnxruntime')
    assert onnxruntime.runs_int8_kernels()
    assert not onnxruntime.runs_int8_kernels(qdq_fusion=False)
    assert not onnxruntime.runs_int8_kernels(optimize=False)
    # s8 x s8 kernels widen to int16 before multiplying
    assert not get_runtime('litert').runs_int8_kernels()
    assert not get_runtime('rknn_simulator').runs_int8_kernels()
    ref = np.array([[1., 2.], [3., 0.]])
    report = compare_outputs(ref, ref + 0.01, 'openvino')
    assert 'note' not in report.format()
    report.int8_saturates = True
    assert report.format().endswith(f'  note: {SATURATION_NOTE}')
    assert report.to_dict()['int8_saturates'] is True
