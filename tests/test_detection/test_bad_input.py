"""Detection bad input: the wrong task's preprocessor, a set without boxes."""
import json
import os.path as osp

import pytest

from mmrazor_quant.datasets import (
    DigitCanvasCocoDataset,
    make_digit_canvas_coco,
)
from mmrazor_quant.registry import MODELS
from .toy_detectors import quant_cfg, retinanet_cfg


def test_classification_preprocessor_on_detector_names_the_key():
    cfg = quant_cfg(retinanet_cfg(), 'openvino')
    cfg['data_preprocessor'] = dict(
        type='mmcls.ClsDataPreprocessor', mean=[0.] * 3, std=[255.] * 3)
    with pytest.raises(ValueError) as info:
        MODELS.build(cfg)
    message = str(info.value)
    assert 'model.data_preprocessor: ClsDataPreprocessor (mmcls)' in message
    assert "type='mmdet.DetDataPreprocessor'" in message


def test_dataset_without_boxes_is_an_error(tmp_path):
    root = make_digit_canvas_coco(str(tmp_path / 'canvases'), num_train=3,
                                  num_val=2)
    ann = osp.join(root, 'annotations', 'val.json')
    with open(ann) as f:
        coco = json.load(f)
    coco['annotations'] = []
    with open(ann, 'w') as f:
        json.dump(coco, f)
    with pytest.raises(ValueError, match=r'val\.json has no boxes'):
        DigitCanvasCocoDataset(data_root=root, split='val', pipeline=[])


def test_mask_rcnn_names_the_roi_head():
    """mmdet's own Mask R-CNN config: the adapter traces Faster R-CNN-like
    detectors (bbox-only RoI head); the mask head is refused before tracing
    with a TraceError naming ``model.roi_head``."""
    from mmrazor_quant.analysis.zoo_check import zoo_config
    from mmrazor_quant.models.task_modules.tracer import TraceError
    cfg = zoo_config('mmdet::mask_rcnn/mask-rcnn_r50_fpn_1x_coco.py')
    model = quant_cfg(retinanet_cfg(), 'openvino')
    model['architecture'] = dict(cfg.model, type='mmdet.MaskRCNN')
    model.pop('data_preprocessor', None)
    with pytest.raises(TraceError, match=r'MaskRCNN \(model\.roi_head, '
                       r'method forward\): its roi_head has a mask head'):
        MODELS.build(model)
