"""MMRazor's module paths and re-exports, after the rename."""
import subprocess
import sys

import pytest
import torch
from torch import nn

import mmrazor_quant


def test_package_level_names():
    from mmengine.utils import digit_version as mmengine_digit_version

    from mmrazor_quant import digit_version
    assert digit_version is mmengine_digit_version
    assert digit_version('2.13.0') > digit_version('1.13.0')
    assert 'digit_version' in mmrazor_quant.__all__
    with pytest.raises(AttributeError, match='has no attribute'):
        mmrazor_quant.no_such_name


def test_models_reexports():
    from mmrazor_quant import models
    from mmrazor_quant.models import (
        AcademicQuantizer,
        BaseFakeQuantize,
        BaseObserver,
        BaseQuantizer,
        CustomTracer,
        LearnableFakeQuantize,
        LSQObserver,
        LSQPerChannelObserver,
        MMArchitectureQuant,
        MMArchitectureQuantDDP,
        OpenVINOQuantizer,
        TensorRTQuantizer,
        TorchNativeQuantizer,
        UntracedMethodRegistry,
        build_graphmodule,
        custom_symbolic_trace,
        enable_val,
    )
    from mmrazor_quant.models.fake_quants import (
        LearnableFakeQuantize as FromFakeQuants,
    )
    assert LearnableFakeQuantize is FromFakeQuants
    assert models.LSQObserver is LSQObserver
    for cls in (AcademicQuantizer, OpenVINOQuantizer, TensorRTQuantizer,
                TorchNativeQuantizer):
        assert issubclass(cls, BaseQuantizer)
    assert issubclass(LSQPerChannelObserver, BaseObserver)
    assert issubclass(LearnableFakeQuantize, BaseFakeQuantize)
    assert callable(enable_val) and callable(build_graphmodule)
    assert callable(custom_symbolic_trace)
    assert UntracedMethodRegistry and CustomTracer
    assert MMArchitectureQuantDDP and MMArchitectureQuant


def test_mmrazor_module_paths():
    from mmrazor_quant.engine import (
        LSQEpochBasedLoop,
        PTQLoop,
        QATEpochBasedLoop,
        QATValLoop,
    )
    from mmrazor_quant.engine.runner import PTQLoop as RunnerPTQLoop
    from mmrazor_quant.models.algorithms.quantization import (
        MMArchitectureQuant,
        MMArchitectureQuantDDP,
    )
    from mmrazor_quant.models.quantizers import (
        AcademicQuantizer,
        OpenVINOQuantizer,
    )
    from mmrazor_quant.models.task_modules.tracer import (
        CustomTracer,
        UntracedMethodRegistry,
        build_graphmodule,
        custom_symbolic_trace,
    )
    from mmrazor_quant.models.task_modules.tracer.fx import (
        CustomTracer as FxCustomTracer,
    )
    from mmrazor_quant.models.task_modules.tracer.fx.custom_tracer import (
        build_graphmodule as fx_build_graphmodule,
    )
    from mmrazor_quant.structures import QConfigHandler, QSchemeHandler
    from mmrazor_quant.structures.quantization import QConfigHandler as Q2
    from mmrazor_quant.structures.quantization import QSchemeHandler as S2
    from mmrazor_quant.utils import register_all_modules
    assert PTQLoop is RunnerPTQLoop and QConfigHandler is Q2
    assert QSchemeHandler is S2 and FxCustomTracer is CustomTracer
    assert fx_build_graphmodule is build_graphmodule
    for name in (LSQEpochBasedLoop, QATEpochBasedLoop, QATValLoop,
                 MMArchitectureQuant, MMArchitectureQuantDDP,
                 AcademicQuantizer, OpenVINOQuantizer, UntracedMethodRegistry,
                 custom_symbolic_trace, register_all_modules):
        assert name is not None


def test_importing_models_is_cheap_and_side_effect_free():
    code = ('import sys, time; t = time.perf_counter(); '
            'import mmrazor_quant.models; '
            'print(time.perf_counter() - t); '
            "print(sorted(m for m in ('onnx', 'openvino', 'onnxruntime', "
            "'mmrazor_quant.deploy', 'torch.ao.quantization') "
            'if m in sys.modules))')
    out = subprocess.run([sys.executable, '-c', code], check=True,
                         capture_output=True, text=True).stdout.split('\n')
    assert out[1] == "['torch.ao.quantization']" or out[1] == '[]', out
    code = 'import sys, mmrazor_quant; print(len(sys.modules))'
    bare = subprocess.run([sys.executable, '-c', 'import sys; '
                           'print(len(sys.modules))'], check=True,
                          capture_output=True, text=True).stdout
    pkg = subprocess.run([sys.executable, '-c', code], check=True,
                         capture_output=True, text=True).stdout
    # `import mmrazor_quant` itself imports nothing (digit_version is lazy)
    assert int(pkg) - int(bare) == 1


class Head(nn.Module):

    def forward(self, x):
        return self.decide(x * 2)

    def decide(self, x):
        # data-dependent control flow: untraceable symbolically
        return x if bool(x.sum() > 0) else -x


class Net(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 3, 1)
        self.head = Head()

    def forward(self, x):
        return self.head(self.conv(x))


def test_untraced_method_registry_and_custom_symbolic_trace():
    from mmrazor_quant.models.task_modules.tracer import TraceError
    from mmrazor_quant.models.task_modules.tracer.fx.custom_tracer import (
        CustomTracer,
        UntracedMethodRegistry,
        build_graphmodule,
        custom_symbolic_trace,
    )
    with pytest.raises(TraceError):
        custom_symbolic_trace(Net())
    saved = dict(UntracedMethodRegistry.method_dict)
    try:
        registry = UntracedMethodRegistry(Head.decide)
        registry.__set_name__(Head, 'decide')
        gm = custom_symbolic_trace(Net())
        calls = [n.target for n in gm.graph.nodes if n.op == 'call_method']
        assert calls == ['decide']
        x = torch.randn(2, 3, 4, 4)
        net = Net()
        gm = build_graphmodule(net, CustomTracer().trace(net), 'NetGM')
        assert type(gm).__name__ == 'NetGM' and gm.conv is net.conv
        assert torch.equal(gm(x), net(x))
        # the class keeps its method outside tracing
        assert Head.decide is registry.method
    finally:
        UntracedMethodRegistry.method_dict.clear()
        UntracedMethodRegistry.method_dict.update(saved)
