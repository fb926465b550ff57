"""mmpose 1.3.2 declares chumpy, which does not import on Python 3.11 or
numpy 2; the install leaves it out. Building, tracing and running the pose
models and mmpose's evaluators must not need it."""
import os.path as osp
import subprocess
import sys

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))

SCRIPT = r'''
import sys
import numpy as np
import torch
from mmengine.config import Config
from mmengine.registry import DefaultScope
import mmpose.utils
from mmrazor_quant.registry import MODELS
mmpose.utils.register_all_modules(init_default_scope=False)
for path in ('configs/pose/rtmpose_t_digits.py',
             'configs/pose/simplebaseline_r18_digits.py'):
    cfg = Config.fromfile(path)
    with DefaultScope.overwrite_default_scope('mmpose'):
        model = MODELS.build(cfg.model).eval()
        model(torch.zeros(1, 3, 64, 64), None, mode='tensor')
import json, os, tempfile
from mmpose.datasets.datasets.utils import parse_pose_metainfo
from mmpose.evaluation import CocoMetric
from mmrazor_quant.datasets import PoseDigitsDataset
points = [[5., 2., 2.], [6., 20., 2.], [2., 9., 2.], [12., 10., 2.],
          [7., 11., 2.]]
ann = dict(id=1, image_id=1, category_id=1, bbox=[2., 2., 11., 19.],
           area=209., iscrowd=0, num_keypoints=5,
           keypoints=sum(points, []))
path = os.path.join(tempfile.mkdtemp(), 'gt.json')
with open(path, 'w') as f:
    json.dump(dict(images=[dict(id=1, width=28, height=28,
                                file_name='1.png')],
                   annotations=[ann],
                   categories=[dict(id=1, name='digit')]), f)
metric = CocoMetric(ann_file=path)
metric.dataset_meta = parse_pose_metainfo(PoseDigitsDataset.METAINFO)
gt = np.array([points])[..., :2]
metric.process([], [dict(
    id=1, img_id=1, category_id=1, ori_shape=(28, 28),
    gt_instances=dict(bboxes=np.array([[2., 2., 13., 21.]]),
                      bbox_scores=np.ones(1)),
    pred_instances=dict(keypoints=gt, keypoint_scores=np.ones((1, 5)),
                        bbox_scores=np.ones(1)))])
assert abs(metric.evaluate(1)['coco/AP'] - 1.0) < 1e-9
assert 'chumpy' not in sys.modules, 'chumpy was imported'
print('ok')
'''


def test_pose_path_needs_no_chumpy():
    out = subprocess.run([sys.executable, '-c', SCRIPT], capture_output=True,
                         text=True, timeout=300, cwd=REPO)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith('ok')
