"""PP-OCRv4's trained recogniser and detector through the front door.

The ONNX files ship in ``rapidocr-onnxruntime`` and the words and pages are
rendered with Debian's fonts (``make real-models``); without them the
module is skipped and says which is missing. Ours quantizes the recogniser
for onnxruntime with the front door's defaults on 64 rendered words, and
the exported file is read back by both runtimes with their full graph
optimisation: word accuracy with rapidocr's CTC decoder against fp32's,
and the export against our own simulation.
"""
import os
import os.path as osp

import numpy as np
import pytest
import torch

from benchmarks.real_models import ocr

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        ocr.missing_reason() is not None,
        reason=str(ocr.missing_reason()))
]

NUM_WORDS = 100
NUM_CALIB = 64
NUM_PAGES = 4
NUM_CALIB_PAGES = 8


def _ort(path):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(
        path, options, providers=['CPUExecutionProvider'])
    return lambda x: session.run(None, {'x': x})[0]


def _save_folder(folder, samples):
    os.makedirs(folder)
    for i, sample in enumerate(samples):
        np.save(osp.join(folder, f'{i:04d}.npy'), sample)
    return folder


@pytest.fixture(scope='module')
def rec(tmp_path_factory):
    root = tmp_path_factory.mktemp('ocr_rec')
    model = ocr.prepared_model(ocr.model_paths()['rec'],
                               str(root / 'rec.onnx'))
    calib, _ = ocr.render_words(NUM_CALIB, seed=0)
    words, texts = ocr.render_words(NUM_WORDS, seed=1)
    return dict(
        model=model,
        calib=_save_folder(str(root / 'calib'), ocr.rec_inputs(calib)),
        inputs=ocr.rec_inputs(words),
        words=texts,
        decoder=ocr.CtcDecoder(model),
        root=root)


@pytest.fixture(scope='module')
def rec_fp32_accuracy(rec):
    logits = ocr.run_batched(_ort(rec['model']), rec['inputs'])
    return ocr.word_accuracy(rec['decoder'](logits), rec['words'])


@pytest.fixture(scope='module')
def rec_ours(rec):
    from mmrazor_quant.apis import front_door
    qmodel = front_door.quantize_model(
        front_door.load_model(rec['model']), rec['calib'],
        backend='onnxruntime')
    result, parity = front_door.export_model(
        qmodel, str(rec['root'] / 'rec_int8.onnx'), backend='onnxruntime',
        parity_data=torch.from_numpy(rec['inputs'][:16]))
    return qmodel, result, parity


def test_rendering_is_seeded():
    first, words = ocr.render_words(3, seed=5)
    again, same = ocr.render_words(3, seed=5)
    assert words == same
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


def test_fp32_reads_the_rendered_words(rec_fp32_accuracy):
    assert rec_fp32_accuracy >= 98.0


def test_ours_keeps_word_accuracy_in_both_runtimes(rec, rec_ours,
                                                   rec_fp32_accuracy):
    from benchmarks.onnx_models import openvino_runner
    _, result, _ = rec_ours
    for runner in (_ort(result.onnx_path),
                   openvino_runner(result.onnx_path, 2)):
        logits = ocr.run_batched(runner, rec['inputs'])
        accuracy = ocr.word_accuracy(rec['decoder'](logits), rec['words'])
        assert accuracy >= rec_fp32_accuracy - 2.0


def _dims(value):
    return [d.dim_param or d.dim_value
            for d in value.type.tensor_type.shape.dim]


def test_ours_export_keeps_the_files_shapes(rec, rec_ours):
    """The runtimes see the same input shapes in the export as in the
    user's file (the recogniser's batch, height and width are dynamic
    there, so nothing is fixed that OpenVINO or onnxruntime would
    re-plan differently), and the output is dynamic where the file's is."""
    import onnx
    _, result, _ = rec_ours
    source = onnx.load(rec['model'], load_external_data=False).graph
    ours = onnx.load(result.onnx_path, load_external_data=False).graph
    assert [(v.name, _dims(v)) for v in ours.input] == \
        [(v.name, _dims(v)) for v in source.input]
    for theirs, mine in zip(source.output, ours.output):
        assert mine.name == theirs.name
        assert [isinstance(d, int) and d for d in _dims(mine)] == \
            [isinstance(d, int) and d for d in _dims(theirs)]


