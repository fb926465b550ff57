"""Small mmdet detectors and quantizer configs for the detection tests."""
from mmengine.config import ConfigDict
from torch import nn

from ..skips import DET_HEAD_SKIPS

PREPROCESSOR = dict(
    type='mmdet.DetDataPreprocessor',
    mean=[0., 0., 0.],
    std=[255., 255., 255.],
    bgr_to_rgb=False,
    pad_size_divisor=32)


class TwoStageConvNet(nn.Module):
    """conv-bn-relu (stride 2) twice; returns both stages' features."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, stride=2, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU()

    def forward(self, x):
        c1 = self.relu(self.bn1(self.conv1(x)))
        c2 = self.relu(self.bn2(self.conv2(c1)))
        return c1, c2


def register_toy_backbone() -> None:
    from mmdet.registry import MODELS
    MODELS.register_module('TwoStageConvNet', module=TwoStageConvNet,
                           force=True)


def retinanet_cfg(num_classes: int = 10, tiny: bool = True) -> ConfigDict:
    """A RetinaNet; ``tiny``: two-conv backbone, 2-level FPN, 1-conv head."""
    if tiny:
        backbone = dict(type='mmdet.TwoStageConvNet')
        fpn = dict(in_channels=[8, 16], out_channels=8, num_outs=2)
        strides, feat, convs = [2, 4], 8, 1
    else:
        backbone = dict(
            type='mmdet.ResNet', depth=18, num_stages=4, out_indices=(1, 2, 3),
            base_channels=16, norm_cfg=dict(type='BN'))
        fpn = dict(in_channels=[32, 64, 128], out_channels=32, num_outs=3)
        strides, feat, convs = [8, 16, 32], 32, 2
    return ConfigDict(
        type='mmdet.RetinaNet',
        data_preprocessor=PREPROCESSOR,
        backbone=backbone,
        neck=dict(type='mmdet.FPN', start_level=0, **fpn),
        bbox_head=dict(
            type='mmdet.RetinaHead', num_classes=num_classes,
            in_channels=fpn['out_channels'], stacked_convs=convs,
            feat_channels=feat,
            anchor_generator=dict(
                type='AnchorGenerator', octave_base_scale=4,
                scales_per_octave=1, ratios=[1.0], strides=strides),
            bbox_coder=dict(type='DeltaXYWHBBoxCoder', target_means=[.0] * 4,
                            target_stds=[0.1, 0.1, 0.2, 0.2]),
            loss_cls=dict(type='FocalLoss', use_sigmoid=True, gamma=2.0,
                          alpha=0.25, loss_weight=1.0),
            loss_bbox=dict(type='L1Loss', loss_weight=1.0)),
        train_cfg=dict(
            assigner=dict(type='MaxIoUAssigner', pos_iou_thr=0.5,
                          neg_iou_thr=0.4, min_pos_iou=0, ignore_iof_thr=-1),
            sampler=dict(type='PseudoSampler'), allowed_border=-1,
            pos_weight=-1, debug=False),
        test_cfg=dict(nms_pre=200, min_bbox_size=0, score_thr=0.05,
                      nms=dict(type='nms', iou_threshold=0.5),
                      max_per_img=20))


def yolox_cfg(num_classes: int = 10) -> ConfigDict:
    """A YOLOX with CSPDarknet at 1/8 width and one block per stage."""
    return ConfigDict(
        type='mmdet.YOLOX',
        data_preprocessor=PREPROCESSOR,
        backbone=dict(type='mmdet.CSPDarknet', deepen_factor=0.33,
                      widen_factor=0.125, out_indices=(2, 3, 4)),
        neck=dict(type='mmdet.YOLOXPAFPN', in_channels=[32, 64, 128],
                  out_channels=16, num_csp_blocks=1),
        bbox_head=dict(type='mmdet.YOLOXHead', num_classes=num_classes,
                       in_channels=16, feat_channels=16, stacked_convs=1),
        train_cfg=dict(assigner=dict(type='SimOTAAssigner',
                                     center_radius=2.5)),
        test_cfg=dict(score_thr=0.01,
                      nms=dict(type='nms', iou_threshold=0.65)))


def yolox_pafpn_cfg(num_classes: int = 10) -> ConfigDict:
    """A YOLOX on the two-conv backbone: 2-level PAFPN with one CSP block
    per path, one conv per head branch; Swish activations (YOLOX's)."""
    cfg = yolox_cfg(num_classes)
    cfg.backbone = dict(type='mmdet.TwoStageConvNet')
    cfg.neck = dict(type='mmdet.YOLOXPAFPN', in_channels=[8, 16],
                    out_channels=8, num_csp_blocks=1)
    cfg.bbox_head.update(in_channels=8, feat_channels=8, strides=(2, 4))
    return cfg


def global_qconfig(backend: str, lsq: bool = False,
                   weight_bits: int = 8) -> dict:
    """W8A8 per backend: activations unsigned symmetric (OpenVINO) or
    signed symmetric (TensorRT); per-channel signed weights on
    ``weight_bits``."""
    signed = dict(qdtype='qint8', bit=8, is_symmetry=True,
                  is_symmetric_range=True)
    act = signed if backend == 'tensorrt' else dict(
        qdtype='quint8', bit=8, is_symmetry=True)
    fake_quant = 'mmrazor_quant.LearnableFakeQuantize' if lsq else \
        'mmrazor_quant.FakeQuantize'
    return dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
        w_fake_quant=dict(type=fake_quant),
        a_fake_quant=dict(type=fake_quant),
        w_qscheme=dict(signed, bit=weight_bits),
        a_qscheme=act)


def quant_cfg(arch: ConfigDict, backend: str, lsq: bool = False,
              weight_bits: int = 8) -> dict:
    quantizer = {'openvino': 'mmrazor_quant.OpenVINOQuantizer',
                 'tensorrt': 'mmrazor_quant.TensorRTQuantizer'}[backend]
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=arch,
        data_preprocessor=arch.data_preprocessor,
        quantizer=dict(
            type=quantizer,
            global_qconfig=global_qconfig(backend, lsq, weight_bits),
            tracer=dict(type='mmrazor_quant.CustomTracer',
                        skipped_methods=DET_HEAD_SKIPS[
                            arch.type.split('.')[-1]])))
