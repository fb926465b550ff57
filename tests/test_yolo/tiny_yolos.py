"""The project's YOLO configs at test size, and their quantization."""
import copy
import os.path as osp

from mmengine.config import Config, ConfigDict

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIGS = {
    'yolov5': 'configs/yolo/yolov5_n_digits.py',
    'rtmdet': 'configs/yolo/rtmdet_tiny_digits.py',
}
_LOADED = {}


def tiny_arch(name: str, num_classes: int = 3) -> ConfigDict:
    """The model of ``CONFIGS[name]`` (mmyolo's, through ``mmyolo::``
    bases) at 1/8 width and one block per stage."""
    if name not in _LOADED:
        _LOADED[name] = Config.fromfile(osp.join(REPO, CONFIGS[name])).model
    arch = copy.deepcopy(_LOADED[name])
    for part in (arch.backbone, arch.neck):
        part.update(deepen_factor=0.1, widen_factor=0.125)
    arch.bbox_head.head_module.update(widen_factor=0.125,
                                      num_classes=num_classes)
    if name == 'rtmdet':
        arch.train_cfg.assigner.num_classes = num_classes
    return arch


def global_qconfig(backend: str, lsq: bool = False,
                   weight_bits: int = 8) -> dict:
    """W8A8 per backend, as the YOLO configs: activations unsigned
    asymmetric (OpenVINO) or signed symmetric (TensorRT); per-channel
    signed weights on ``weight_bits``."""
    signed = dict(qdtype='qint8', bit=8, is_symmetry=True,
                  is_symmetric_range=True)
    act = signed if backend == 'tensorrt' else dict(
        qdtype='quint8', bit=8, is_symmetry=False)
    prefix = 'mmrazor_quant.'
    return dict(
        w_observer=dict(type=prefix + ('LSQPerChannelObserver' if lsq else
                                       'PerChannelMinMaxObserver')),
        a_observer=dict(type=prefix + ('LSQObserver' if lsq else
                                       'MinMaxObserver')),
        w_fake_quant=dict(type=prefix + ('LearnableFakeQuantize'
                                         if lsq else 'FakeQuantize')),
        a_fake_quant=dict(type=prefix + ('LearnableFakeQuantize'
                                         if lsq else 'FakeQuantize')),
        w_qscheme=dict(signed, bit=weight_bits),
        a_qscheme=act)


def quant_cfg(arch: ConfigDict, backend: str = 'openvino',
              lsq: bool = False, weight_bits: int = 8) -> dict:
    """``MMArchitectureQuant`` over ``arch``: no tracer skips (the mmyolo
    adapter's defaults)."""
    quantizer = {'openvino': 'mmrazor_quant.OpenVINOQuantizer',
                 'tensorrt': 'mmrazor_quant.TensorRTQuantizer'}[backend]
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=arch,
        data_preprocessor=arch.data_preprocessor,
        quantizer=dict(
            type=quantizer,
            global_qconfig=global_qconfig(backend, lsq, weight_bits),
            tracer=dict(type='mmrazor_quant.CustomTracer')))
