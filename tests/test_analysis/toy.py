"""A small conv net with one layer made hard to quantize."""
import torch
from torch import nn

from mmrazor_quant.models.quantizers import AcademicQuantizer

LAYERS = ('conv1', 'conv2', 'conv3', 'conv4', 'fc')
HARD = 'conv3'


class ChainNet(nn.Module):
    """conv-relu x4, global average pooling, linear; mmengine-style
    ``forward(inputs, data_samples=None, mode)``."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1)
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv3 = nn.Conv2d(8, 8, 3, padding=1)
        self.conv4 = nn.Conv2d(8, 8, 3, padding=1)
        self.relu = nn.ReLU()
        self.fc = nn.Linear(8, 4)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = inputs
        for conv in (self.conv1, self.conv2, self.conv3, self.conv4):
            x = self.relu(conv(x))
        logits = self.fc(x.mean((2, 3)))
        return logits if mode == 'tensor' else logits.argmax(1)


def add_weight_outliers(conv: nn.Conv2d, factor: float = 50.0) -> None:
    """Scale one weight per output channel by ``factor``: a per-channel
    min/max range then spends its levels on the outlier and rounds the
    other weights of the channel to zero."""
    with torch.no_grad():
        weight = conv.weight.view(conv.out_channels, -1)
        weight[:, 0] *= factor


def qconfig(bit: int = 4) -> dict:
    return dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=dict(qdtype='qint8', bit=bit, is_symmetry=True),
        a_qscheme=dict(qdtype='quint8', bit=bit, is_symmetry=False))


def inputs(batches: int = 2, seed: int = 0):
    gen = torch.Generator().manual_seed(seed)
    return [torch.randn(8, 3, 12, 12, generator=gen) for _ in range(batches)]


def build(hard: bool = True, bit: int = 4, module_name=None, seed: int = 0):
    """The quantized, calibrated ``tensor`` GraphModule and the model."""
    torch.manual_seed(seed)
    model = ChainNet().eval()
    if hard:
        add_weight_outliers(getattr(model, HARD))
    mapping = dict(_global_=qconfig(bit))
    if module_name is not None:
        mapping['module_name'] = module_name
    quantizer = AcademicQuantizer(qconfig_mapping=mapping)
    gm = quantizer.prepare(model, ('tensor', ))['tensor']
    calibrate(gm, inputs())
    return gm, model


def calibrate(gm, batches) -> None:
    from mmrazor_quant.models.fake_quants.utils import (
        disable_fake_quant,
        disable_observer,
        enable_fake_quant,
        enable_observer,
    )
    gm.eval()
    enable_observer(gm)
    disable_fake_quant(gm)
    with torch.no_grad():
        for x in batches:
            gm(x)
    disable_observer(gm)
    enable_fake_quant(gm)
