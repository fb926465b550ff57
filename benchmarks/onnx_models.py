"""Real trained ONNX models quantized by ours, onnxruntime and NNCF.

The PP-OCRv4 text recogniser and detector of ``rapidocr-onnxruntime``
(``benchmarks/real_models/ocr.py``), PTQ W8A8 on the same calibration data
for every contender:

* ``fp32``: the file as shipped, weights as initializers and opset 13
  (``ocr.prepared_model``), which every contender starts from;
* ``ort_minmax`` / ``ort_percentile``: onnxruntime's ``quantize_static``
  (QDQ, per-channel int8 weights, uint8 activations);
* ``nncf_default`` / ``nncf_mixed`` / ``nncf_transformer``:
  ``nncf.quantize`` on the ONNX model (default, ``preset=MIXED``,
  ``model_type=TRANSFORMER``);
* ``ours_openvino`` / ``ours_onnxruntime``: the front door with its default
  settings for that backend (``--ours``).

Every contender gets the calibration arrays in memory (ours as a tensor,
NNCF as an ``nncf.Dataset``, ``quantize_static`` as a data reader) and is
timed from the ``.onnx`` file to the quantized file written, in wall and
in CPU seconds (``time.process_time``: all threads of the process, the
figure that a loaded machine inflates least).

For each it reports word accuracy on the rendered words (rapidocr's CTC
decoder), the detector's probability-map SQNR against fp32 and box IoU,
the time to quantize both models, and the latency of the recogniser in
onnxruntime and OpenVINO: every contender's file compiled once (the same
``--threads`` for all), then one-sample calls round-robin in a fresh
random order each round (``--latency-runs`` rounds), the median and 10th
percentile of wall and process CPU time per call, with the load average
(:func:`interleaved_latency`). ``--latency-files NAME=FILE ...`` times
files already written, the same way, and nothing else::

    PYTHONPATH=$PWD .venv-peers/bin/python benchmarks/onnx_models.py \\
        --runtimes openvino --latency-runs 1000 --latency-files \\
        nncf=work_dirs/onnx_models/nncf_default_rec.onnx \\
        ours=work_dirs/onnx_models/ours_openvino_rec.onnx \\
        nncf_again=work_dirs/onnx_models/nncf_default_rec.onnx

NNCF lives in ``.venv-peers`` (``make peers-env``); run the whole table
there, which sees the main venv's packages::

    make real-models peers-env
    PYTHONPATH=$PWD .venv-peers/bin/python benchmarks/onnx_models.py --ours

Without NNCF installed its rows are skipped with a note.
"""
import argparse
import json
import os
import os.path as osp
import sys
import time
from typing import Callable, Dict, List, Optional

import numpy as np

if __package__ in (None, ''):  # run as a script: the repository's root
    sys.path.insert(0, osp.dirname(osp.dirname(osp.abspath(__file__))))

from benchmarks.real_models import ocr  # noqa: E402

PEERS = ('fp32', 'ort_minmax', 'ort_percentile', 'nncf_default',
         'nncf_mixed', 'nncf_transformer')
OURS = ('ours_openvino', 'ours_onnxruntime')
INPUT = 'x'  # both PP-OCRv4 files name their input so

Quantizer = Callable[[str, np.ndarray, str], None]


# contenders: (fp32 file, calibration inputs, output file) -> writes file -----


def quantize_ort(method: str) -> Quantizer:

    def run(model: str, calib: np.ndarray, out: str) -> None:
        from onnxruntime.quantization import (
            CalibrationDataReader,
            CalibrationMethod,
            QuantFormat,
            QuantType,
            quantize_static,
        )

        class Reader(CalibrationDataReader):

            def __init__(self):
                self.batches = iter(calib[i:i + 1] for i in range(len(calib)))

            def get_next(self):
                batch = next(self.batches, None)
                return None if batch is None else {INPUT: batch}

        quantize_static(
            model,
            out,
            Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=getattr(CalibrationMethod, method))

    return run


def quantize_nncf(preset: Optional[str],
                  model_type: Optional[str]) -> Quantizer:

    def run(model: str, calib: np.ndarray, out: str) -> None:
        import nncf
        import onnx
        kwargs = {}
        if preset:
            kwargs['preset'] = getattr(nncf.QuantizationPreset, preset)
        if model_type:
            kwargs['model_type'] = getattr(nncf.ModelType, model_type)
        dataset = nncf.Dataset([calib[i:i + 1] for i in range(len(calib))],
                               lambda batch: {INPUT: batch})
        quantized = nncf.quantize(
            onnx.load(model), dataset, subset_size=len(calib), **kwargs)
        onnx.save(quantized, out)

    return run


