"""Bad input to the mmpose adapter, the pose data and the pose deploy head:
clear errors naming the key."""
import copy
import json
import os
import os.path as osp
import shutil

import pytest
import torch
from mmengine.registry import DefaultScope

from mmrazor_quant.datasets import PoseDigitsDataset
from mmrazor_quant.models.codebases import MMPoseCodebase
from mmrazor_quant.registry import MODELS
from .conftest import quant_cfg, simplebaseline_cfg


def test_data_sample_of_another_codebase():
    from mmcls.structures import ClsDataSample
    with pytest.raises(TypeError, match=r'data_samples\[0\] is a '
                       'ClsDataSample; mmpose models take PoseDataSample'):
        MMPoseCodebase().gt_keypoints([ClsDataSample()])


def test_data_sample_without_keypoints():
    from mmpose.structures import PoseDataSample
    with pytest.raises(KeyError, match='gt_instances.keypoints'):
        MMPoseCodebase().gt_keypoints([PoseDataSample()])


def test_outputs_of_unknown_kind():
    with pytest.raises(TypeError, match='neither SimCC vectors'):
        MMPoseCodebase().dummy_data_samples(torch.zeros(1, 3, 8, 8),
                                            torch.zeros(1, 10))


def test_dataset_without_keypoints(digits_root, tmp_path):
    root = str(tmp_path / 'no_keypoints')
    shutil.copytree(digits_root, root)
    path = osp.join(root, 'annotations', 'val.json')
    with open(path) as f:
        coco = json.load(f)
    for ann in coco['annotations']:
        del ann['keypoints']
    with open(path, 'w') as f:
        json.dump(coco, f)
    with pytest.raises(KeyError, match='has no `keypoints`'):
        PoseDigitsDataset(data_root=root, split='val')
    os.remove(path)


def test_flip_test_needs_data_samples(digits_batch):
    from mmrazor_quant.models.fake_quants.utils import disable_observer
    arch = simplebaseline_cfg()
    arch.test_cfg.flip_test = True
    with DefaultScope.overwrite_default_scope('mmpose'):
        model = MODELS.build(quant_cfg(arch)).eval()
    inputs = digits_batch['inputs'][:2]
    with torch.no_grad():
        model(inputs, mode='tensor')
    disable_observer(model)
    with pytest.raises(ValueError, match='flip_indices for '
                       r'model.test_cfg.flip_test=True'):
        model(inputs, None, mode='predict')


def test_deploy_head_needs_a_codec(calibrated):
    from mmrazor_quant.deploy.pose import PoseDeployHead
    model = copy.deepcopy(calibrated('simplebaseline', 'openvino'))
    model.architecture.head.decoder = None
    with pytest.raises(ValueError, match=r'`head.decoder`'):
        PoseDeployHead().check_parity(model, None, 'x.onnx',
                                      torch.zeros(1, 3, 64, 64), [],
                                      'onnxruntime')
