"""tensor_graph_module: the one way PTQ passes, deploy and analysis reach
the tensor-mode graph."""
import pytest
import torch
from mmengine.model import BaseModel
from torch import fx, nn

from mmrazor_quant.deploy import build_deploy_model
from mmrazor_quant.models.algorithms import MMArchitectureQuant
from mmrazor_quant.models.fake_quants import (
    disable_observer,
    enable_fake_quant,
)
from mmrazor_quant.models.quantizers import AcademicQuantizer
from mmrazor_quant.models.utils import tensor_graph_module
from tests.test_analysis.toy import qconfig


class Net(BaseModel):
    """A conv whose submodule is called ``module``, as DDP's is."""

    def __init__(self) -> None:
        super().__init__()
        self.module = nn.Conv2d(3, 4, 3)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        logits = self.module(inputs).mean((2, 3))
        return logits if mode == 'tensor' else logits.argmax(1)


def _quant(modes):
    return MMArchitectureQuant(
        architecture=Net(),
        quantizer=AcademicQuantizer(
            qconfig_mapping=dict(_global_=qconfig(bit=8))),
        forward_modes=modes)


def test_model_graph_and_wrapper_give_the_same_graph():
    model = _quant(('tensor', 'predict'))
    gm = tensor_graph_module(model)
    assert gm is model.qmodels['tensor']
    # a GraphModule is returned as is, even with a submodule named `module`
    assert tensor_graph_module(gm) is gm
    assert isinstance(gm.module, nn.Conv2d)


def test_errors_name_the_type_and_the_traced_modes():
    with pytest.raises(TypeError, match=r"'tensor' forward mode, or a "
                       r'quantized fx.GraphModule; got Conv2d'):
        tensor_graph_module(nn.Conv2d(1, 1, 1))
    model = _quant(('predict', ))
    with pytest.raises(ValueError, match=r"add it to forward_modes "
                       r"\(traced: \['predict'\]\)"):
        tensor_graph_module(model)
    with pytest.raises(ValueError, match='add it to forward_modes'):
        build_deploy_model(model)


def test_deploy_takes_the_graph_module_too():
    model = _quant(('tensor', ))
    x = torch.randn(2, 3, 6, 6)
    with torch.no_grad():
        model.calibrate_step(dict(inputs=x))
    disable_observer(model)
    enable_fake_quant(model)
    model.eval()
    expected = model(x, mode='tensor')
    for source in (model, model.qmodels['tensor']):
        deployed = build_deploy_model(source)
        torch.testing.assert_close(deployed(x), expected, rtol=1e-5,
                                   atol=1e-6)
    assert isinstance(tensor_graph_module(model), fx.GraphModule)