def quantize_ours(backend: str) -> Quantizer:
    """The front door's Python API, default settings for ``backend``."""

    def run(model: str, calib: np.ndarray, out: str) -> None:
        import torch

        from mmrazor_quant.apis import front_door
        qmodel = front_door.quantize_model(
            front_door.load_model(model), torch.from_numpy(calib),
            backend=backend)
        result, _ = front_door.export_model(
            qmodel, out, backend=backend,
            example=torch.from_numpy(calib[:1]))
        if osp.abspath(result.onnx_path) != osp.abspath(out):
            os.replace(result.onnx_path, out)

    return run


def contenders(names: List[str]) -> Dict[str, Optional[Quantizer]]:
    table = dict(
        fp32=None,
        ort_minmax=quantize_ort('MinMax'),
        ort_percentile=quantize_ort('Percentile'),
        nncf_default=quantize_nncf(None, None),
        nncf_mixed=quantize_nncf('MIXED', None),
        nncf_transformer=quantize_nncf(None, 'TRANSFORMER'),
        ours_openvino=quantize_ours('openvino'),
        ours_onnxruntime=quantize_ours('onnxruntime'))
    return {n: table[n] for n in names}


# runtimes --------------------------------------------------------------------


def ort_runner(path: str, threads: int):
    import onnxruntime as ort
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.graph_optimization_level = \
        ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    session = ort.InferenceSession(path, options,
                                   providers=['CPUExecutionProvider'])
    return lambda x: session.run(None, {INPUT: x})[0]


def openvino_runner(path: str, threads: int):
    """Compiled once per input shape: static shapes, as deployed (the
    CPU plugin's low-precision passes reject some dynamic QDQ graphs)."""
    import openvino as ov
    core = ov.Core()
    compiled = {}

    def run(x: np.ndarray) -> np.ndarray:
        if x.shape not in compiled:
            model = core.read_model(path)
            model.reshape({INPUT: list(x.shape)})
            compiled[x.shape] = core.compile_model(
                model, 'CPU', {
                    'INFERENCE_NUM_THREADS': threads,
                    'INFERENCE_PRECISION_HINT': 'f32'
                })
        return compiled[x.shape](x)[0]

    return run


RUNTIMES = dict(onnxruntime=ort_runner, openvino=openvino_runner)


def latency_stats(times: List[float], cpu: List[float]) -> dict:
    """Median and 10th percentile (ms) of wall and process CPU times."""
    def pct(values, q):
        return 1e3 * float(np.percentile(values, q))
    return dict(wall_ms=pct(times, 50), wall_p10_ms=pct(times, 10),
                cpu_ms=pct(cpu, 50), cpu_p10_ms=pct(cpu, 10))


def interleaved_latency(runners: Dict[str, ocr.Runner], sample: np.ndarray,
                        rounds: int, warmup: int = 3) -> Dict[str, dict]:
    """Latency of one-sample calls, every contender timed in every round.

    The runners are built (compiled) before, once each; each round calls
    every one of them once, in a fresh seeded random order, so that load
    from other processes hits them alike (timing them one after the other
    lets a burst of load land on one). Wall time and process CPU time
    (``time.process_time``: all threads of the process, which the load
    inflates less) per call; :func:`latency_stats` of each.
    """
    names = list(runners)
    times = {n: [] for n in names}
    cpu = {n: [] for n in names}
    for _ in range(warmup):
        for name in names:
            runners[name](sample)
    rng = np.random.default_rng(0)
    for _ in range(rounds):
        for index in rng.permutation(len(names)):
            name = names[index]
            start, start_cpu = time.perf_counter(), time.process_time()
            runners[name](sample)
            times[name].append(time.perf_counter() - start)
            cpu[name].append(time.process_time() - start_cpu)
    return {n: latency_stats(times[n], cpu[n]) for n in names}


def latency_rows(files: Dict[str, str], sample: np.ndarray, args
                 ) -> Dict[str, Dict[str, dict]]:
    """``{runtime: {contender: stats}}``: the recognisers in ``files``
    timed interleaved (:func:`interleaved_latency`) in each runtime, all
    compiled with the same ``--threads``; the load average before and
    after each runtime's rounds under ``'load'``."""
    result = {}
    for runtime in args.runtimes:
        make = RUNTIMES[runtime]
        runners = {}
        for name, path in files.items():
            try:
                runners[name] = make(path, args.threads)
                runners[name](sample)  # compiles OpenVINO's static shape
            except Exception:  # noqa: BLE001 - its row notes the error
                runners.pop(name, None)
        load = os.getloadavg()[0]
        stats = interleaved_latency(runners, sample, args.latency_runs)
        stats['load'] = dict(before=load, after=os.getloadavg()[0])
        result[runtime] = stats
    return result


