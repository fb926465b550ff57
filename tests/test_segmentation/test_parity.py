"""Exported segmentors (QDQ ONNX ending at the decode head's logits) vs the
simulation, in onnxruntime and OpenVINO."""
import pytest
import torch

from mmrazor_quant.deploy import deploy_head_of, export_model
from mmrazor_quant.deploy.segmentation import (
    SegmentationDeployHead,
    seg_labels,
)
from mmrazor_quant.models.fake_quants.utils import disable_observer
from mmrazor_quant.registry import MODELS
from ..int8_host import int8_weight_bits
from .conftest import seg_batch
from .toy_segmentors import fastscnn_cfg, quant_cfg, segformer_cfg

MODELS_AT = {'fastscnn': (fastscnn_cfg, 64), 'segformer': (segformer_cfg,
                                                           32)}


@pytest.fixture(scope='module')
def exported(tmp_path_factory):
    """``(name, backend) -> export``, each built once for its runtimes."""
    cache = {}

    def get(name, backend):
        if (name, backend) not in cache:
            cache[name, backend] = _export(name, backend,
                                           tmp_path_factory.mktemp(backend))
        return cache[name, backend]

    return get


def _export(name, backend, tmp_path):
    """The model calibrated on 8 bar images and exported (OpenVINO's
    weights on 7 bits where this CPU's int8 kernels saturate)."""
    make, size = MODELS_AT[name]
    torch.manual_seed(0)
    cfg = quant_cfg(make(), backend, size)
    if backend == 'openvino':
        cfg['quantizer']['global_qconfig']['w_qscheme']['bit'] = \
            int8_weight_bits()
    model = MODELS.build(cfg).eval()
    data = model.data_preprocessor(seg_batch(size, num=8), False)
    with torch.no_grad():
        model(data['inputs'], mode='tensor')
    disable_observer(model)
    path = str(tmp_path / f'{name}.onnx')
    result = export_model(model, data['inputs'][:1], path, backend=backend)
    return model, result, path, data


@pytest.mark.parametrize('name', list(MODELS_AT))
@pytest.mark.parametrize('backend,runtime', [
    ('openvino', 'onnxruntime'),
    ('openvino', 'openvino'),
    ('tensorrt', 'onnxruntime'),
])
def test_logits_and_labels_match_simulation(name, backend, runtime,
                                            exported):
    model, result, path, data = exported(name, backend)
    head = deploy_head_of(model)
    assert isinstance(head, SegmentationDeployHead)
    report = head.check_parity(model, result.deploy_model, path,
                               data['inputs'], data['data_samples'], runtime)
    assert report.num_samples == 8
    assert report.sqnr_db > 35, report.format()
    assert report.agreement >= 0.99, report.format()


def test_labels_are_the_resized_argmax():
    # 2 classes on a 2x2 grid, upsampled to 4x4: class 1 wins where its
    # bilinear logit is larger (left column high for class 1).
    logits = torch.tensor([[[[0., 1.], [0., 1.]], [[1., 0.], [1., 0.]]]])
    labels = seg_labels(logits, (4, 4))
    assert labels.tolist() == [[[1, 1, 0, 0]] * 4]
