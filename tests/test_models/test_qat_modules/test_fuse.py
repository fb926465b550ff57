"""fuse_conv_bn and swap_qat_modules on traced graphs of several modes."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn

from mmrazor_quant.models.qat_modules import (
    ConvBn2d,
    ConvBnReLU2d,
    ConvReLU2d,
    LinearBn1d,
    LinearBnReLU1d,
    QATConv2d,
    QATLinear,
)
from mmrazor_quant.models.quantizers.passes.fuse import fuse_conv_bn
from mmrazor_quant.models.quantizers.passes.swap_qat_modules import (
    swap_qat_modules,
)
from .helpers import fake_quant_factory, randomize_bn, set_fake_quant


class Block(nn.Module):
    """BasicBlock-like: conv-bn-relu, conv-bn, add, the same ReLU again; then
    a functional-ReLU branch and a Linear-BN1d-relu() head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(4)
        self.conv2 = nn.Conv2d(4, 4, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(4)
        self.relu = nn.ReLU(inplace=True)
        self.conv3 = nn.Conv2d(4, 6, 1)
        self.bn3 = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6, 3)
        self.bn4 = nn.BatchNorm1d(3)
        for i, bn in enumerate((self.bn1, self.bn2, self.bn3, self.bn4)):
            randomize_bn(bn, seed=i)

    def forward(self, x):
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.relu(self.bn2(self.conv2(out)) + x)
        out = F.relu(self.bn3(self.conv3(out)))
        return self.bn4(self.fc(out.mean((2, 3)))).relu()


def _trace_modes(model, modes=('tensor', 'loss')):
    return {mode: fx.Tracer().trace(model) for mode in modes}


def _call_targets(graph):
    return [n.target for n in graph.nodes if n.op == 'call_module']


def _assert_same_outputs(model, ref, graphs, x):
    for graph in graphs.values():
        out = fx.GraphModule(model, graph)(x)
        torch.testing.assert_close(out, ref(x), atol=1e-5, rtol=1e-5)


