"""The QAT and LSQ detection configs (QATEpochBasedLoop / LSQEpochBasedLoop
+ QATValLoop + mmdet's CocoMetric) run with the real Runner on a few digit
canvases: the loss goes down, LSQ scales move, and COCO mAP is computed on
the quantized model and on the float one. The configs' detectors are
swapped for the tests' smaller ones (same families) to keep this short."""
import os.path as osp

import pytest
import torch
from mmengine.config import Config
from mmengine.hooks import Hook
from mmengine.runner import Runner

from mmrazor_quant.datasets import make_digit_canvas_coco
from mmrazor_quant.models.fake_quants.utils import named_fake_quants
from mmrazor_quant.registry import register_all_modules
from .toy_detectors import retinanet_cfg, yolox_cfg

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
QAT_DIR = osp.join(REPO, 'configs', 'quantization', 'qat', 'detection')
# one batch of the same 4 canvases per epoch: the loss on it must fall at
# every step
NUM_TRAIN, NUM_VAL, BATCH, EPOCHS = 4, 8, 4, 6


@pytest.fixture(scope='module')
def canvas_root(tmp_path_factory):
    return make_digit_canvas_coco(
        str(tmp_path_factory.mktemp('det_qat') / 'canvas'),
        num_train=NUM_TRAIN, num_val=NUM_VAL)


class LossAndPredictionRecorder(Hook):
    """Training losses per iteration; top scores of every validation batch
    in the order QATValLoop runs them (quantized pass, then float pass);
    the validation metrics."""

    def __init__(self):
        self.losses, self.val_scores, self.metrics = [], [], {}

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        self.losses.append(float(outputs['loss'].detach()))

    def after_val_iter(self, runner, batch_idx, data_batch=None,
                       outputs=None):
        self.val_scores.append(
            torch.cat([o.pred_instances.scores[:5] for o in outputs]))

    def after_val_epoch(self, runner, metrics=None):
        self.metrics = dict(metrics or {})


def _runner(config, architecture, root, work_dir, lr):
    """The config's runner on ``root`` with ``architecture``, trained from
    scratch (the loss must fall) for ``EPOCHS`` epochs, validated once."""
    register_all_modules(init_default_scope=False)
    cfg = Config.fromfile(osp.join(QAT_DIR, config))
    cfg.work_dir = str(work_dir)
    # untrained: keep every box, so that COCO evaluation has results
    architecture.test_cfg.score_thr = 0.0
    cfg.model.architecture = architecture
    cfg.model.float_checkpoint = None
    for loader in (cfg.train_dataloader, cfg.val_dataloader):
        loader.dataset.data_root = root
        loader.batch_size = BATCH
    cfg.val_evaluator.ann_file = osp.join(root, 'annotations', 'val.json')
    cfg.train_cfg.max_epochs = EPOCHS
    cfg.train_cfg.val_interval = EPOCHS
    cfg.param_scheduler = []
    cfg.optim_wrapper.optimizer.lr = lr
    cfg.default_hooks.checkpoint = dict(type='CheckpointHook',
                                        interval=EPOCHS)
    cfg.default_hooks.logger = dict(type='LoggerHook', interval=1)
    cfg.test_dataloader = cfg.test_evaluator = cfg.test_cfg = None
    cfg.randomness = dict(seed=0)
    runner = Runner.from_cfg(cfg)
    recorder = LossAndPredictionRecorder()
    runner.register_hook(recorder)
    return runner, recorder


def _check_loss_falls(losses):
    """Strictly falling from the second step on (the first one sets the
    qparams from its own batch while it trains)."""
    assert len(losses) == EPOCHS, losses
    assert all(b < a for a, b in zip(losses[1:], losses[2:])), losses


def _check_val(recorder):
    for prefix in ('qat.', 'original.'):
        value = recorder.metrics[prefix + 'coco/bbox_mAP']
        assert 0.0 <= value <= 1.0
    # both passes ran over the whole val set, on different models: the
    # quantized pass's detection scores are not the float pass's
    half = len(recorder.val_scores) // 2
    assert half == NUM_VAL // BATCH
    quantized = torch.cat(recorder.val_scores[:half])
    float_ = torch.cat(recorder.val_scores[half:])
    assert quantized.shape == float_.shape and len(quantized) > 0
    assert not torch.equal(quantized, float_)


def test_qat_retinanet_loss_falls_and_map_of_quantized_model(
        canvas_root, tmp_path):
    runner, recorder = _runner('qat_openvino_retinanet_tiny_digits.py',
                               retinanet_cfg(), canvas_root, tmp_path, lr=2e-3)
    runner.train()
    _check_loss_falls(recorder.losses)
    # observers went off at epoch 2 (disable_observer_begin=2)
    assert all(not fq.observer_enabled[0]
               for _, fq in named_fake_quants(runner.model))
    _check_val(recorder)


class ScaleRecorder(Hook):
    """Every scale right after the first (initialising) iteration."""

    def __init__(self):
        self.initial = {}

    def after_train_iter(self, runner, batch_idx, data_batch=None,
                         outputs=None):
        if runner.iter == 0:
            self.initial = {
                name: fq.scale.detach().clone()
                for name, fq in named_fake_quants(runner.model)
            }


def test_lsq_yolox_scales_move_and_map_of_quantized_model(
        canvas_root, tmp_path):
    runner, recorder = _runner('lsq_openvino_yolox_tiny_digits.py',
                               yolox_cfg(), canvas_root, tmp_path, lr=2e-3)
    scales = ScaleRecorder()
    runner.register_hook(scales)
    runner.train()
    _check_loss_falls(recorder.losses)
    final = dict(named_fake_quants(runner.model))
    assert len(scales.initial) == len(final) > 20
    moved = [name for name, initial in scales.initial.items()
             if not torch.equal(final[name].scale.detach(), initial)]
    # nearly every scale was learned after the first batch (YOLOX's
    # coarsest level may hold no positive prior, leaving its cls/box
    # branches without gradient)
    assert len(moved) >= 0.9 * len(final), sorted(set(final) - set(moved))
    assert all(not fq.observer_enabled[0] for fq in final.values())
    _check_val(recorder)
