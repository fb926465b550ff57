"""A tiny quantized classifier on a few MNIST5k digits, as Runner configs."""
import contextlib
import copy
from typing import Iterator

from mmcls.registry import MODELS as MMCLS_MODELS
from mmengine.config import Config
from mmengine.model import BaseModule
from torch import nn

from ..skips import CLS_HEAD_SKIPS

TINY_NET = 'EngineTestTinyNet'


class TinyNet(BaseModule):
    """Two strided Conv-BN-ReLU blocks: 28x28x1 -> 7x7x8."""

    def __init__(self, in_channels: int = 1) -> None:
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(in_channels, 4, 3, 2, 1, bias=False),
            nn.BatchNorm2d(4), nn.ReLU(),
            nn.Conv2d(4, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8),
            nn.ReLU())

    def forward(self, x):
        return (self.layers(x), )


@contextlib.contextmanager
def tiny_net_registered() -> Iterator[None]:
    """Register :class:`TinyNet` in mmcls's MODELS for the duration."""
    MMCLS_MODELS.register_module(name=TINY_NET, module=TinyNet)
    try:
        yield
    finally:
        MMCLS_MODELS._module_dict.pop(TINY_NET, None)


def architecture() -> dict:
    return dict(
        _scope_='mmcls',
        type='ImageClassifier',
        data_preprocessor=dict(
            type='ClsDataPreprocessor', num_classes=10, mean=[33.32],
            std=[78.57], to_rgb=False),
        backbone=dict(type=TINY_NET),
        neck=dict(type='GlobalAveragePooling'),
        head=dict(type='LinearClsHead', num_classes=10, in_channels=8,
                  loss=dict(type='CrossEntropyLoss')))


def quant_model(kind: str = 'minmax') -> dict:
    """``minmax``: FakeQuantize with (per-channel) min/max observers;
    ``lsq``: LearnableFakeQuantize with LSQ observers."""
    if kind == 'minmax':
        observers = ('PerChannelMinMaxObserver', 'MinMaxObserver')
        fake_quant = 'FakeQuantize'
    else:
        observers = ('LSQPerChannelObserver', 'LSQObserver')
        fake_quant = 'LearnableFakeQuantize'
    global_qconfig = dict(
        w_observer=dict(type='mmrazor_quant.' + observers[0]),
        a_observer=dict(type='mmrazor_quant.' + observers[1]),
        w_fake_quant=dict(type='mmrazor_quant.' + fake_quant),
        a_fake_quant=dict(type='mmrazor_quant.' + fake_quant),
        w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True),
        a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True))
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=architecture(),
        quantizer=dict(
            type='mmrazor_quant.OpenVINOQuantizer',
            global_qconfig=global_qconfig,
            tracer=dict(
                type='mmrazor_quant.CustomTracer',
                skipped_methods=CLS_HEAD_SKIPS)))


def loader(split: str, size: int, batch_size: int = 32,
           shuffle: bool = False, random_crop: bool = False) -> dict:
    pipeline = [dict(type='PackClsInputs')]
    if random_crop:
        pipeline.insert(0, dict(type='RandomCrop', crop_size=28, padding=2))
    return dict(
        batch_size=batch_size,
        num_workers=0,
        dataset=dict(type='mmrazor_quant.MNIST5k', split=split,
                     indices=size, pipeline=pipeline),
        sampler=dict(type='DefaultSampler', shuffle=shuffle))


def runner_cfg(work_dir: str, kind: str = 'minmax', **overrides) -> Config:
    """A full Runner config: 128 training and 64 test digits."""
    cfg = dict(
        default_scope='mmcls',
        work_dir=work_dir,
        model=quant_model(kind),
        train_dataloader=loader('train', 128, shuffle=True),
        val_dataloader=loader('test', 64),
        val_evaluator=dict(type='Accuracy', topk=(1, )),
        test_dataloader=loader('test', 64),
        test_evaluator=dict(type='Accuracy', topk=(1, )),
        optim_wrapper=dict(
            optimizer=dict(type='SGD', lr=0.05, momentum=0.9)),
        # An explicit `end`: by default it is max_epochs, and a scheduler
        # saved by a 1-epoch run would then never step when resumed.
        param_scheduler=dict(
            type='MultiStepLR', by_epoch=True, milestones=[1], gamma=0.5,
            begin=0, end=100),
        # mmengine wants train_dataloader, train_cfg and optim_wrapper all
        # or none, as in a PTQ config inheriting the float one.
        train_cfg=dict(by_epoch=True, max_epochs=1),
        val_cfg=dict(type='mmrazor_quant.QATValLoop'),
        test_cfg=dict(),
        default_hooks=dict(
            logger=dict(type='LoggerHook', interval=1000),
            checkpoint=dict(type='CheckpointHook', interval=1)),
        # The configs' backend: gloo here, NCCL for CUDA tensors on GPUs.
        env_cfg=dict(dist_cfg=dict(backend='cpu:gloo,cuda:nccl')),
        randomness=dict(seed=0),
        log_level='WARNING')
    cfg.update(copy.deepcopy(overrides))
    return Config(cfg)
