"""Tiny RTMPose and SimpleBaseline traced and quantized in tensor, predict
and loss modes by the mmpose adapter, with one training step."""
import copy

import numpy as np
import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.models.codebases import MMPoseCodebase, codebase_of
from mmrazor_quant.registry import MODELS
from .conftest import RTMPOSE


@pytest.fixture(params=['rtmpose', 'simplebaseline'])
def qmodel(request, calibrated):
    """The tiny model, calibrated on the 16 digits (OpenVINO W8A8)."""
    return calibrated(request.param, 'openvino')


def test_adapter_and_input_shape():
    cfg = Config.fromfile(RTMPOSE)
    model = MODELS.build(cfg.model)
    adapter = codebase_of(model)
    assert isinstance(adapter, MMPoseCodebase)
    assert adapter.task == 'pose'
    assert adapter.input_shape(model, cfg.val_pipeline) == (
        (3, 64, 64), "the test pipeline's TopdownAffine")
    # without a pipeline: the SimCC head's codec
    assert adapter.input_shape(model) == ((3, 64, 64),
                                          "the head's codec input_size")
    wide = [dict(type='TopdownAffine', input_size=(48, 64))]
    assert adapter.pipeline_hw(wide)[0] == (64, 48)


def test_modes_agree_and_predict_decodes_tensor(qmodel, digits_batch):
    inputs = digits_batch['inputs']
    samples = digits_batch['data_samples']
    with torch.no_grad():
        outputs = qmodel(inputs, mode='tensor')
        preds = qmodel(inputs, samples, mode='predict')
    outputs = [outputs] if isinstance(outputs, torch.Tensor) else outputs
    from mmrazor_quant.deploy.pose import decode_keypoints
    in_input = decode_keypoints(qmodel.architecture.head, outputs)
    # predict = the same head outputs, decoded and mapped back to the image
    # by the box's centre and scale (mmpose's add_pred_to_datasample)
    for sample, points in zip(preds, in_input):
        center = sample.metainfo['input_center']
        scale = sample.metainfo['input_scale']
        expected = points / 64 * scale + center - 0.5 * scale
        np.testing.assert_allclose(sample.pred_instances.keypoints[0],
                                   expected, atol=1e-4)
        assert sample.pred_instances.bboxes.shape == (1, 4)


def test_training_step_on_dummy_samples(qmodel, digits_batch):
    qmodel = copy.deepcopy(qmodel)  # training mode updates BN statistics
    inputs = digits_batch['inputs'][:4]
    with torch.no_grad():
        outputs = qmodel(inputs, mode='tensor')
    samples = codebase_of(qmodel.architecture).dummy_data_samples(
        inputs, outputs)
    qmodel.train()
    losses = qmodel(inputs, samples, mode='loss')
    assert set(losses) == {'loss_kpt', 'acc_pose'}
    losses['loss_kpt'].backward()
    head = qmodel.architecture.head
    last = head.cls_x if hasattr(head, 'cls_x') else head.final_layer
    assert last.weight.grad is not None
    assert torch.isfinite(last.weight.grad).all()
    assert last.weight.grad.abs().sum() > 0
    assert 0 <= float(losses['acc_pose']) <= 1


def test_flip_test_combines_the_mirrored_half_outside_the_graph(
        digits_batch):
    """The configs' ``test_cfg.flip_test=True``: one predict graph runs the
    inputs and their mirror images as one batch through the fake quants
    the tensor mode calibrated; mmpose's head flips the second half back
    (with the dataset's flip_indices) and averages, outside the graph."""
    from mmpose.models.utils.tta import flip_heatmaps

    from mmrazor_quant.models.codebases.mmpose_rewrites import (
        with_mirror_images,
    )
    from mmrazor_quant.models.fake_quants.utils import disable_observer
    from .conftest import quant_cfg, simplebaseline_cfg
    arch = simplebaseline_cfg()
    arch.test_cfg.flip_test = True
    arch.test_cfg.output_heatmaps = True
    torch.manual_seed(0)
    model = MODELS.build(quant_cfg(arch)).eval()
    inputs = digits_batch['inputs'][:4]
    samples = digits_batch['data_samples'][:4]
    with torch.no_grad():
        model(digits_batch['inputs'], mode='tensor')
        disable_observer(model)
        # the tensor graph on the inputs and their mirror images, one batch
        both = model(torch.cat([inputs, inputs.flip(-1)]), mode='tensor')
        preds = model(inputs, copy.deepcopy(samples), mode='predict')
    assert torch.equal(with_mirror_images(inputs),
                       torch.cat([inputs, inputs.flip(-1)]))
    plain, mirrored = both.chunk(2)
    flip_indices = samples[0].metainfo['flip_indices']
    assert flip_indices == [0, 1, 3, 2, 4]
    # left and right swapped back, then the mean
    shift = model.architecture.test_cfg.get('shift_heatmap', False)
    assert shift  # the config's: the mirrored heatmap moved by a pixel
    combined = (plain + flip_heatmaps(mirrored, flip_indices=flip_indices,
                                      shift_heatmap=shift)) / 2
    assert float((combined - plain).abs().max()) > 1e-3
    got = torch.stack([s.pred_fields.heatmaps for s in preds])
    torch.testing.assert_close(got, combined, atol=1e-6, rtol=0)
