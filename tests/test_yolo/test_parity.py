"""Exported YOLOv5 and RTMDet (QDQ ONNX, the heads' per-level outputs;
decoding outside the graph) vs the simulation, in onnxruntime and OpenVINO,
on digit canvases, through the detection deploy head."""
import pytest
import torch
from torch import nn

from mmrazor_quant.backends import get_backend
from mmrazor_quant.deploy import deploy_head_of, export_model
from mmrazor_quant.models.fake_quants.utils import disable_observer
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits
from .tiny_yolos import quant_cfg, tiny_arch

_EXPORTED = {}


def _exported(arch_name, backend, canvases, tmp_path_factory):
    """The tiny model, calibrated on the canvases, exported for
    ``backend`` (OpenVINO's weights on 7 bits where this CPU's int8 kernels
    saturate); built once per pair."""
    key = (arch_name, backend)
    if key not in _EXPORTED:
        arch = tiny_arch(arch_name)
        arch.test_cfg.update(score_thr=0.0, max_per_img=20)
        torch.manual_seed(0)
        bits = int8_weight_bits() if backend == 'openvino' else 8
        model = MODELS.build(quant_cfg(arch, backend,
                                       weight_bits=bits)).eval()
        # Untrained, RTMDet predicts distances near 0: degenerate boxes
        # that no IoU matches. Positive ones give boxes to compare.
        for conv in getattr(model.architecture.bbox_head.head_module,
                            'rtm_reg', []):
            nn.init.constant_(conv.bias, 1.0)
        with torch.no_grad():
            model(canvases, mode='tensor')
        disable_observer(model)
        path = str(tmp_path_factory.mktemp(backend) / f'{arch_name}.onnx')
        export_model(model, canvases[:1], path, backend=backend)
        _EXPORTED[key] = (model, path)
    return _EXPORTED[key]


# Lowest head-output SQNR measured on a VNNI CPU (8-bit weights): yolov5
# 52.0, 46.1 and 75.8 dB, rtmdet 91.0 dB; the bounds leave room for other
# CPUs' kernels. The trained models' figures are in docs/detection.md.
@pytest.mark.parametrize('arch_name,backend,runtime,min_db', [
    ('yolov5', 'openvino', 'onnxruntime', 45),
    ('yolov5', 'openvino', 'openvino', 40),
    ('yolov5', 'tensorrt', 'onnxruntime', 65),
    ('rtmdet', 'openvino', 'openvino', 80),
])
def test_head_outputs_and_boxes_match_simulation(arch_name, backend, runtime,
                                                 min_db, canvases,
                                                 tmp_path_factory):
    # Noise on the black background: an untrained head scores its flat
    # regions alike, and ties would decide which boxes make the top 20.
    torch.manual_seed(1)
    canvases = (canvases + 0.5 * torch.rand_like(canvases)).clamp(0, 1)
    model, path = _exported(arch_name, backend, canvases, tmp_path_factory)
    head = deploy_head_of(model)
    assert type(head).__name__ == 'DetectionDeployHead'
    # the backend's own runtime with its options (TensorRT's arithmetic:
    # onnxruntime without the int8 Q/DQ fusion)
    target = get_backend(backend)
    options = dict(target.runtime_options) \
        if runtime == target.runtime else {}
    report = head.check_parity(model, model.get_deploy_model(), path,
                               canvases, [], runtime, **options)
    assert report.num_samples == 8
    assert report.sqnr_db > min_db, report.format()
    # The untrained head's top 20 are cut among near-equal scores: the
    # YOLOv5 OpenVINO export in OpenVINO reproduces 151 of 160 boxes.
    assert report.agreement >= 0.94, report.format()
