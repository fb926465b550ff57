"""Exported detector (QDQ ONNX, tensor outputs) vs the simulation, in
onnxruntime and OpenVINO, on digit canvases."""
import glob
import os.path as osp

import cv2
import pytest
import torch

from mmrazor_quant.datasets import make_digit_canvas_coco
from mmrazor_quant.deploy import export_model
from mmrazor_quant.deploy.detection import DetectionDeployHead
from mmrazor_quant.models.fake_quants.utils import disable_observer
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits
from .toy_detectors import quant_cfg, retinanet_cfg


@pytest.fixture(scope='module')
def canvas_root(tmp_path_factory):
    return make_digit_canvas_coco(
        str(tmp_path_factory.mktemp('canvas')), num_train=8, num_val=8)


@pytest.fixture(scope='module')
def canvases(canvas_root):
    """8 val canvases (96x96) as a preprocessed batch."""
    root = canvas_root
    files = sorted(glob.glob(osp.join(root, 'val', '*.png')))
    images = [torch.from_numpy(cv2.imread(f)).permute(2, 0, 1)
              for f in files]
    return torch.stack(images).float() / 255.


@pytest.fixture(scope='module')
def exported(canvases, tmp_path_factory):
    """The tiny RetinaNet, calibrated on the canvases, exported per
    backend (OpenVINO's weights on 7 bits where this CPU's int8 kernels
    saturate)."""
    arch = retinanet_cfg()
    arch.test_cfg.score_thr = 0.0  # compare a full top-20 per image
    out = {}
    for backend in ('openvino', 'tensorrt'):
        torch.manual_seed(0)
        weight_bits = int8_weight_bits() if backend == 'openvino' else 8
        model = MODELS.build(quant_cfg(arch, backend,
                                       weight_bits=weight_bits)).eval()
        with torch.no_grad():
            model(canvases, mode='tensor')
        disable_observer(model)
        path = str(tmp_path_factory.mktemp(backend) / 'retinanet.onnx')
        result = export_model(model, canvases[:1], path, backend=backend)
        out[backend] = (model, result.deploy_model, path)
    return out


# OpenVINO needs the exporter's guard before the quantization of the FPN's
# coarser lateral output, which also feeds the upsampling in float: without
# it that level's head outputs reached 2-10 dB (deploy/openvino/passes.py).
@pytest.mark.parametrize('backend,runtime', [
    ('openvino', 'onnxruntime'),
    ('openvino', 'openvino'),
    ('tensorrt', 'onnxruntime'),
])
def test_head_outputs_and_boxes_match_simulation(backend, runtime, exported,
                                                 canvases):
    model, deploy, path = exported[backend]
    # the deploy model the export wrote is the one simulated
    report = DetectionDeployHead().check_parity(model, deploy, path,
                                                canvases, [], runtime)
    assert report.num_samples == 8
    assert report.sqnr_db > 35, report
    assert report.agreement >= 0.95, report


def test_box_agreement_counts_equal_zero_area_boxes():
    """A zero-area box (a low-score box of an unused level) has no IoU,
    not even with itself: equal corners count as reproduced, a shifted
    box or another label does not."""
    from mmengine.structures import InstanceData

    from mmrazor_quant.deploy.detection import BOX_CORNER_TOL, _box_agreement

    def boxes(coords, labels):
        return InstanceData(bboxes=torch.tensor(coords, dtype=torch.float),
                            labels=torch.tensor(labels))

    sim = boxes([[0., 88.1, 0., 88.2], [10., 10., 30., 40.]], [3, 5])
    assert _box_agreement([sim], [sim]) == 1.0
    near = boxes([[0., 88.1 + BOX_CORNER_TOL / 2, 0., 88.2],
                  [10., 10., 30., 40.]], [3, 5])
    assert _box_agreement([sim], [near]) == 1.0
    far = boxes([[0., 88.1 + 2 * BOX_CORNER_TOL, 0., 88.2],
                 [10., 10., 30., 40.]], [3, 7])
    assert _box_agreement([sim], [far]) == 0.0


def test_predictions_and_metric_are_those_of_predict_mode(exported, canvases,
                                                          canvas_root):
    """The deploy head decodes flat tensor outputs into what the model's
    ``predict`` mode gives (boxes rescaled to the original image), and its
    metrics of them are the config's metric of ``predict``'s samples."""
    from mmdet.evaluation import CocoMetric
    from mmdet.structures import DetDataSample
    from mmengine.evaluator import Evaluator

    from mmrazor_quant.datasets.digit_canvas import DIGIT_CLASSES
    from mmrazor_quant.deploy.parity import flat_outputs
    model = exported['tensorrt'][0]

    def samples():
        # inputs at half the original size: boxes come back doubled
        return [DetDataSample(metainfo=dict(
            img_id=i, img_shape=(96, 96), ori_shape=(192, 192),
            scale_factor=(0.5, 0.5))) for i in range(len(canvases))]

    head = DetectionDeployHead()
    with torch.no_grad():
        outputs = flat_outputs(model(canvases, mode='tensor'))
        expected = model(canvases, samples(), mode='predict')
    decoded = head.predictions(model, outputs, canvases, samples())
    for ours, theirs in zip(decoded, expected):
        torch.testing.assert_close(ours.pred_instances.bboxes,
                                   theirs.pred_instances.bboxes)
        assert torch.equal(ours.pred_instances.labels,
                           theirs.pred_instances.labels)
        assert float(ours.pred_instances.bboxes.max()) > 96

    def evaluator():
        metric = Evaluator(CocoMetric(
            ann_file=osp.join(canvas_root, 'annotations', 'val.json')))
        metric.dataset_meta = dict(classes=DIGIT_CLASSES)
        return metric

    # the metric of predict mode's samples, on the images' own scale
    def at_scale():
        return [DetDataSample(metainfo=dict(
            img_id=i, img_shape=(96, 96), ori_shape=(96, 96),
            scale_factor=(1., 1.))) for i in range(len(canvases))]

    reference = evaluator()
    with torch.no_grad():
        reference.process(model(canvases, at_scale(), mode='predict'))
    ours = head.metrics(evaluator(), model, outputs, canvases, at_scale())
    assert set(ours) >= {'coco/bbox_mAP', 'coco/bbox_mAP_50'}
    assert ours == pytest.approx(reference.evaluate(len(canvases)))
