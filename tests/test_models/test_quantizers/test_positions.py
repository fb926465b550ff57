"""Each backend places fake quants where its rule table says (issue 2)."""
import pytest
import torch

from mmrazor_quant.models.quantizers import (
    AcademicQuantizer,
    OpenVINOQuantizer,
    TensorRTQuantizer,
    TorchNativeQuantizer,
)
from mmrazor_quant.models.quantizers.passes.insert_fake_quants import (
    is_fake_quant_node,
)
from .toy_models import ResidualCatPoolNet

W8_SIGNED = dict(qdtype='qint8', bit=8, is_symmetry=True,
                 is_symmetric_range=True)


def qconfig(a_qscheme):
    return dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=W8_SIGNED,
        a_qscheme=a_qscheme)


UNSIGNED = dict(qdtype='quint8', bit=8)

# fake quant -> the nodes that consume it, per backend, derived by hand from
# the rule tables in docs/backends.md.
EXPECTED = {
    TorchNativeQuantizer: (UNSIGNED, {
        'inputs': ['conv1'],
        'conv1': ['add', 'conv2'],
        'conv2': ['add'],
        'relu2': ['pool'],
        'conv3': ['cat'],
        'conv4': ['cat'],
        'cat': ['gap'],
        'cat@gap': ['flatten'],  # average pooling keeps its input qparams
        'fc': ['output'],
    }),
    OpenVINOQuantizer: (dict(UNSIGNED, is_symmetry=True), {
        'inputs': ['conv1'],
        # add: conv2's output stays float (the add is conv2's sum post-op)
        'conv1': ['add', 'conv2'],
        # before max pooling and flatten, which then run in u8
        'relu2': ['pool'],
        'cat': ['gap'],
        'gap': ['flatten'],
    }),
    TensorRTQuantizer: (W8_SIGNED, {
        'inputs': ['conv1'],
        'conv1': ['add', 'conv2'],  # add: only the residual branch
        'relu2': ['pool'],
        # no fake quant after max pooling: redundant in TensorRT
        'cat': ['gap'],
        'flatten': ['fc'],
    }),
    AcademicQuantizer: (UNSIGNED, {
        'inputs': ['conv1'],
        'conv1': ['conv2'],
        'pool': ['conv3', 'conv4'],
        'flatten': ['fc'],
    }),
}


def fake_quant_consumers(graph):
    """fake-quant name -> sorted consumer node names; a fake quant called
    after its first use is listed as ``name@<node it quantizes>``."""
    table = {}
    for node in graph.nodes:
        if not is_fake_quant_node(node):
            continue
        name = str(node.target).split('.', 1)[1]
        if name in table:
            name = f'{name}@{node.args[0].name}'
        table[name] = sorted(u.name for u in node.users)
    return table


@pytest.mark.parametrize('quantizer_cls', list(EXPECTED))
def test_positions_follow_rule_table(quantizer_cls):
    a_qscheme, expected = EXPECTED[quantizer_cls]
    quantizer = quantizer_cls(global_qconfig=qconfig(a_qscheme))
    model = ResidualCatPoolNet()
    gms = quantizer.prepare(model, ('tensor', 'loss'))
    for mode, gm in gms.items():
        # in 'loss' mode the logits feed the loss instead of the output
        final = 'output' if mode == 'tensor' else 'cross_entropy'
        want = {k: sorted(final if c == 'output' else c for c in v)
                for k, v in expected.items()}
        assert fake_quant_consumers(gm.graph) == want, mode
    # every fused/swapped conv and the linear quantize their weights
    weighted = {
        name
        for name, m in model.named_modules()
        if hasattr(m, 'weight_fake_quant')
    }
    assert weighted == {'conv1', 'conv2', 'conv3', 'conv4', 'fc'}
    # BN folded into the convs: no BN left in the graphs
    for gm in gms.values():
        assert not any('bn' in str(n.target) for n in gm.graph.nodes)


@pytest.mark.parametrize('quantizer_cls', list(EXPECTED))
def test_modes_share_quantizer_objects(quantizer_cls):
    a_qscheme, _ = EXPECTED[quantizer_cls]
    quantizer = quantizer_cls(global_qconfig=qconfig(a_qscheme))
    model = ResidualCatPoolNet()
    gms = quantizer.prepare(model, ('tensor', 'loss', 'predict'))
    names = [n for n, _ in model.act_fake_quants.named_children()]
    assert names
    for name in names:
        target = f'act_fake_quants.{name}'
        objs = {id(gm.get_submodule(target)) for gm in gms.values()}
        assert objs == {id(model.get_submodule(target))}
    for conv in ('conv1', 'fc'):
        objs = {id(gm.get_submodule(conv)) for gm in gms.values()}
        assert objs == {id(model.get_submodule(conv))}
    # one calibration pass through 'tensor' mode sets the qparams 'loss' uses
    x = torch.randn(4, 3, 8, 8)
    model.eval()
    gms['tensor'](x, None)
    fq = model.act_fake_quants['inputs']
    assert fq.is_initialized
    scale_seen_by_loss = gms['loss'].get_submodule(
        'act_fake_quants.inputs').scale
    assert torch.equal(scale_seen_by_loss, fq.scale)


class _MirroredBatchNet(torch.nn.Module):
    """A flip-test batch built by reshapes (``permute``, ``flatten``) whose
    size the model reads too, as ViT's patch embedding reads the size of
    the image it pads."""

    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        pair = torch.stack([inputs, inputs.flip(-1)])
        x = pair.permute(1, 0, 2, 3, 4).flatten(0, 1)
        return self.conv(x).reshape(x.shape[0], -1)


def test_fake_quant_hoists_past_shape_reads():
    """A size read is no second value reader: the conv's input fake quant
    sits on the mirrored batch's source, above the reshapes, not on the
    flattened tensor."""
    quantizer = OpenVINOQuantizer(
        global_qconfig=qconfig(dict(UNSIGNED, is_symmetry=True)))
    gm = quantizer.prepare(_MirroredBatchNet(), ('tensor', ))['tensor']
    table = fake_quant_consumers(gm.graph)
    fq_inputs = {n.args[0].name for n in gm.graph.nodes
                 if is_fake_quant_node(n)}
    assert 'flatten' not in fq_inputs and 'flatten' not in table
    x = torch.randn(2, 3, 6, 7)
    gm.eval()
    assert gm(x).shape == (4, 4 * 4 * 5)
