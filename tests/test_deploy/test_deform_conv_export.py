"""mmcv's deformable convolution exports as GridSample taps and a grouped
1 x 1 conv that onnxruntime and OpenVINO run to mmcv's own numbers."""
import numpy as np
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy.deform_conv import (
    deform_conv2d_by_sampling,
    onnx_deform_conv,
)

# (in, out, kernel, stride, padding, groups, deform groups, size): VFNet's
# 3 x 3, TOOD's per-channel 1 x 1 sampling, strided with two deform groups
CASES = [(8, 8, 3, 1, 1, 1, 1, 6), (8, 8, 1, 1, 0, 8, 8, 5),
         (4, 6, 3, 2, 1, 1, 2, 7)]


def _case(c, o, k, s, p, g, dg, hw):
    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, c, hw, hw, generator=gen)
    ho = (hw + 2 * p - k) // s + 1
    # offsets of a few pixels: taps fall between pixels and off the image
    offset = torch.randn(2, dg * 2 * k * k, ho, ho, generator=gen) * 2
    weight = torch.randn(o, c // g, k, k, generator=gen)
    return x, offset, weight


@pytest.mark.parametrize('c,o,k,s,p,g,dg,hw', CASES)
def test_sampling_form_equals_mmcv(c, o, k, s, p, g, dg, hw):
    ops = pytest.importorskip('mmcv.ops')
    x, offset, weight = _case(c, o, k, s, p, g, dg, hw)
    ref = ops.deform_conv2d(x, offset, weight, s, p, 1, g, dg)
    out = deform_conv2d_by_sampling(x, offset, weight, s, p, 1, g, dg)
    assert out.shape == ref.shape
    # float32 sums in another order: 1e-6 of outputs ~10
    torch.testing.assert_close(out, ref, rtol=0, atol=2e-5)


class _Head(nn.Module):
    """VFNet's use: a ``DeformConv2d`` on a feature map with offsets."""

    def __init__(self):
        super().__init__()
        from mmcv.ops import DeformConv2d
        self.dconv = DeformConv2d(8, 8, 3, padding=1)

    def forward(self, x, offset):
        return self.dconv(x, offset)


def test_deform_conv_exports_and_runs_in_both_runtimes(tmp_path):
    pytest.importorskip('mmcv.ops')
    ort = pytest.importorskip('onnxruntime')
    ov = pytest.importorskip('openvino')
    import onnx
    model = _Head().eval()
    x, offset, _ = _case(8, 8, 3, 1, 1, 1, 1, 6)
    path = str(tmp_path / 'dconv.onnx')
    with onnx_deform_conv(), torch.no_grad():
        torch.onnx.export(model, (x, offset), path, opset_version=17,
                          dynamo=False, input_names=['x', 'offset'])
    from mmcv.ops import deform_conv
    assert deform_conv.deform_conv2d is not deform_conv2d_by_sampling
    ops = {n.op_type for n in onnx.load(path).graph.node}
    assert 'GridSample' in ops and not any("Deform" in op for op in ops)
    with torch.no_grad():
        ref = model(x, offset).numpy()
    feeds = {'x': x.numpy(), 'offset': offset.numpy()}
    out_ort = ort.InferenceSession(path).run(None, feeds)[0]
    # f32 as the project's OpenVINO runtime compiles (no bf16 hint)
    out_ov = ov.Core().compile_model(
        path, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})(feeds)[0]
    np.testing.assert_allclose(out_ort, ref, atol=5e-5)
    np.testing.assert_allclose(out_ov, ref, atol=5e-5)
