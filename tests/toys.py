"""Small mmcls classifiers shared by the tests (narrow enough for two CPU
cores), and the OpenVINO W8A8 quantized model around one. Each call returns
a fresh dict."""
from .skips import CLS_HEAD_SKIPS


def tiny_resnet(width: int = 8, in_channels: int = 3) -> dict:
    """mmcls ResNet_CIFAR-18 with ``width`` stem and base channels (the
    head sees ``8 * width`` features), ten classes."""
    return dict(
        _scope_='mmcls',
        type='ImageClassifier',
        backbone=dict(type='ResNet_CIFAR', depth=18, in_channels=in_channels,
                      stem_channels=width, base_channels=width),
        neck=dict(type='GlobalAveragePooling'),
        head=dict(type='LinearClsHead', num_classes=10,
                  in_channels=8 * width))


def tiny_mbv2(widen_factor: float = 0.35) -> dict:
    """mmcls MobileNetV2 at ``widen_factor`` (its last conv keeps 1280
    channels), ten classes."""
    return dict(
        _scope_='mmcls',
        type='ImageClassifier',
        backbone=dict(type='MobileNetV2', widen_factor=widen_factor),
        neck=dict(type='GlobalAveragePooling'),
        head=dict(type='LinearClsHead', num_classes=10, in_channels=1280))


def openvino_w8a8(architecture: dict) -> dict:
    """An ``MMArchitectureQuant`` config (tensor mode only) of
    ``architecture`` for OpenVINO: per-channel symmetric int8 weights,
    symmetric uint8 activations, min/max observers."""
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=architecture,
        quantizer=dict(
            type='mmrazor_quant.OpenVINOQuantizer',
            global_qconfig=dict(
                w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
                a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                               is_symmetric_range=True),
                a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True)),
            tracer=dict(
                type='mmrazor_quant.CustomTracer',
                skipped_methods=CLS_HEAD_SKIPS)),
        forward_modes=('tensor', ))
