"""ncnn: the project's YOLOv5-n config (mmyolo's model, the head's raw
per-level outputs) exported as ncnn's int8 ``.param``/``.bin`` and run in
ncnn's runtime against the simulation of its arithmetic; and the data
movement layers of the writer (``Reshape``, ``Crop``) checked on their
own."""
import glob
import os
import os.path as osp

import cv2
import pytest
import torch
from mmengine.config import Config
from torch import nn

from mmrazor_quant.backends import get_backend
from mmrazor_quant.datasets import make_digit_canvas_coco
from mmrazor_quant.deploy import deploy_head_of, export_model
from mmrazor_quant.deploy.ncnn import NCNNExportError
from mmrazor_quant.deploy.ncnn.swish import cpu_vendor, ncnn_x86_path
from mmrazor_quant.deploy.parity import check_parity
from mmrazor_quant.models.fake_quants.utils import disable_observer
from mmrazor_quant.registry import MODELS

ncnn = pytest.importorskip('ncnn', reason='ncnn is not installed: run '
                           '`make ncnn`')

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = 'configs/quantization/ptq/yolo/ptq_ncnn_yolov5_n_digits.py'


def _canvases(root: str, split: str) -> torch.Tensor:
    files = sorted(glob.glob(osp.join(root, split, '*.png')))
    images = [torch.from_numpy(cv2.imread(f)).permute(2, 0, 1)
              for f in files]
    return torch.stack(images).float() / 255.


@pytest.fixture(scope='module')
def yolov5(tmp_path_factory):
    """``CONFIG``'s model (full-width YOLOv5-n, 10 classes, seeded
    initialisation: no trained checkpoint here) calibrated on 16 training
    canvases, exported for ncnn; and 16 validation canvases."""
    from mmdet.utils import register_all_modules as register_mmdet
    from mmyolo.utils import register_all_modules as register_mmyolo
    register_mmdet(init_default_scope=False)
    register_mmyolo(init_default_scope=False)
    root = make_digit_canvas_coco(str(tmp_path_factory.mktemp('canvas')),
                                  num_train=16, num_val=16)
    cfg = Config.fromfile(osp.join(REPO, CONFIG))
    cfg.model.float_checkpoint = None
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).eval()
    with torch.no_grad():
        model(_canvases(root, 'train'), mode='tensor')
    disable_observer(model)
    val = _canvases(root, 'val')
    path = str(tmp_path_factory.mktemp('ncnn') / 'yolov5_n.onnx')
    result = export_model(model, val[:1], path, backend='ncnn')
    return model, result, val


@pytest.mark.slow
def test_yolov5_head_outputs_in_ncnn_match_the_simulation(yolov5):
    """Every op of YOLOv5-n has an ncnn layer computing as the simulation
    does, SiLU included (ncnn's x86 ``Swish`` kernel, emulated bit for
    bit): on 16 canvases the 9 head outputs (class, box and objectness
    maps of 3 levels) are ncnn's bit for bit where the emulation was
    checked against ncnn (AVX-512 on an Intel CPU; measured 100 % of the
    boxes, max difference 0). Elsewhere (another vendor's reciprocal
    estimate, another instruction set) a last-bit difference can flip a
    rounding tie of a conv's input: at least 45 dB and 99 % of the boxes."""
    model, result, val = yolov5
    with open(result.onnx_path) as f:
        types = {line.split()[0] for line in f.read().split('\n')[2:]
                 if line.strip()}
    assert {'Convolution', 'Swish', 'BinaryOp', 'Concat', 'Interp',
            'Pooling', 'Split', 'Reshape', 'Crop'} <= types
    backend = get_backend('ncnn')
    head = deploy_head_of(model)
    report = head.check_parity(model, result.deploy_model, result.onnx_path,
                               val, [], backend.runtime,
                               **backend.runtime_options)
    assert report.num_samples == 16 and report.num_outputs == 9
    assert report.sqnr_db >= 45, report.format()
    assert report.agreement >= 0.99, report.format()
    if ncnn_x86_path() == 'avx512' and cpu_vendor() == 'GenuineIntel':
        assert report.agreement == 1.0, report.format()
        assert report.max_abs_diff == 0, report.format()


class _Heads(nn.Module):
    """A conv whose output is viewed as ``(b, 3, 6, h, w)`` and sliced on
    the third axis, as YOLOv5's head splits its prediction map."""

    def __init__(self, step: int = 1) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 18, 3, padding=1)
        self.step = step

    def forward(self, inputs, data_samples=None, mode='tensor'):
        y = self.conv(inputs)
        b, h, w = y.shape[0], y.shape[2], y.shape[3]
        y = y.view(b, 3, 6, h, w)
        return (y[:, :, 4:, ...].reshape(b, -1, h, w),
                y[:, :, :4:self.step, ...].reshape(b, -1, h, w))


def _quantized(module: nn.Module) -> nn.Module:
    from mmrazor_quant.analysis.model_check import (
        calibrate_and_freeze,
        quantize_w8a8,
    )
    qmodel = quantize_w8a8(module, 'ncnn', (2, 5, 5), ('tensor', ))
    torch.manual_seed(0)
    calibrate_and_freeze(qmodel, [torch.randn(4, 2, 5, 5)])
    return qmodel


def test_view_and_slices_are_reshape_and_crop(tmp_path):
    qmodel = _quantized(_Heads())
    x = torch.randn(6, 2, 5, 5)
    result = export_model(qmodel, x[:1], str(tmp_path / 'h.onnx'), 'ncnn')
    report = check_parity(result.deploy_model, result.onnx_path, x, 'ncnn',
                          packing=False)
    assert report.num_outputs == 2
    # data movement only: ncnn returns the simulation's numbers exactly
    assert report.max_abs_diff == 0, report.format()


def test_a_strided_slice_is_refused_naming_the_layer(tmp_path):
    qmodel = _quantized(_Heads(step=2))
    with pytest.raises(NCNNExportError, match=r'layer getitem_\d+ '
                       r'\(indexing with'):
        export_model(qmodel, torch.randn(1, 2, 5, 5),
                     str(tmp_path / 'h.onnx'), 'ncnn')
    assert os.listdir(tmp_path) == []
