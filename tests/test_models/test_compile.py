"""torch.compile of QAT models: no graph break inside observers, fake quants
or QAT modules, the eager numerics, and the observer semantics (first-batch
qparams and LSQ init, enable/disable switches, frozen BN) under compile.

The numerics run on dynamo + AOTAutograd (``aot_eager``), which is fast on
CPU; inductor runs through the Runner in
tests/test_engine/test_compile_runner.py.
"""
import copy

import pytest
import torch

from mmrazor_quant.engine.runner import compile as compile_module
from mmrazor_quant.engine.runner.compile import check_compile_cfg
from mmrazor_quant.models.fake_quants.utils import (
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
    named_fake_quants,
)
from mmrazor_quant.models.qat_modules.bn_fold import FusedBnMixin
from mmrazor_quant.models.qat_modules.utils import freeze_bn_stats
from mmrazor_quant.registry import MODELS, register_all_modules

QCONFIGS = {
    'fake_quantize': ('FakeQuantize', 'PerChannelMinMaxObserver',
                      'MovingAverageMinMaxObserver'),
    'lsq': ('LearnableFakeQuantize', 'LSQPerChannelObserver', 'LSQObserver'),
}


def small_qat_resnet(kind):
    """A one-stage CIFAR ResNet (stem + two basic blocks: conv-BN-ReLU
    fused for QAT, residual adds, a linear head), uncalibrated."""
    register_all_modules(init_default_scope=False)
    fake_quant, w_observer, a_observer = QCONFIGS[kind]
    torch.manual_seed(0)
    model = MODELS.build(dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=dict(
            _scope_='mmcls', type='ImageClassifier',
            backbone=dict(type='ResNet_CIFAR', depth=18, num_stages=1,
                          strides=(1, ), dilations=(1, ), out_indices=(0, ),
                          stem_channels=8, base_channels=8),
            neck=dict(type='GlobalAveragePooling'),
            head=dict(type='LinearClsHead', num_classes=10, in_channels=8)),
        forward_modes=('tensor', ),
        input_shape=(3, 8, 8),
        quantizer=dict(
            type='mmrazor_quant.OpenVINOQuantizer',
            global_qconfig=dict(
                w_observer=dict(type='mmrazor_quant.' + w_observer),
                a_observer=dict(type='mmrazor_quant.' + a_observer),
                w_fake_quant=dict(type='mmrazor_quant.' + fake_quant),
                a_fake_quant=dict(type='mmrazor_quant.' + fake_quant),
                w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True),
                a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True)),
            tracer=dict(type='mmrazor_quant.CustomTracer'))))
    return model.qmodels['tensor']


def batch(step):
    return torch.randn(4, 3, 8, 8,
                       generator=torch.Generator().manual_seed(step))


def set_phase(model, phase):
    """The switch states of calibration and of the QAT phases."""
    model.train(phase != 'calibrate')
    if phase == 'calibrate':
        enable_observer(model)
        disable_fake_quant(model)
    elif phase == 'observe':  # first steps, LSQ init
        enable_observer(model)
        enable_fake_quant(model)
    elif phase == 'learn':
        disable_observer(model)
        enable_fake_quant(model)
    elif phase == 'float':
        disable_fake_quant(model)
    elif phase == 'frozen_bn':
        enable_fake_quant(model)
        freeze_bn_stats(model)


PHASES = ('observe', 'learn', 'float', 'frozen_bn', 'calibrate')


@pytest.mark.parametrize('kind', sorted(QCONFIGS))
def test_no_graph_break(kind):
    model = small_qat_resnet(kind)
    assert any(isinstance(m, FusedBnMixin) for m in model.modules())
    for phase in PHASES:
        set_phase(model, phase)
        torch._dynamo.reset()
        explanation = torch._dynamo.explain(model)(batch(0))
        assert explanation.graph_break_count == 0, (
            phase, [r.reason for r in explanation.break_reasons])
        assert explanation.graph_count == 1, phase


