"""Small quantized checkpoints of every backend, kept in the repository.

Each file ``tests/fixtures/quant_state/format<N>/<backend>.pth.gz`` (a gzipped
``torch.save``, about 22 KB) holds the state
of a tiny mmcls ResNet (stem with max pool, two stages of residual blocks,
global average pooling, linear head) quantized by that backend's quantizer
and calibrated on one seeded batch, with the config it was built from, that
batch and the outputs. ``tests/test_models/test_algorithms/
test_quant_state_format.py`` loads every file of every format into the model
built now: a placement change that renames, adds or drops a fake quant
fails there until it ships a migration (``quant_state_format.py``).

Write the files of the current format (after a format bump; the files of
older formats stay as they are)::

    PYTHONPATH=. python tests/quant_state_fixtures.py
"""
import gzip
import io
import os
import os.path as osp
from typing import Dict

import torch

DATA = osp.join(osp.dirname(osp.abspath(__file__)), 'fixtures', 'quant_state')
BACKENDS = ('openvino', 'tensorrt', 'rknn', 'litert', 'native', 'academic')
SKIPS = ['mmcls.models.heads.ClsHead._get_loss',
         'mmcls.models.heads.ClsHead._get_predictions']
_W_SYM = dict(qdtype='qint8', bit=8, is_symmetry=True,
              is_symmetric_range=True)
#: ``backend -> (quantizer, w_qscheme, a_qscheme)``, as in the backends'
#: PTQ configs (configs/quantization/ptq/ptq_<backend>_resnet18_mnist.py).
SCHEMES = {
    'openvino': ('OpenVINOQuantizer', _W_SYM,
                 dict(qdtype='quint8', bit=8, is_symmetry=True)),
    'tensorrt': ('TensorRTQuantizer', _W_SYM, _W_SYM),
    'rknn': ('RKNNQuantizer', _W_SYM,
             dict(qdtype='qint8', bit=8, is_symmetry=False)),
    'litert': ('LiteRTQuantizer', _W_SYM,
               dict(qdtype='qint8', bit=8, is_symmetry=False)),
    'native': ('TorchNativeQuantizer',
               dict(qdtype='qint8', bit=8, is_symmetry=True),
               dict(qdtype='quint8', bit=8, is_symmetry=False)),
    'academic': ('AcademicQuantizer',
                 dict(qdtype='qint8', bit=8, is_symmetry=False),
                 dict(qdtype='quint8', bit=8, is_symmetry=False)),
}


def tiny_resnet(width: int = 2) -> dict:
    """mmcls's ImageNet ResNet-18 layout cut to a ``width``-channel stem and
    two stages: max pool, residual adds, global average pooling."""
    return dict(
        _scope_='mmcls',
        type='ImageClassifier',
        backbone=dict(type='ResNet', depth=18, num_stages=2,
                      strides=(1, 2), dilations=(1, 1), out_indices=(1, ),
                      stem_channels=width, base_channels=width),
        neck=dict(type='GlobalAveragePooling'),
        head=dict(type='LinearClsHead', num_classes=4,
                  in_channels=2 * width))


def model_cfg(backend: str) -> dict:
    """The ``MMArchitectureQuant`` config of ``backend``'s fixture."""
    quantizer, w_qscheme, a_qscheme = SCHEMES[backend]
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=tiny_resnet(),
        forward_modes=('tensor', ),
        quantizer=dict(
            type=f'mmrazor_quant.{quantizer}',
            global_qconfig=dict(
                w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
                a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                w_qscheme=w_qscheme,
                a_qscheme=a_qscheme),
            tracer=dict(type='mmrazor_quant.CustomTracer',
                        skipped_methods=SKIPS)))


def build(cfg: dict):
    """The model of ``cfg``, seeded (same float weights every time)."""
    from mmrazor_quant.registry import MODELS, register_all_modules
    register_all_modules(init_default_scope=False)
    torch.manual_seed(0)
    return MODELS.build(cfg)


def evaluate(model, inputs: torch.Tensor) -> torch.Tensor:
    """The simulated outputs: observers off, fake quants on."""
    from mmrazor_quant.models.fake_quants.utils import (
        disable_observer,
        enable_fake_quant,
    )
    disable_observer(model)
    enable_fake_quant(model)
    model.eval()
    with torch.no_grad():
        return model(inputs, mode='tensor')


def calibrated(backend: str):
    """``(model, inputs)``: ``backend``'s fixture model calibrated on one
    seeded batch."""
    from mmrazor_quant.models.fake_quants.utils import (
        disable_fake_quant,
        enable_observer,
    )
    model = build(model_cfg(backend))
    inputs = torch.randn(2, 3, 16, 16,
                         generator=torch.Generator().manual_seed(1))
    enable_observer(model)
    disable_fake_quant(model)
    model.eval()
    with torch.no_grad():
        model(inputs, mode='tensor')
    return model, inputs


def write_current_format() -> Dict[str, str]:
    """Write every backend's fixture of the current format; their paths."""
    from mmrazor_quant.models.algorithms.quant_state_format import (
        QUANT_STATE_FORMAT,
        quant_state_meta,
    )
    folder = osp.join(DATA, f'format{QUANT_STATE_FORMAT}')
    os.makedirs(folder, exist_ok=True)
    paths = {}
    for backend in BACKENDS:
        model, inputs = calibrated(backend)
        outputs = evaluate(model, inputs)
        path = osp.join(folder, f'{backend}.pth.gz')
        buffer = io.BytesIO()
        torch.save(
            dict(meta=dict(model_cfg=model_cfg(backend), **quant_state_meta()),
                 state_dict=model.state_dict(), inputs=inputs,
                 outputs=outputs), buffer,
            _use_new_zipfile_serialization=False)
        with gzip.GzipFile(path, 'wb', mtime=0) as f:
            f.write(buffer.getvalue())
        paths[backend] = path
    return paths


def read(path: str) -> dict:
    """A fixture file's contents (``torch.load`` with ``weights_only``)."""
    with gzip.open(path, 'rb') as f:
        return torch.load(io.BytesIO(f.read()), weights_only=True)


def fixture_paths() -> Dict[str, Dict[str, str]]:
    """``{format folder: {backend: path}}`` of every fixture kept."""
    found: Dict[str, Dict[str, str]] = {}
    for folder in sorted(os.listdir(DATA)):
        for name in sorted(os.listdir(osp.join(DATA, folder))):
            if name.endswith('.pth.gz'):
                found.setdefault(folder, {})[name[:-len('.pth.gz')]] = \
                    osp.join(DATA, folder, name)
    return found


if __name__ == '__main__':
    for backend, path in write_current_format().items():
        print(f'{backend}: {path} ({osp.getsize(path)} bytes)')
