"""Small mmseg segmentors (mmseg's own Fast-SCNN and SegFormer modules at
a few channels) and quantizer configs for the segmentation tests."""
from mmengine.config import ConfigDict

PREPROCESSOR = dict(
    type='mmseg.SegDataPreProcessor',
    mean=[0., 0., 0.],
    std=[255., 255., 255.],
    bgr_to_rgb=False,
    size_divisor=32,
    pad_val=0,
    seg_pad_val=255)
NUM_CLASSES = 3  # background and two bars


def _head(**kwargs) -> dict:
    return dict(num_classes=NUM_CLASSES, norm_cfg=dict(type='BN'),
                align_corners=False,
                loss_decode=dict(type='mmseg.CrossEntropyLoss',
                                 use_sigmoid=False, loss_weight=1.0),
                **kwargs)


def fastscnn_cfg() -> ConfigDict:
    """Fast-SCNN at 8-16 channels with one auxiliary FCN head (64 x 64
    inputs: the global branch's pyramid pooling needs 2 x 2 features)."""
    return ConfigDict(
        type='mmseg.EncoderDecoder',
        data_preprocessor=PREPROCESSOR,
        backbone=dict(
            type='mmseg.FastSCNN', downsample_dw_channels=(8, 8),
            global_in_channels=8, global_block_channels=(8, 8, 16),
            global_block_strides=(2, 2, 1), global_out_channels=16,
            higher_in_channels=8, lower_in_channels=16,
            fusion_out_channels=16, out_indices=(0, 1, 2),
            norm_cfg=dict(type='BN')),
        decode_head=_head(type='mmseg.DepthwiseSeparableFCNHead',
                          in_channels=16, channels=16, concat_input=False,
                          in_index=-1),
        auxiliary_head=[
            _head(type='mmseg.FCNHead', in_channels=16, channels=8,
                  num_convs=1, concat_input=False, in_index=-2)
        ],
        train_cfg=dict(),
        test_cfg=dict(mode='whole'))


def segformer_cfg() -> ConfigDict:
    """MiT with two stages of one layer each (8 and 16 channels, spatial
    reduction 2 in the first) and the all-MLP head."""
    return ConfigDict(
        type='mmseg.EncoderDecoder',
        data_preprocessor=PREPROCESSOR,
        backbone=dict(
            type='mmseg.MixVisionTransformer', in_channels=3, embed_dims=8,
            num_stages=2, num_layers=[1, 1], num_heads=[1, 2],
            patch_sizes=[7, 3], strides=[4, 2], sr_ratios=[2, 1],
            out_indices=(0, 1),
            mlp_ratio=2, qkv_bias=True, drop_rate=0.0, attn_drop_rate=0.0,
            drop_path_rate=0.0),
        decode_head=_head(type='mmseg.SegformerHead', in_channels=[8, 16],
                          in_index=[0, 1], channels=16, dropout_ratio=0.0),
        train_cfg=dict(),
        test_cfg=dict(mode='whole'))


def global_qconfig(backend: str, lsq: bool = False) -> dict:
    """W8A8 per backend: activations unsigned symmetric (OpenVINO) or
    signed symmetric (TensorRT); per-channel signed weights."""
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
        w_qscheme=signed,
        a_qscheme=act)


def quant_cfg(arch: ConfigDict, backend: str, size: int,
              lsq: bool = False) -> dict:
    """``MMArchitectureQuant`` of ``arch`` traced at ``size x size``, with
    no skips of its own (the mmseg adapter's)."""
    quantizer = {'openvino': 'mmrazor_quant.OpenVINOQuantizer',
                 'tensorrt': 'mmrazor_quant.TensorRTQuantizer'}[backend]
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=arch,
        input_shape=(3, size, size),
        quantizer=dict(type=quantizer,
                       global_qconfig=global_qconfig(backend, lsq),
                       tracer=dict(type='mmrazor_quant.CustomTracer')))