class CountingBackend:
    """``aot_eager`` that counts the graphs it compiles."""

    def __init__(self):
        self.compiles = 0

    def __call__(self, graph_module, example_inputs):
        self.compiles += 1
        from torch._dynamo.backends.debugging import aot_eager
        return aot_eager(graph_module, example_inputs)


@pytest.mark.parametrize('kind', sorted(QCONFIGS))
@torch._dynamo.config.patch(fail_on_recompile_limit_hit=True)
def test_compiled_equals_eager_through_switches(kind):
    """Train both copies through every phase from an uncalibrated model
    (the compiled one's first step runs with observers on and takes its
    qparams from that batch), with SGD steps in between. Hitting dynamo's
    recompile limit (8 per frame) raises here instead of warning and
    running eagerly from then on."""
    eager = small_qat_resnet(kind)
    compiled_model = copy.deepcopy(eager)
    backend = CountingBackend()
    torch._dynamo.reset()
    compiled = torch.compile(compiled_model, backend=backend)

    optimizers = [torch.optim.SGD(m.parameters(), lr=0.05)
                  for m in (eager, compiled_model)]
    schedule = ['observe', 'observe', 'learn', 'float', 'learn',
                'frozen_bn', 'frozen_bn', 'calibrate']
    for step, phase in enumerate(schedule):
        for model in (eager, compiled_model):
            set_phase(model, phase)
        x = batch(step)
        outs = []
        for model, run, optimizer in zip((eager, compiled_model),
                                         (eager, compiled), optimizers):
            out = _call(run, x)
            outs.append(out)
            if model.training:
                optimizer.zero_grad()
                out.square().mean().backward()
                optimizer.step()
        torch.testing.assert_close(outs[1], outs[0], rtol=1e-5, atol=1e-6,
                                   msg=f'step {step} ({phase})')
    eager_state = eager.state_dict()
    for name, value in compiled_model.state_dict().items():
        torch.testing.assert_close(value, eager_state[name], rtol=1e-5,
                                   atol=1e-6, msg=name)
    for name, fake_quant in named_fake_quants(compiled_model):
        assert fake_quant.is_initialized, name
        assert fake_quant._flags == dict(fake_quant_enabled=False,
                                         observer_enabled=True,
                                         initialized=True), name
    frozen = [m.bn_frozen for m in compiled_model.modules()
              if isinstance(m, FusedBnMixin)]
    assert frozen and all(frozen)
    # Graphs were compiled per switch state, and reused when a state came
    # back (learn, frozen_bn twice), not once per step.
    assert 4 <= backend.compiles < 2 * len(schedule)


def _call(model, x):
    out = model(x)
    return out[0] if isinstance(out, tuple) else out


def test_nan_input_raises_under_compile():
    model = small_qat_resnet('fake_quantize')
    set_phase(model, 'observe')
    torch._dynamo.reset()
    compiled = torch.compile(model, backend='aot_eager')
    x = batch(0)
    x[0, 0, 0, 0] = float('nan')
    with pytest.raises(RuntimeError, match='observed NaN or inf values'):
        _call(compiled, x)


def test_compile_cfg_values():
    assert check_compile_cfg(None) is None
    assert check_compile_cfg(False) is None
    assert check_compile_cfg(dict(backend='aot_eager')) == dict(
        backend='aot_eager')
    with pytest.raises(TypeError, match='`compile` must be a bool or a dict'):
        check_compile_cfg('inductor')


def test_compile_without_a_compiler_names_the_key(monkeypatch):
    monkeypatch.setattr(compile_module, '_inductor_missing',
                        lambda device: 'no C++ compiler for its CPU code '
                        'was found')
    with pytest.raises(ValueError,
                       match=r'`compile`=True asks for torch.compile with '
                       r'the inductor backend, but no C\+\+'):
        check_compile_cfg(True)
    # Another backend needs no compiler.
    assert check_compile_cfg(dict(backend='aot_eager')) == dict(
        backend='aot_eager')


def test_inductor_is_found_here():
    """This machine compiles (the Runner test relies on it)."""
    assert compile_module._inductor_missing('cpu') == ''
    assert check_compile_cfg(True) == {}
