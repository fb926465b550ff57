"""Quantization defaults for models trained elsewhere.

A model from a file comes with weights trained without quantization in
mind: a few activations hold outliers that min/max ranges spend the grid
on (PP-OCRv4's recogniser loses 14 points of word accuracy with min/max
activations and keeps 99.5 % with histogram MSE ranges, see
docs/onnx_models.md). So every backend's default here is the target's own
W8A8 schemes and placement (its quantizer, or for a target without one
the backend it names as ``placement_of``; asymmetric activations where it
declares ``asymmetric_activations``), per-channel
min/max weights and :class:`HistogramMSEObserver` activations, followed by
empirical bias correction (:data:`DEFAULT_PTQ_PASSES`): the mean shift that
per-channel weight grids leave in depthwise convs adds up through a deep
network (PP-OCRv4's recogniser for OpenVINO: 92.0 % of the words without
it, 99.0 % with it, fp32 99.0 %; NNCF applies its fast bias correction by
default for the same reason).
"""
import copy
from typing import Optional

from mmrazor_quant.backends import get_backend

__all__ = [
    'default_quantizer', 'default_qconfig', 'DEFAULT_PTQ_PASSES',
    'DEFAULT_MAX_BINNED'
]

#: Most activation values of one calibration batch that the default
#: histogram observer bins (a seeded uniform sample of larger batches, see
#: :class:`~mmrazor_quant.models.observers.BaseHistogramObserver`): binning
#: every value of PP-OCRv4's detector maps (32 pages of 640x640) took a
#: third of its calibration time.
DEFAULT_MAX_BINNED = 2**18

#: The PTQ passes of the front door when none are given: every layer's
#: bias corrected in graph order, in one pass (``single_pass``) of all
#: calibration samples against the float means that calibration recorded
#: for them, in batches of 8 (32 detector pages of 640x640 in one batch
#: run 1.4x slower on a 2-core CPU, 64 recogniser words 2.8x). A seeded
#: draw of 16 samples (``num_samples=16``) costs a quarter (recogniser, 64
#: words) and a half (detector, 32 pages) of the quantized pass and reads
#: as many words (99.70-99.80 % of 2,000 in both runtimes), but leaves the
#: detector map at 20.2-20.3 dB from fp32 in onnxruntime, below NNCF's
#: best 20.4 (docs/onnx_models.md).
DEFAULT_PTQ_PASSES = (dict(type='correct_bias', single_pass=True,
                           batch_size=8), )


def _quantizer_backend(backend: str):
    """The backend whose quantizer and W8A8 schemes prepare a model for
    ``backend`` (itself, or the one a target without a quantizer names)."""
    target = get_backend(backend, '--backend')
    if target.quantizer is None and target.placement_of is not None:
        return get_backend(target.placement_of, f'{backend}.placement_of')
    return target


def default_qconfig(backend: str, a_observer: Optional[dict] = None) -> dict:
    """The ``global_qconfig`` for ``backend`` (see the module docstring).

    Args:
        backend (str): A registered backend (``openvino``, ...).
        a_observer (dict, optional): Another activation observer. Defaults
            to ``HistogramMSEObserver``.
    """
    spec = _quantizer_backend(backend)
    if spec.w8a8 is None:
        raise ValueError(f'backend {backend!r} declares no W8A8 scheme; '
                         'give the quantizer config yourself')
    w8a8 = copy.deepcopy(dict(spec.w8a8))
    if get_backend(backend, '--backend').asymmetric_activations:
        # inputs of trained layers are often not centred on zero (PP-LCNet's
        # scalar affines after Hardswish), where a symmetric u8 grid loses
        # half its steps: PP-OCRv4's recogniser reads 92.0 % of the words
        # instead of 88.0 % (OpenVINO)
        w8a8['a_qscheme'] = dict(w8a8['a_qscheme'], is_symmetry=False)
    return dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=a_observer or dict(
            type='mmrazor_quant.HistogramMSEObserver',
            max_binned=DEFAULT_MAX_BINNED),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=w8a8['w_qscheme'],
        a_qscheme=w8a8['a_qscheme'])


def default_quantizer(backend: str, **kwargs) -> dict:
    """The quantizer config of ``backend`` with :func:`default_qconfig`
    and, with asymmetric activations, the target's
    ``asymmetric_quantizer_options``; ``kwargs`` go to the quantizer
    (``qconfig_mapping``, ``tracer``)."""
    spec = _quantizer_backend(backend)
    cfg = dict(type=f'mmrazor_quant.{spec.quantizer}')
    target = get_backend(backend, '--backend')
    if target.asymmetric_activations:
        cfg.update(target.asymmetric_quantizer_options)
    if 'qconfig_mapping' in kwargs:
        mapping = dict(kwargs.pop('qconfig_mapping'))
        mapping.setdefault('_global_', default_qconfig(backend))
        cfg['qconfig_mapping'] = mapping
    else:
        cfg['global_qconfig'] = default_qconfig(backend)
    cfg.update(kwargs)
    return cfg
