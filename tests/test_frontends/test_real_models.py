"""The PP-OCRv4 detector and recogniser of the rapidocr-onnxruntime wheel
(real trained weights) through the importer: the converted graph against
onnxruntime on rendered text, and what the quantizers see (slow)."""
import collections

import numpy as np
import onnxruntime as ort
import pytest
import torch

from mmrazor_quant.frontends.onnx_import import import_onnx
from mmrazor_quant.models.quantizers.op_kinds import classify_node

pytestmark = pytest.mark.slow

ocr = pytest.importorskip('benchmarks.real_models.ocr')


@pytest.fixture(scope='module')
def paths():
    reason = ocr.missing_reason()
    if reason:
        pytest.skip(reason)
    return ocr.model_paths()


def _kinds(gm) -> collections.Counter:
    modules = dict(gm.named_modules())
    return collections.Counter(classify_node(n, modules)
                               for n in gm.graph.nodes)


def test_recogniser_converts_and_normalises(paths):
    images, _ = ocr.render_words(4, seed=1)
    x = ocr.rec_inputs(images)
    gm, info = import_onnx(paths['rec'])
    with torch.no_grad():
        ours = gm(torch.from_numpy(x)).numpy()
    ref = ort.InferenceSession(paths['rec']).run(
        None, {info.input_names[0]: x})[0]
    assert np.abs(ours - ref).max() < 1e-5
    kinds = _kinds(gm)
    assert kinds['conv'] == 38 and kinds['linear'] == 9
    assert kinds['norm'] == 5 and kinds['softmax'] == 3
    assert kinds['matmul'] + kinds['attention_matmul'] == 4
    assert sum(isinstance(m, torch.nn.Hardswish)
               for m in gm.modules()) == 28


def test_detector_converts(paths):
    pages = ocr.render_pages(1, seed=1)
    pages = pages[0] if isinstance(pages, tuple) else pages
    x = ocr.det_inputs(pages)
    gm, info = import_onnx(paths['det'])
    with torch.no_grad():
        ours = gm(torch.from_numpy(x)).numpy()
    ref = ort.InferenceSession(paths['det']).run(
        None, {info.input_names[0]: x})[0]
    assert ref.max() > 0.5  # text found on the page
    assert np.abs(ours - ref).max() < 5e-4  # measured 1.1e-4 of 1.0
    assert _kinds(gm)['conv'] == 64