def format_latency(result: Dict[str, Dict[str, dict]]) -> str:
    """One table per runtime: median and 10th percentile, wall and CPU."""
    lines = []
    for runtime, stats in result.items():
        load = stats['load']
        lines += [
            f'recogniser latency in {runtime}, ms (interleaved; load average '
            f'{load["before"]:.1f} before, {load["after"]:.1f} after)',
            '| contender | wall median | wall p10 | CPU median | CPU p10 |',
            '|---|---|---|---|---|'
        ]
        for name, s in stats.items():
            if name != 'load':
                lines.append(f'| {name} | {s["wall_ms"]:.2f} | '
                             f'{s["wall_p10_ms"]:.2f} | {s["cpu_ms"]:.2f} | '
                             f'{s["cpu_p10_ms"]:.2f} |')
    return '\n'.join(lines)


# data ------------------------------------------------------------------------


def build_data(args) -> dict:
    calib_words, _ = ocr.render_words(args.calib, seed=0)
    words, texts = ocr.render_words(args.words, seed=1)
    calib_pages, _ = ocr.render_pages(args.det_calib, seed=2)
    pages, _ = ocr.render_pages(args.pages, seed=3)
    return dict(
        rec_calib=ocr.rec_inputs(calib_words),
        rec_eval=ocr.rec_inputs(words),
        words=texts,
        det_calib=ocr.det_inputs(calib_pages),
        det_eval=ocr.det_inputs(pages))


# one contender ---------------------------------------------------------------


def quantize_both(name: str, quantizer: Optional[Quantizer], paths: dict,
                  data: dict, work_dir: str) -> dict:
    """The contender's files of both models and its time to write them."""
    if quantizer is None:
        return dict(files=dict(paths))
    files, start, cpu = {}, time.perf_counter(), time.process_time()
    for model in ('rec', 'det'):
        files[model] = osp.join(work_dir, f'{name}_{model}.onnx')
        quantizer(paths[model], data[f'{model}_calib'], files[model])
    return dict(files=files, quantize_s=time.perf_counter() - start,
                quantize_cpu_s=time.process_time() - cpu)


def run_in(runtime: str, files: dict, data: dict, decoder, args) -> dict:
    """Word accuracy and detector maps of ``files`` in one runtime."""
    make = RUNTIMES[runtime]
    rec = make(files['rec'], args.threads)
    logits = ocr.run_batched(rec, data['rec_eval'], args.batch)
    det = make(files['det'], args.threads)
    return dict(
        word_acc=ocr.word_accuracy(decoder(logits), data['words']),
        det_maps=ocr.run_batched(det, data['det_eval'], 1))


def evaluate(name: str, quantizer: Optional[Quantizer], paths: dict,
             data: dict, fp32: Optional[dict], args) -> dict:
    """One contender's row; a runtime that rejects its files is noted in
    the row (``<runtime>_error``), not raised."""
    row = dict(name=name)
    quantized = quantize_both(name, quantizer, paths, data, args.work_dir)
    row.update(quantized, files=None, rec_file=quantized['files']['rec'])
    decoder = ocr.CtcDecoder(paths['rec'])
    for runtime in args.runtimes:
        try:
            result = run_in(runtime, quantized['files'], data, decoder, args)
        except Exception as e:  # noqa: BLE001 - a runtime rejecting the file
            row[f'{runtime}_error'] = _first_line(e)
            continue
        row.update({f'{k}_{runtime}': v for k, v in result.items()})
        ref = (fp32 or row).get(f'det_maps_{runtime}')
        if ref is not None:
            maps = result['det_maps']
            row[f'det_sqnr_{runtime}'] = ocr.map_sqnr(ref, maps)
            row[f'det_iou_{runtime}'] = ocr.box_iou(
                [ocr.det_boxes(m[None]) for m in ref],
                [ocr.det_boxes(m[None]) for m in maps])
    return row


def _first_line(error: Exception) -> str:
    lines = [ln for ln in str(error).splitlines() if ln.strip()]
    return f'{type(error).__name__}: {lines[-1][:160] if lines else ""}'


def _cells(row: dict, runtime: str) -> List[str]:
    if f'{runtime}_error' in row:
        return [f'fails: {row[f"{runtime}_error"]}', '-', '-']
    sqnr = row.get(f'det_sqnr_{runtime}')
    return [
        f'{row[f"word_acc_{runtime}"]:.2f}',
        'ref' if row['name'] == 'fp32' or sqnr is None else f'{sqnr:.1f}',
        f'{row.get(f"det_iou_{runtime}", float("nan")):.3f}'
    ]


def _number(row: dict, key: str, digits: int) -> str:
    return f'{row[key]:.{digits}f}' if key in row else '-'


