"""YOLO bad input: mmyolo's packed training batch, samples of another task,
a digit-canvas set without boxes; each error names what to change."""
import json
import os.path as osp

import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.datasets import make_digit_canvas_coco
from mmrazor_quant.registry import DATASETS, MODELS
from .tiny_yolos import CONFIGS, REPO, quant_cfg, tiny_arch


@pytest.fixture(scope='module')
def yolov5():
    torch.manual_seed(0)
    return MODELS.build(quant_cfg(tiny_arch('yolov5'))).train()


def test_packed_yolo_batch_names_the_preprocessor_key(yolov5):
    """What mmyolo's YOLOv5DetDataPreprocessor (the *_fast_* configs)
    passes to the loss in training: one dict for the batch."""
    packed = dict(bboxes_labels=torch.tensor([[0., 1., 8., 8., 40., 40.]]),
                  img_metas=[dict(batch_input_shape=(64, 64))])
    with pytest.raises(TypeError, match=r'got dict \(mmyolo.s '
                       'YOLOv5DetDataPreprocessor .*set '
                       'model.data_preprocessor to mmdet.DetDataPreprocessor'):
        yolov5(torch.rand(1, 3, 64, 64), packed, mode='loss')


def test_samples_of_another_task_are_refused(yolov5):
    from mmcls.structures import ClsDataSample
    samples = [ClsDataSample().set_gt_label(1)]
    with pytest.raises(TypeError, match='ClsDataSample has no gt_instances: '
                       'the loss needs DetDataSample'):
        yolov5(torch.rand(1, 3, 64, 64), samples, mode='loss')


def test_yolo_config_dataset_without_boxes_is_an_error(tmp_path):
    root = make_digit_canvas_coco(str(tmp_path / 'canvases'), num_train=3,
                                  num_val=2)
    ann = osp.join(root, 'annotations', 'train.json')
    with open(ann) as f:
        coco = json.load(f)
    coco['annotations'] = []
    with open(ann, 'w') as f:
        json.dump(coco, f)
    cfg = Config.fromfile(osp.join(REPO, CONFIGS['yolov5']))
    dataset = dict(cfg.train_dataloader.dataset, data_root=root)
    dataset.pop('filter_cfg')  # keep the empty images, as a test set would
    with pytest.raises(ValueError, match=r'train\.json has no boxes'):
        DATASETS.build(dataset)