def test_ours_export_agrees_with_the_simulation(rec, rec_ours):
    """Each runtime computes what the simulation does: every CTC frame but
    a few (a character's peak that a last-bit difference moves one frame
    where two frames are near-tied, which alone caps the SQNR of the whole
    output near 20 dB) keeps its character, and those frames agree at 35 dB
    or more in the target's runtime (onnxruntime), 30 dB in the other
    (the file placed for onnxruntime, read by OpenVINO: 34.8-36.7 dB
    measured; docs/onnx_models.md, "Export parity"); the words the runtimes
    read are the simulation's
    (``test_ours_keeps_word_accuracy_in_both_runtimes``)."""
    from mmrazor_quant.deploy import run_parity
    _, result, parity = rec_ours
    assert set(parity) == {'onnxruntime', 'openvino'}
    inputs = torch.from_numpy(rec['inputs'][:16])
    for runtime in parity:
        frames = run_parity(result.deploy_model, result.onnx_path, inputs,
                            runtime, summary=ocr.ctc_frames)
        assert frames.agreement >= 0.99, (runtime, frames)
        bar = 35.0 if runtime == 'onnxruntime' else 30.0
        assert frames.details['sqnr_db_kept_frames'] >= bar, (runtime,
                                                              frames)


@pytest.fixture(scope='module')
def det(tmp_path_factory):
    root = tmp_path_factory.mktemp('ocr_det')
    model = ocr.prepared_model(ocr.model_paths()['det'],
                               str(root / 'det.onnx'))
    calib, _ = ocr.render_pages(NUM_CALIB_PAGES, seed=2)
    pages, _ = ocr.render_pages(NUM_PAGES, seed=3)
    inputs = ocr.det_inputs(pages)
    return dict(
        model=model, inputs=inputs, root=root,
        calib=_save_folder(str(root / 'calib'), ocr.det_inputs(calib)),
        fp32=ocr.run_batched(_ort(model), inputs))


def test_detector_map_keeps_sqnr(det):
    from mmrazor_quant.apis import front_door
    inputs = det['inputs']
    qmodel = front_door.quantize_model(
        front_door.load_model(det['model']), det['calib'],
        backend='onnxruntime', batch_size=1)
    result, parity = front_door.export_model(
        qmodel, str(det['root'] / 'det_int8.onnx'), backend='onnxruntime',
        parity_data=torch.from_numpy(inputs), example=torch.from_numpy(
            inputs[:1]))
    for runtime, report in parity.items():
        # float64 agrees with the float32 simulation at about 24 dB
        bar = min(35.0, report.float64_sqnr_db - 3.0)
        assert report.sqnr_db >= bar, (runtime, report)
    fp32 = det['fp32']
    ours = ocr.run_batched(_ort(result.onnx_path), inputs)
    assert ocr.map_sqnr(fp32, ours) >= 15.0
    iou = ocr.box_iou([ocr.det_boxes(m[None]) for m in fp32],
                      [ocr.det_boxes(m[None]) for m in ours])
    assert iou >= 0.8


def test_detector_for_openvino_runs_int8_deconvolutions(det):
    """The OpenVINO target: the DB head's two ``ConvTranspose`` layers run
    in int8 (their weights quantized per output channel, axis 1, so the
    quantizer before each fuses into the kernel) and the map keeps its
    SQNR in OpenVINO."""
    from benchmarks.onnx_models import openvino_runner
    from mmrazor_quant.apis import front_door
    inputs = det['inputs']
    qmodel = front_door.quantize_model(
        front_door.load_model(det['model']), det['calib'],
        backend='openvino', batch_size=1)
    result, _ = front_door.export_model(
        qmodel, str(det['root'] / 'det_openvino_int8.onnx'),
        backend='openvino', example=torch.from_numpy(inputs[:1]))
    _assert_int8_deconvolutions(result.onnx_path, inputs.shape[1:])
    ours = ocr.run_batched(openvino_runner(result.onnx_path, 2), inputs)
    assert ocr.map_sqnr(det['fp32'], ours) >= 15.0


def _assert_int8_deconvolutions(path, sample_shape):
    """OpenVINO runs the DB head's two ``ConvTranspose`` layers in int8:
    their weights are quantized per output channel (axis 1), so the
    quantizer before them fuses into the kernel."""
    import openvino as ov

    from mmrazor_quant.deploy.openvino.runtime_graph import precisions_of
    model = ov.Core().read_model(path)
    model.reshape({'x': [1, *sample_shape]})
    compiled = ov.Core().compile_model(
        model, 'CPU', {'INFERENCE_PRECISION_HINT': 'f32'})
    deconvolutions = precisions_of(compiled, 'Deconvolution')
    assert sum(deconvolutions.values()) == 2, deconvolutions
    assert set(deconvolutions) <= {'u8', 'i8'}, deconvolutions