def format_table(rows: List[dict], runtimes: List[str]) -> str:
    head = ['contender']
    for runtime in runtimes:
        head += [f'word acc. % ({runtime})', f'det map SQNR dB ({runtime})',
                 f'det box IoU ({runtime})']
    head += ['quantize s (both models)', 'quantize CPU s'] + [
        f'rec latency ms ({r})' for r in runtimes
    ]  # the median wall time of the interleaved rounds
    lines = ['| ' + ' | '.join(head) + ' |', '|' + '---|' * len(head)]
    for row in rows:
        if 'error' in row:
            lines.append(f'| {row["name"]} | ' + row['error'] + ' |')
            continue
        cells = [row['name']]
        for runtime in runtimes:
            cells += _cells(row, runtime)
        cells.append(_number(row, 'quantize_s', 1))
        cells.append(_number(row, 'quantize_cpu_s', 1))
        cells += [_number(row, f'latency_ms_{r}', 2) for r in runtimes]
        lines.append('| ' + ' | '.join(cells) + ' |')
    return '\n'.join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--contenders', nargs='+', default=list(PEERS),
                        choices=PEERS + OURS)
    parser.add_argument('--ours', action='store_true',
                        help='add ours (OpenVINO and onnxruntime targets)')
    parser.add_argument('--runtimes', nargs='+',
                        default=['onnxruntime', 'openvino'],
                        choices=['onnxruntime', 'openvino'])
    parser.add_argument('--words', type=int, default=2000,
                        help='evaluation words (one is 0.05 points)')
    parser.add_argument('--calib', type=int, default=64,
                        help='calibration words')
    parser.add_argument('--pages', type=int, default=16)
    parser.add_argument('--det-calib', type=int, default=32,
                        help='calibration pages')
    parser.add_argument('--batch', type=int, default=1)
    parser.add_argument('--threads', type=int, default=2)
    parser.add_argument('--latency-runs', type=int, default=300,
                        help='interleaved rounds of one-sample calls')
    parser.add_argument(
        '--latency-files', nargs='+', metavar='NAME=FILE',
        help='only time these recogniser files, interleaved (no '
        'quantizing, no accuracy); a file named twice is the A/A control')
    parser.add_argument('--work-dir', default='work_dirs/onnx_models')
    parser.add_argument('--json', help='also write the rows here')
    args = parser.parse_args(argv)
    if args.ours:
        args.contenders += [c for c in OURS if c not in args.contenders]
    if 'fp32' not in args.contenders:
        args.contenders.insert(0, 'fp32')  # every SQNR is against it
    return args


def _named_files(pairs: List[str]) -> Dict[str, str]:
    files = {}
    for pair in pairs:
        name, sep, path = pair.partition('=')
        if not sep or not osp.isfile(path):
            raise SystemExit(f'--latency-files: {pair!r} is not NAME=FILE '
                             'of an existing file')
        files[name] = path
    return files


def latency_sample() -> np.ndarray:
    """The one word every latency call reads (the first evaluation
    word)."""
    words, _ = ocr.render_words(1, seed=1)
    return ocr.rec_inputs(words)[:1]


def main(argv=None) -> None:
    args = parse_args(argv)
    reason = ocr.missing_reason()
    if reason:
        raise SystemExit(f'onnx_models: {reason}')
    if args.latency_files:
        print(format_latency(latency_rows(
            _named_files(args.latency_files), latency_sample(), args)))
        return
    os.makedirs(args.work_dir, exist_ok=True)
    paths = {
        model: ocr.prepared_model(
            path, osp.join(args.work_dir, f'fp32_{model}.onnx'))
        for model, path in ocr.model_paths().items()
    }
    data = build_data(args)
    rows, fp32, rec_files = [], None, {}
    for name, quantizer in contenders(args.contenders).items():
        try:
            row = evaluate(name, quantizer, paths, data, fp32, args)
        except ImportError as e:
            row = dict(name=name, error=f'not run: {e}')
        if name == 'fp32':
            fp32 = row
        if 'error' not in row:
            rec_files[name] = row.pop('rec_file')
        rows.append(row)
        print(format_table([row], args.runtimes).splitlines()[-1], flush=True)
    latency = latency_rows(rec_files, data['rec_eval'][:1], args)
    for row in rows:
        for runtime, stats in latency.items():
            if row['name'] in stats:
                row[f'latency_{runtime}'] = stats[row['name']]
                row[f'latency_ms_{runtime}'] = stats[row['name']]['wall_ms']
    print(format_table(rows, args.runtimes))
    print(format_latency(latency))
    if args.json:
        plain = [{k: v for k, v in r.items() if not k.startswith('det_maps')}
                 for r in rows]
        with open(args.json, 'w') as f:
            json.dump(plain, f, indent=1)


if __name__ == '__main__':
    main()
