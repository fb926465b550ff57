"""mmcv's RoIAlign exports as ONNX ``RoiAlign``-16 that onnxruntime and
OpenVINO run to mmcv's own numbers (the RoI extractor of a two-stage
detector stays float in the export)."""
import numpy as np
import pytest
import torch
from torch import nn

from mmrazor_quant.deploy.roi_align import onnx_roi_align


class _Extractor(nn.Module):

    def __init__(self, aligned: bool, sampling_ratio: int):
        super().__init__()
        from mmcv.ops import RoIAlign
        self.roi = RoIAlign(7, spatial_scale=0.25,
                            sampling_ratio=sampling_ratio, aligned=aligned)
        # rois of both images, fractional corners, one past the border
        self.register_buffer('rois', torch.tensor(
            [[0, 1.3, 2.7, 30.2, 25.9], [1, 0., 0., 63., 63.],
             [1, 40.5, 8.25, 70., 33.]]))

    def forward(self, x):
        return self.roi(x, self.rois)


@pytest.mark.parametrize('aligned,sampling_ratio', [(True, 0), (False, 2)])
def test_roi_align_exports_as_onnx_roialign(tmp_path, aligned,
                                            sampling_ratio):
    pytest.importorskip('mmcv.ops')
    ort = pytest.importorskip('onnxruntime')
    ov = pytest.importorskip('openvino')
    import onnx
    model = _Extractor(aligned, sampling_ratio).eval()
    x = torch.randn(2, 8, 16, 16, generator=torch.Generator().manual_seed(0))
    path = str(tmp_path / 'roi.onnx')
    with onnx_roi_align(model), torch.no_grad():
        torch.onnx.export(model, (x, ), path, opset_version=17,
                          dynamo=False, input_names=['x'])
    # the swap is undone: mmcv's own forward again
    assert 'forward' not in vars(model.roi)
    graph = onnx.load(path)
    onnx.checker.check_model(graph, full_check=True)
    ops = [n for n in graph.graph.node if n.op_type == 'RoiAlign']
    assert len(ops) == 1
    mode = {a.name: a for a in ops[0].attribute}
    assert mode['coordinate_transformation_mode'].s.decode() == (
        'half_pixel' if aligned else 'output_half_pixel')
    with torch.no_grad():
        ref = model(x).numpy()
    assert ref.shape == (3, 8, 7, 7)
    out_ort = ort.InferenceSession(path).run(None, {'x': x.numpy()})[0]
    out_ov = ov.Core().compile_model(path, 'CPU')({'x': x.numpy()})[0]
    # bilinear sums of 4 float32 products: agree to float32 rounding
    np.testing.assert_allclose(out_ort, ref, atol=1e-5)
    np.testing.assert_allclose(out_ov, ref, atol=1e-5)