def test_fuse_basic_block_with_shared_relu():
    torch.manual_seed(0)
    model = Block()
    ref = copy.deepcopy(model)
    graphs = _trace_modes(model)

    names = fuse_conv_bn(model, graphs, fake_quant_factory)

    assert names == ['conv1', 'conv2', 'conv3', 'fc']
    assert [type(getattr(model, n)) for n in names] == [
        ConvBnReLU2d, ConvBn2d, ConvBnReLU2d, LinearBnReLU1d
    ]
    assert all(type(getattr(model, f'bn{i}')) is nn.Identity
               for i in range(1, 5))
    assert type(model.relu) is nn.ReLU  # the shared module is kept
    assert model.conv1.weight_fake_quant.name == 'conv1 (weight)'
    for graph in graphs.values():
        # BN nodes gone; one call of the shared ReLU (after the add) remains.
        assert _call_targets(graph) == ['conv1', 'conv2', 'relu', 'conv3',
                                        'fc']
        assert not any(n.target in (F.relu, 'relu') for n in graph.nodes
                       if n.op in ('call_function', 'call_method'))
    keys = set(model.state_dict())
    assert 'conv1.bn.running_var' in keys and 'bn1.running_var' not in keys

    gms = [fx.GraphModule(model, g) for g in graphs.values()]
    for name in names:
        assert gms[0].get_submodule(name) is gms[1].get_submodule(name)
        assert gms[0].get_submodule(name) is model.get_submodule(name)

    set_fake_quant(model, False)
    x = torch.randn(5, 4, 6, 6)
    model.eval()
    ref.eval()
    _assert_same_outputs(model, ref, graphs, x)
    # Train mode too: batch statistics, with the running ones updated alike.
    model.train()
    ref.train()
    gm = fx.GraphModule(model, graphs['loss'])
    torch.testing.assert_close(gm(x), ref(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.conv2.bn.running_mean,
                               ref.bn2.running_mean)


def test_fuse_without_relu():
    model = Block()
    graphs = _trace_modes(model, ('tensor', ))
    fuse_conv_bn(model, graphs, fake_quant_factory, fuse_relu=False)
    assert type(model.conv1) is ConvBn2d and type(model.fc) is LinearBn1d
    assert _call_targets(graphs['tensor']) == [
        'conv1', 'relu', 'conv2', 'relu', 'conv3', 'fc'
    ]


def test_fuse_resnet_cifar_two_modes():
    from mmcls.models.backbones import ResNet_CIFAR
    torch.manual_seed(0)
    model = ResNet_CIFAR(depth=18, stem_channels=8, base_channels=8)
    for i, m in enumerate(model.modules()):
        if isinstance(m, nn.BatchNorm2d):
            randomize_bn(m, seed=i)
    ref = copy.deepcopy(model)
    ref.eval()  # mmcls ResNet.train() returns None: no chaining
    graphs = _trace_modes(model, ('tensor', 'predict'))

    names = fuse_conv_bn(model, graphs, fake_quant_factory)

    # stem + 8 blocks x 2 convs + 3 downsample convs
    assert len(names) == 20
    assert 'layer2.0.downsample.0' in names
    assert type(model.layer1[0].conv1) is ConvBnReLU2d
    assert type(model.layer1[0].conv2) is ConvBn2d
    assert type(model.layer1[0].norm1) is nn.Identity
    for graph in graphs.values():
        modules = [model.get_submodule(t) for t in _call_targets(graph)]
        assert not any(isinstance(m, nn.BatchNorm2d) for m in modules)
        assert not any(type(m) is nn.Conv2d for m in modules)
    gms = [fx.GraphModule(model, g) for g in graphs.values()]
    for name in names:
        assert gms[0].get_submodule(name) is gms[1].get_submodule(name)

    set_fake_quant(model, False)
    model.eval()
    x = torch.randn(2, 3, 16, 16)
    for gm in gms:
        for got, want in zip(gm(x), ref(x)):
            torch.testing.assert_close(got, want, atol=1e-5, rtol=1e-5)

    assert swap_qat_modules(model, graphs, fake_quant_factory) == []


class TwoModes(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x, mode='tensor'):
        feat = self.conv(x)
        if mode == 'loss':  # the raw conv output is used too
            return self.bn(feat), feat
        return self.bn(feat)


def _trace_concrete_modes(model, modes=('tensor', 'loss')):
    return {
        mode: fx.Tracer().trace(model, concrete_args={'mode': mode})
        for mode in modes
    }


def test_mismatching_modes_raise_and_leave_model_alone():
    model = TwoModes()
    graphs = _trace_concrete_modes(model)
    with pytest.raises(ValueError, match=r"module 'conv' is followed by BN "
                       r"'bn' in mode 'tensor' but by no fusable BN in mode "
                       r"'loss'(.|\n)*node: %conv"):
        fuse_conv_bn(model, graphs, fake_quant_factory)
    assert type(model.conv) is nn.Conv2d and type(model.bn) is nn.BatchNorm2d
    assert 'bn' in _call_targets(graphs['tensor'])


def test_relu_mismatch_between_modes_raises():

    class M(TwoModes):

        def forward(self, x, mode='tensor'):
            out = self.bn(self.conv(x))
            return out if mode == 'loss' else out.relu()

    model = M()
    graphs = _trace_concrete_modes(model)
    with pytest.raises(ValueError, match="BN 'bn' → ReLU in mode 'tensor' "
                       "but by BN 'bn' in mode 'loss'"):
        fuse_conv_bn(model, graphs, fake_quant_factory)
    assert fuse_conv_bn(model, graphs, fake_quant_factory,
                        fuse_relu=False) == ['conv']


def test_shared_bn_raises():

    class SharedBn(TwoModes):

        def forward(self, x):
            return self.bn(self.conv(x)) + self.bn(x.repeat(1, 2, 1, 1)[:, :4])

    model = SharedBn()
    with pytest.raises(ValueError, match="BN module 'bn' is also called "
                       "outside its conv → BN chain in mode 'tensor'"):
        fuse_conv_bn(model, _trace_modes(model, ('tensor', )),
                     fake_quant_factory)


def test_build_errors_name_the_module():
    model = TwoModes()
    model.bn = nn.BatchNorm2d(4, track_running_stats=False)
    graphs = _trace_concrete_modes(model, ('tensor', ))
    with pytest.raises(ValueError, match=r"cannot fuse 'conv' with BN 'bn' "
                       r"into ConvBn2d\n  node: %conv(.|\n)*"
                       'track_running_stats=False') as info:
        fuse_conv_bn(model, graphs, fake_quant_factory)
    assert isinstance(info.value.__cause__, ValueError)
    assert type(model.conv) is nn.Conv2d

    with pytest.raises(TypeError, match="cannot fuse 'conv'(.|\n)*must "
                       'return a BaseFakeQuantize, got Identity'):
        model = TwoModes()
        fuse_conv_bn(model, _trace_concrete_modes(model, ('tensor', )),
                     lambda name, module: nn.Identity())


def test_skip():
    model = Block()
    graphs = _trace_modes(model, ('tensor', ))
    names = fuse_conv_bn(model, graphs, fake_quant_factory,
                         skip=lambda name: name == 'conv2')
    assert names == ['conv1', 'conv3', 'fc']
    assert type(model.conv2) is nn.Conv2d and type(model.bn2) is nn.BatchNorm2d


class Plain(nn.Module):

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.ReLU()
        self.conv2 = nn.Conv2d(4, 4, 1)
        self.fc = nn.Linear(4, 2)
        self.unused = nn.Conv2d(1, 1, 1)

    def forward(self, x):
        x = self.conv2(self.act(self.conv(x)))
        return self.fc(x.mean((2, 3)))


@pytest.mark.parametrize('fuse_relu', [False, True])
def test_swap_qat_modules(fuse_relu):
    torch.manual_seed(0)
    model = Plain()
    ref = copy.deepcopy(model)
    graphs = _trace_modes(model)
    names = swap_qat_modules(model, graphs, fake_quant_factory,
                             fuse_relu=fuse_relu)
    assert names == ['conv', 'conv2', 'fc']
    assert type(model.conv) is (ConvReLU2d if fuse_relu else QATConv2d)
    assert type(model.conv2) is QATConv2d and type(model.fc) is QATLinear
    assert type(model.unused) is nn.Conv2d  # not called by any graph
    assert model.fc.weight_fake_quant.name == 'fc (weight)'
    expected = ['conv', 'conv2', 'fc'] if fuse_relu else \
        ['conv', 'act', 'conv2', 'fc']
    for graph in graphs.values():
        assert _call_targets(graph) == expected
    set_fake_quant(model, False)
    _assert_same_outputs(model, ref, graphs, torch.randn(2, 3, 8, 8))


def test_swap_after_fuse_and_skip():
    model = Block()
    graphs = _trace_modes(model, ('tensor', ))
    fuse_conv_bn(model, graphs, fake_quant_factory,
                 skip=lambda name: name == 'conv2')
    fused = model.conv1
    names = swap_qat_modules(model, graphs, fake_quant_factory,
                             skip=lambda name: name == 'fc')
    assert names == ['conv2']
    assert model.conv1 is fused and type(model.conv2) is QATConv2d
    assert type(model.fc) is LinearBnReLU1d  # fused earlier, left alone


def test_sync_batchnorm_folds_as_plain_bn():
    """mmseg's and mmpose's configs use SyncBN: folded exactly as the plain
    BN would be (the fused module owns a plain BN sharing its tensors), in
    eval and in train mode (no process group: batch statistics)."""
    torch.manual_seed(0)
    ref = Block()
    model = nn.SyncBatchNorm.convert_sync_batchnorm(copy.deepcopy(ref))
    bn_type = nn.SyncBatchNorm
    assert type(model.bn1) is type(model.bn4) is bn_type
    running_mean = model.bn2.running_mean
    graphs = _trace_modes(model)

    names = fuse_conv_bn(model, graphs, fake_quant_factory)

    assert names == ['conv1', 'conv2', 'conv3', 'fc']
    assert [type(getattr(model, n).bn) for n in names] == [
        nn.BatchNorm2d] * 3 + [nn.BatchNorm1d]
    assert not any(isinstance(m, bn_type) for m in model.modules())
    assert model.conv2.bn.running_mean is running_mean  # shared, not copied
    set_fake_quant(model, False)
    x = torch.randn(5, 4, 6, 6)
    model.eval()
    ref.eval()
    _assert_same_outputs(model, ref, graphs, x)
    model.train()
    ref.train()
    gm = fx.GraphModule(model, graphs['loss'])
    torch.testing.assert_close(gm(x), ref(x), atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(model.conv2.bn.running_mean,
                               ref.bn2.running_mean)
