"""MMRazor's torch.ao-bound names: each raises TorchAONotSupportedError
saying why and what to use instead."""
import pytest
import torch
from torch import nn

from mmrazor_quant.compat.torch_ao import TorchAONotSupportedError
from mmrazor_quant.models.fake_quants import (
    LearnableFakeQuantize,
    register_torch_fake_quants,
)
from mmrazor_quant.models.observers import register_torch_observers
from mmrazor_quant.models.quantizers import (
    AcademicQuantizer,
    OpenVINOQuantizer,
)
from mmrazor_quant.models.task_modules.tracer import fx as tracer_fx
from mmrazor_quant.structures import QConfigHandler
from mmrazor_quant.structures import quantization as structures
from ..test_models.test_quantizers.test_positions import qconfig

TORCH_AO = 'is not supported: it is bound to torch.ao, which mmrazor_quant ' \
    'does not use. Use '
QCONFIG = qconfig(dict(qdtype='quint8', bit=8, is_symmetry=True))


@pytest.mark.parametrize('call, match', [
    (register_torch_fake_quants, 'register_torch_fake_quants ' + TORCH_AO +
     'the fake quants of mmrazor_quant.models.fake_quants'),
    (register_torch_observers, 'register_torch_observers ' + TORCH_AO +
     'the observers of mmrazor_quant.models.observers'),
])
def test_registering_torch_ao_modules(call, match):
    with pytest.raises(TorchAONotSupportedError, match=match):
        call()


@pytest.mark.parametrize('name', [
    f'get_{backend}_backend_config{suffix}'
    for backend in ('native', 'academic', 'openvino', 'tensorrt')
    for suffix in ('', '_dict')
])
def test_backend_config_getters(name):
    with pytest.raises(TorchAONotSupportedError,
                       match=name + ' ' + TORCH_AO + "the quantizer's "
                       'declared scheme and rules'):
        getattr(structures, name)()


def test_backend_configs_table():
    with pytest.raises(TorchAONotSupportedError,
                       match=r"BackendConfigs\['openvino'\] " + TORCH_AO):
        structures.BackendConfigs['openvino']
    with pytest.raises(TorchAONotSupportedError, match='BackendConfigs.get'):
        structures.BackendConfigs.get('native')


def test_torch_ao_qconfig_objects():
    qconfig_mod = pytest.importorskip('torch.ao.quantization')
    torch_qconfig = qconfig_mod.get_default_qat_qconfig('x86')
    match = 'a torch.ao QConfig ' + TORCH_AO + 'a global_qconfig dict'
    with pytest.raises(TorchAONotSupportedError, match=match):
        QConfigHandler(torch_qconfig)
    with pytest.raises(TorchAONotSupportedError, match=match):
        AcademicQuantizer(qconfig_mapping=dict(_global_=torch_qconfig))
    with pytest.raises(TorchAONotSupportedError,
                       match=r'LearnableFakeQuantize\(observer=torch.ao.'
                       r'quantization.observer.MovingAverageMinMaxObserver\) '
                       + TORCH_AO + 'mmrazor_quant.models.observers.'
                       'MovingAverageMinMaxObserver'):
        LearnableFakeQuantize.with_args(
            observer=qconfig_mod.MovingAverageMinMaxObserver)()


def test_qconfig_handler_deploy_helpers():
    handler = QConfigHandler(QCONFIG)
    with pytest.raises(TorchAONotSupportedError,
                       match='fixed_w_fakequant ' + TORCH_AO +
                       r'model.get_deploy_model\(\)'):
        handler.fixed_w_fakequant()
    with pytest.raises(TorchAONotSupportedError,
                       match='replace_fakequant ' + TORCH_AO):
        QConfigHandler.replace_fakequant(None, handler.w_qscheme)


def test_quantizer_torch_ao_helpers():
    quantizer = OpenVINOQuantizer(global_qconfig=QCONFIG)
    with pytest.raises(TorchAONotSupportedError,
                       match=r'swap_ff_with_fxff \(FloatFunctional\) ' +
                       TORCH_AO + 'plain torch ops'):
        quantizer.swap_ff_with_fxff(nn.Identity())
    with pytest.raises(TorchAONotSupportedError,
                       match='post_process_for_deploy ' + TORCH_AO +
                       r'model.get_deploy_model\(\)'):
        quantizer.post_process_for_deploy(nn.Identity())
    with pytest.raises(TorchAONotSupportedError,
                       match=r'gen_qconfig_mapping \(torch.ao QConfigMapping'
                       r'\) ' + TORCH_AO + 'the qconfig_mapping argument'):
        quantizer.gen_qconfig_mapping(QCONFIG, None)


@pytest.mark.parametrize('side, kind, key', [
    (side, kind, f'extra_{kind}_{"prev" if side == "before" else "next"}'
     '_wo_fakequant')
    for side in ('before', 'after')
    for kind in ('module', 'function', 'method', 'op')
])
def test_del_fakequant_functions(side, kind, key):
    name = f'del_fakequant_{side}_{kind}'
    with pytest.raises(TorchAONotSupportedError,
                       match=f"{name} is not supported: it edits one forward "
                       "mode's graph, and all modes share their fake quants "
                       f'here. Use the quantizer argument '
                       rf'extra_redundant_fakequants=dict\({key}=...\)'):
        getattr(tracer_fx, name)(None, (), inplace=True)


def test_plain_module_helpers_work():
    from mmengine.model.utils import _BatchNormXd
    model = nn.Sequential(nn.Conv2d(3, 4, 1), nn.SyncBatchNorm(4),
                          nn.Sequential(_BatchNormXd(4)))
    model[1].running_mean.fill_(0.5)
    OpenVINOQuantizer.convert_batchnorm2d(model)
    assert type(model[1]) is nn.BatchNorm2d
    assert type(model[2][0]) is nn.BatchNorm2d
    assert torch.equal(model[1].running_mean, torch.full((4, ), 0.5))
    OpenVINOQuantizer.sync_module_training_mode(model, mode=False)
    assert not any(m.training for m in model.modules())
