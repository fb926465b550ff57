"""Fake-quant positions of a YOLOv5 C3 block behind a neck concat, checked
by hand against the rule tables of docs/backends.md."""
import pytest
import torch
from mmcv.cnn import ConvModule
from mmdet.models.layers import CSPLayer
from torch import nn

from mmrazor_quant.models.quantizers import (
    OpenVINOQuantizer,
    TensorRTQuantizer,
)
from ..test_models.test_quantizers.test_positions import (
    W8_SIGNED,
    fake_quant_consumers,
    qconfig,
)

ACT = dict(type='SiLU', inplace=True)
NORM = dict(type='BN', momentum=0.03, eps=0.001)


def _conv(cin, cout, k, stride=1):
    return ConvModule(cin, cout, k, stride, k // 2, norm_cfg=NORM,
                      act_cfg=ACT)


class NeckC3(nn.Module):
    """YOLOv5PAFPN's top-down step on a backbone stem: the coarser level
    reduced (1x1) and upsampled, concatenated with the finer one, then a
    C3 block (mmdet's ``CSPLayer`` as mmyolo's YOLOv5 builds it: main and
    short 1x1 branches, a bottleneck with identity on the main one, concat,
    1x1 fuse) and a prediction conv."""

    def __init__(self) -> None:
        super().__init__()
        self.stem = _conv(3, 4, 3)
        self.down = _conv(4, 8, 3, 2)
        self.reduce = _conv(8, 4, 1)
        self.up = nn.Upsample(scale_factor=2, mode='nearest')
        self.c3 = CSPLayer(8, 4, expand_ratio=0.5, num_blocks=1,
                           add_identity=True, norm_cfg=NORM, act_cfg=ACT)
        self.pred = nn.Conv2d(4, 6, 1)

    def forward(self, x, mode='tensor'):
        p4 = self.stem(x)
        top = self.up(self.reduce(self.down(p4)))
        return self.pred(self.c3(torch.cat([top, p4], 1)))


# fake quant -> its consumers. SiLU is an activation fused into its conv:
# each conv's output is quantized after the SiLU, where a conv reads it.
# Both concats are quantization-agnostic and so is the nearest upsampling:
# neither concat input carries its own fake quant, the concat's output is
# quantized once for the convs that read it. Every input of a concat thus
# shares one scale, which is what OpenVINO (its Concat transformation
# aligns the intervals) and TensorRT (a Q after a concat is moved onto
# every input with the same scale) need to keep the concat in int8. The
# stem's output reaches the neck concat in float (its fake quant is the
# down conv's input). The bottleneck's add follows a SiLU, so TensorRT
# cannot fuse it into the conv as a residual: both backends quantize both
# add inputs, and they agree on the whole block.
EXPECTED = {
    'x': ['stem_conv'],
    'stem_activate': ['down_conv'],
    'down_activate': ['reduce_conv'],
    'cat': ['c3_main_conv_conv', 'c3_short_conv_conv'],
    'c3_main_conv_activate': ['add', 'c3_blocks_0_conv1_conv'],
    'c3_blocks_0_conv1_activate': ['c3_blocks_0_conv2_conv'],
    'c3_blocks_0_conv2_activate': ['add'],
    'c3_cat': ['c3_final_conv_conv'],
    'c3_final_conv_activate': ['pred'],
}


@pytest.mark.parametrize('quantizer_cls,a_qscheme', [
    (OpenVINOQuantizer, dict(qdtype='quint8', bit=8, is_symmetry=True)),
    # the YOLO OpenVINO configs' scheme: the positions do not depend on it
    (OpenVINOQuantizer, dict(qdtype='quint8', bit=8, is_symmetry=False)),
    (TensorRTQuantizer, W8_SIGNED),
])
def test_c3_block_and_neck_concat_positions(quantizer_cls, a_qscheme):
    quantizer = quantizer_cls(global_qconfig=qconfig(a_qscheme))
    model = NeckC3()
    graph = quantizer.prepare(model, ('tensor', ))['tensor'].graph
    assert fake_quant_consumers(graph) == EXPECTED
    for node in graph.nodes:
        if node.target is torch.cat:  # no fake quant before a concat
            inputs = node.args[0]
            assert not any('act_fake_quants' in str(i.target)
                           for i in inputs), node
    weighted = {n for n, m in model.named_modules()
                if hasattr(m, 'weight_fake_quant')}
    assert weighted == {
        'stem.conv', 'down.conv', 'reduce.conv', 'c3.main_conv.conv',
        'c3.short_conv.conv', 'c3.blocks.0.conv1.conv',
        'c3.blocks.0.conv2.conv', 'c3.final_conv.conv', 'pred'}
