"""mmdet's and mmyolo's modules registered once; tiny versions of the
project's YOLOv5-n and RTMDet-tiny configs (mmyolo's own models at 1/8
width, 3 classes) and a batch of digit canvases."""
import glob
import os.path as osp

import cv2
import pytest
import torch

from mmrazor_quant.datasets import make_digit_canvas_coco
from .tiny_yolos import CONFIGS


@pytest.fixture(scope='session', autouse=True)
def mmyolo_modules():
    from mmdet.utils import register_all_modules as register_mmdet
    from mmyolo.utils import register_all_modules as register_mmyolo
    register_mmdet(init_default_scope=False)
    register_mmyolo(init_default_scope=False)


@pytest.fixture(params=sorted(CONFIGS))
def arch_name(request):
    return request.param


@pytest.fixture(scope='session')
def canvases(tmp_path_factory):
    """8 val canvases (96x96 real MNIST digits) as a preprocessed batch."""
    root = make_digit_canvas_coco(
        str(tmp_path_factory.mktemp('canvas')), num_train=8, num_val=8)
    files = sorted(glob.glob(osp.join(root, 'val', '*.png')))
    images = [torch.from_numpy(cv2.imread(f)).permute(2, 0, 1)
              for f in files]
    return torch.stack(images).float() / 255.
