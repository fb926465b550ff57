"""Re-measure the parity figures of the docs' tables with the commands the
pages give, and print them next to the documented figures.

Each row names its page, its table row, the figure the page documents
(output SQNR in dB, the lowest over the outputs), and the command behind it:
a ``pytest -s`` run of the test that prints the report (the parity matrix of
``docs/deploy.md``), or the ``tools/ptq.py`` / ``tools/train.py`` /
``tools/export.py`` lines the page shows, or the task demo with
``--export`` (its table's parity column). Each command's output goes to
``<out>/logs/<group>.log``; the figures are read from the parity reports it
prints (``parity with the simulation (<runtime>, N samples): ...``), in order.

Needs (as the pages say): the demo's fp32 checkpoints
``work_dirs/fp32/{resnet18,mobilenetv2,vit}_mnist/float.pth`` and, for the
``export-demo`` group, its quantized checkpoints under ``work_dirs/demo/``
(``python tools/demo.py``); ``make litert``, ``make rknn-env``
(``.venv-rknn`` or ``$MMRAZOR_QUANT_RKNN_VENV``) and ``make ncnn`` for
those groups; the trained YOLOv5-n
``work_dirs/yolo/yolov5_n_digits/epoch_15.pth`` (``python tools/train.py
configs/yolo/yolov5_n_digits.py --work-dir work_dirs/yolo/yolov5_n_digits``)
for ``ncnn-yolo``; the task demos' fp32 checkpoints
(``work_dirs/fp32/<model>/float.pth`` of ``python tools/demo.py --task
{yolo,pose,seg}``) for the ``*-demo`` groups, which rerun the demo with
``--reuse-fp32 --export``, and its PTQ checkpoints for ``seg-export``. A
group whose inputs are missing is reported as skipped with the file it
needs.

The figures are deterministic for given checkpoints on one CPU kind (VNNI or
not: ``mmrazor_quant.deploy.int8_pairs_saturate()``); figures on the demo's
checkpoints move with the fp32 training that made them, and the LSQ groups'
with the thread count of their training epoch (the pages say which: ncnn's
on two threads, the others with ``OMP_NUM_THREADS=1``).

Usage:
    OMP_NUM_THREADS=1 python benchmarks/docs_parity.py [--only GROUP ...]
        [--out work_dirs/docs_parity] [--timeout 600] [--list]

``--only litert`` runs every LiteRT group (a prefix up to a ``-``).
"""
import argparse
import math
import os
import os.path as osp
import re
import subprocess
import sys
import time
from typing import Dict, List, NamedTuple, Optional, Sequence

REPO = osp.dirname(osp.dirname(osp.abspath(__file__)))
PTQ = 'configs/quantization/ptq/'
LSQ = 'configs/quantization/qat/lsq/'
FP32 = 'work_dirs/fp32/{}_mnist/float.pth'
DEMO = 'work_dirs/demo/{0}/model_ptq.pth'
PY = '{python}'  # replaced by this interpreter
OUT = '{out}'  # replaced by the group's work dir

MATRIX = 'tests/test_deploy/test_parity_matrix.py::'
TESTS = [MATRIX + f'test_onnxruntime_and_openvino_parity[{a}-{m}]'
         for a in ('resnet', 'mbv2') for m in ('ptq', 'lsq')] + [
    MATRIX + f'test_tensorrt_qdq_parity[{a}-{m}]'
    for a in ('resnet', 'mbv2') for m in ('ptq', 'lsq')] + [
    MATRIX + 'test_mobilenetv2_w4a4_opset21',
    'tests/test_deploy/test_export_parity.py::'
    'test_w4a4_opset21_and_lsq_scales']


def export(config: str, ckpt: str, backend: str, *extra: str) -> List[str]:
    return [PY, 'tools/export.py', config, ckpt, '--backend', backend,
            '--work-dir', OUT, *extra]


def ptq(config: str, backend: str) -> List[str]:
    return [PY, 'tools/ptq.py', config, '--work-dir', OUT, '--export',
            backend, '--num-samples', '1000']


def lsq(config: str, backend: str) -> List[List[str]]:
    """One LSQ epoch (the config's), then the export of ``epoch_1.pth``."""
    return [[PY, 'tools/train.py', config, '--work-dir', OUT],
            export(config, osp.join(OUT, 'epoch_1.pth'), backend,
                   '--num-samples', '1000')]


def _seg(name: str) -> str:
    return f'ptq_{name}_digits'


#: group -> (commands run in order, files they need)
GROUPS: Dict[str, tuple] = {
    # two runs, each under --timeout on a loaded 2-core machine: the W8A8
    # matrix, then the W4A4 exports (the dynamo exporter, slower)
    'tests': ([[PY, '-m', 'pytest', '-s', '-v', '-n', '0', '-p',
                'no:cacheprovider', *part] for part in (TESTS[:8], TESTS[8:])],
              []),
    'export-demo': ([
        export(PTQ + 'ptq_openvino_mobilenetv2_mnist.py',
               DEMO.format('ptq_openvino_mobilenetv2_mnist'), 'openvino'),
        export(PTQ + 'ptq_openvino_resnet18_mnist.py',
               DEMO.format('ptq_openvino_resnet18_mnist'), 'onnxruntime',
               '--num-samples', '1000'),
        export(PTQ + 'ptq_openvino_resnet18_mnist.py',
               DEMO.format('ptq_openvino_resnet18_mnist'), 'onnxruntime',
               '--num-samples', '1000', '--float-bias'),
        export(PTQ + 'ptq_openvino_mobilenetv2_mnist.py',
               DEMO.format('ptq_openvino_mobilenetv2_mnist'), 'onnxruntime',
               '--num-samples', '1000'),
        export(PTQ + 'ptq_openvino_mobilenetv2_mnist.py',
               DEMO.format('ptq_openvino_mobilenetv2_mnist'), 'openvino',
               '--num-samples', '1000'),
        export(LSQ + 'lsq_openvino_resnet18_mnist.py',
               'work_dirs/demo/lsq_openvino_resnet18_mnist/epoch_1.pth',
               'onnxruntime', '--num-samples', '1000'),
        export(LSQ + 'lsq_openvino_resnet18_mnist.py',
               'work_dirs/demo/lsq_openvino_resnet18_mnist/epoch_1.pth',
               'openvino', '--num-samples', '1000'),
    ], [DEMO.format('ptq_openvino_mobilenetv2_mnist'),
        DEMO.format('ptq_openvino_resnet18_mnist'),
        'work_dirs/demo/lsq_openvino_resnet18_mnist/epoch_1.pth']),
    'seg-export': ([
        export(PTQ + f'segmentation/{_seg(c)}.py', DEMO.format(_seg(c)),
               backend, '--num-samples', '64')
        for c, backend in (
            ('openvino_fastscnn', 'openvino'),
            ('openvino_fastscnn', 'onnxruntime'),
            ('tensorrt_fastscnn', 'tensorrt'),
            ('openvino_segformer_mit-b0', 'openvino'),
            ('openvino_segformer_mit-b0', 'onnxruntime'),
            ('tensorrt_segformer_mit-b0', 'tensorrt'))],
        [DEMO.format(_seg('openvino_fastscnn')),
         DEMO.format(_seg('tensorrt_fastscnn')),
         DEMO.format(_seg('openvino_segformer_mit-b0')),
         DEMO.format(_seg('tensorrt_segformer_mit-b0'))]),
    'ncnn-yolo': ([[PY, 'tools/ptq.py',
                    PTQ + 'yolo/ptq_ncnn_yolov5_n_digits.py',
                    '--work-dir', OUT, '--export', 'ncnn', '--cfg-options',
                    'model.float_checkpoint=work_dirs/yolo/yolov5_n_digits/'
                    'epoch_15.pth']],
                  ['work_dirs/yolo/yolov5_n_digits/epoch_15.pth']),
}
#: task -> fp32 config stems of its demo (``configs/demo/<task>.py``)
DEMO_TASKS = {'yolo': ('yolov5_n_digits', 'rtmdet_tiny_digits'),
              'pose': ('rtmpose_t_digits', 'simplebaseline_r18_digits'),
              'seg': ('fastscnn_digits', 'segformer_mit-b0_digits')}
#: the groups that rerun a task demo and read its table
TASK_DEMOS = tuple(f'{task}-demo' for task in DEMO_TASKS)
for _task, _stems in DEMO_TASKS.items():
    GROUPS[f'{_task}-demo'] = (
        [[PY, 'tools/demo.py', '--task', _task, '--reuse-fp32', '--export']],
        [f'work_dirs/fp32/{stem}/float.pth' for stem in _stems])
for _backend in ('litert', 'rknn', 'ncnn'):
    GROUPS[f'{_backend}-ptq-resnet18'] = (
        [ptq(PTQ + f'ptq_{_backend}_resnet18_mnist.py', _backend)],
        [FP32.format('resnet18')])
    GROUPS[f'{_backend}-ptq-mobilenetv2'] = (
        [ptq(PTQ + f'ptq_{_backend}_mobilenetv2_mnist.py', _backend)],
        [FP32.format('mobilenetv2')])
    GROUPS[f'{_backend}-lsq-resnet18'] = (
        lsq(LSQ + f'lsq_{_backend}_resnet18_mnist.py', _backend),
        [FP32.format('resnet18')])
for _vit in ('vit', 'vit_float_matmul'):
    GROUPS[f'litert-ptq-{_vit}'] = (
        [ptq(PTQ + f'ptq_litert_{_vit.replace("vit", "vit_mnist", 1)}.py',
             'litert')], [FP32.format('vit')])


class Row(NamedTuple):
    page: str
    row: str
    documented: float
    group: str
    #: which parity report of the group's output (or, for ``tests``, of
    #: the test's output: ``(test index, report index)``)
    index: object


def _dp(row, doc, group, index):
    return Row('docs/deploy.md', row, doc, group, index)


ROWS: List[Row] = [
    _dp('ResNet PTQ W8A8 u8, onnxruntime', 54.0, 'tests', (0, 0)),
    _dp('ResNet PTQ W8A8 u8, openvino', 54.7, 'tests', (0, 1)),
    _dp('ResNet LSQ W8A8 u8, onnxruntime', 56.1, 'tests', (1, 0)),
    _dp('ResNet LSQ W8A8 u8, openvino', 55.6, 'tests', (1, 1)),
    _dp('MobileNetV2 PTQ W8A8 u8, onnxruntime', 38.8, 'tests', (2, 0)),
    _dp('MobileNetV2 PTQ W8A8 u8, openvino', 38.7, 'tests', (2, 1)),
    _dp('MobileNetV2 LSQ W8A8 u8, onnxruntime', 51.0, 'tests', (3, 0)),
    _dp('MobileNetV2 LSQ W8A8 u8, openvino', 50.7, 'tests', (3, 1)),
    _dp('ResNet PTQ W8A8 s8, tensorrt', 52.8, 'tests', (4, 0)),
    _dp('ResNet LSQ W8A8 s8, tensorrt', 70.1, 'tests', (5, 0)),
    _dp('MobileNetV2 PTQ W8A8 s8, tensorrt', 54.0, 'tests', (6, 0)),
    _dp('MobileNetV2 LSQ W8A8 s8, tensorrt', 65.3, 'tests', (7, 0)),
    _dp('ResNet academic W4A4 LSQ, opset 21', math.inf, 'tests', (9, 0)),
    _dp('MobileNetV2 W4A4 LSQ init, opset 21', 130.7, 'tests', (8, 0)),
    _dp('MobileNetV2 PTQ, tools/export.py, openvino (default samples)', 58.2,
        'export-demo', 0),
    _dp('demo ResNet PTQ, --backend onnxruntime', 65.6, 'export-demo', 1),
    _dp('demo ResNet PTQ, --backend onnxruntime --float-bias', 50.0,
        'export-demo', 2),
    _dp('demo MobileNetV2 PTQ, --backend onnxruntime', 54.1,
        'export-demo', 3),
    _dp('demo MobileNetV2 PTQ, --backend openvino', 58.1, 'export-demo', 4),
    _dp('demo ResNet LSQ epoch_1, --backend onnxruntime', 64.1,
        'export-demo', 5),
    _dp('demo ResNet LSQ epoch_1, --backend openvino', 62.6,
        'export-demo', 6),
    _dp('LiteRT ResNet-18 PTQ', 53.1, 'litert-ptq-resnet18', 0),
    _dp('LiteRT MobileNetV2 PTQ', 47.0, 'litert-ptq-mobilenetv2', 0),
    _dp('LiteRT ResNet-18 LSQ, 1 epoch', 35.0, 'litert-lsq-resnet18', 0),
    _dp('LiteRT ViT PTQ', 40.0, 'litert-ptq-vit', 0),
    _dp('LiteRT ViT PTQ, float attention matmuls', 39.8,
        'litert-ptq-vit_float_matmul', 0),
    _dp('RKNN ResNet-18 PTQ', 57.1, 'rknn-ptq-resnet18', 0),
    _dp('RKNN MobileNetV2 PTQ', 51.7, 'rknn-ptq-mobilenetv2', 0),
    _dp('RKNN ResNet-18 LSQ, 1 epoch', 47.8, 'rknn-lsq-resnet18', 0),
    _dp('ncnn ResNet-18 PTQ', 147.9, 'ncnn-ptq-resnet18', 0),
    _dp('ncnn MobileNetV2 PTQ', 146.7, 'ncnn-ptq-mobilenetv2', 0),
    _dp('ncnn ResNet-18 LSQ, 1 epoch', 87.3, 'ncnn-lsq-resnet18', 0),
    _dp('ncnn YOLOv5-n PTQ, trained', math.inf, 'ncnn-yolo', 0),
    Row('docs/backends.md', 'ncnn YOLOv5-n PTQ, trained', math.inf,
        'ncnn-yolo', 0),
] + [
    Row('docs/segmentation.md', f'export parity {m} {c}', doc, 'seg-export',
        i) for i, (m, c, doc) in enumerate((
            ('Fast-SCNN', 'PTQ OpenVINO, openvino', 37.6),
            ('Fast-SCNN', 'PTQ OpenVINO, onnxruntime', 44.6),
            ('Fast-SCNN', 'PTQ TensorRT, tensorrt', 41.4),
            ('SegFormer-B0', 'PTQ OpenVINO, openvino', 45.7),
            ('SegFormer-B0', 'PTQ OpenVINO, onnxruntime', 41.3),
            ('SegFormer-B0', 'PTQ TensorRT, tensorrt', 49.5)))]



def _demo_rows(page: str, group: str, rows: Sequence[tuple]) -> List[Row]:
    """A demo table's parity cells: its own runtime, then the other."""
    out = []
    for i, (model, method, own, other) in enumerate(rows):
        out += [Row(page, f'{model} {method}, its runtime', own, group,
                    2 * i),
                Row(page, f'{model} {method}, the other runtime', other,
                    group, 2 * i + 1)]
    return out


ROWS += _demo_rows('docs/detection.md', 'yolo-demo', (
    ('YOLOv5-n', 'PTQ openvino', 45.4, 44.3),
    ('YOLOv5-n', 'PTQ tensorrt', 41.2, 33.0),
    ('YOLOv5-n', 'LSQ openvino', 35.7, 40.8),
    ('RTMDet-tiny', 'PTQ openvino', 39.1, 37.2),
    ('RTMDet-tiny', 'PTQ tensorrt', 35.0, 27.8),
    ('RTMDet-tiny', 'LSQ openvino', 38.7, 36.1)))
ROWS += _demo_rows('docs/pose.md', 'pose-demo', (
    ('RTMPose-t', 'PTQ openvino', 40.2, 38.0),
    ('RTMPose-t', 'PTQ tensorrt', 37.4, 31.5),
    ('RTMPose-t', 'LSQ openvino', 40.8, 37.9),
    ('SimpleBaseline-R18', 'PTQ openvino', 61.1, 47.3),
    ('SimpleBaseline-R18', 'PTQ tensorrt', 58.1, 51.2),
    ('SimpleBaseline-R18', 'LSQ openvino', 59.6, 29.5)))
ROWS += _demo_rows('docs/segmentation.md', 'seg-demo', (
    ('Fast-SCNN', 'PTQ openvino', 40.2, 35.9),
    ('Fast-SCNN', 'PTQ tensorrt', 41.6, 36.3),
    ('Fast-SCNN', 'LSQ openvino', 46.1, 22.9),
    ('SegFormer-B0', 'PTQ openvino', 27.8, 41.4),
    ('SegFormer-B0', 'PTQ tensorrt', 52.6, 27.4),
    ('SegFormer-B0', 'LSQ openvino', 22.5, 30.1)))

REPORT = re.compile(r'parity with the simulation \(')
SQNR = re.compile(r'output SQNR\s*: (inf|[-\d.]+) dB')
AGREE = re.compile(r'agreement\s*: ([\d.]+) %')
NODE = re.compile(r'^(tests/\S+::\S+) ', re.M)
#: a demo table's parity cell: ``openvino 42.9 (onnxruntime 42.2) |``
DEMO_CELL = re.compile(r'\| \w+ (inf|[-\d.]+) \(\w+ (inf|[-\d.]+)\) \|$',
                       re.M)


class Figure(NamedTuple):
    sqnr: float
    agreement: Optional[float]


def parse_reports(text: str) -> List[Figure]:
    """The SQNR and agreement of each parity report in ``text``, in order."""
    figures = []
    for chunk in REPORT.split(text)[1:]:
        sqnr, agree = SQNR.search(chunk), AGREE.search(chunk)
        if sqnr:
            figures.append(Figure(float(sqnr.group(1)),
                                  float(agree.group(1)) if agree else None))
    return figures


def parse_tests(text: str) -> Dict[str, List[Figure]]:
    """Per test id of a ``pytest -s -v`` log, the reports it printed."""
    marks = list(NODE.finditer(text))
    return {m.group(1): parse_reports(
        text[m.end():marks[i + 1].start() if i + 1 < len(marks) else None])
        for i, m in enumerate(marks)}


def parse_demo(text: str) -> List[Figure]:
    """The parity cells of the last table a demo printed, in order."""
    tables = text.split('| model | method |')
    return [Figure(float(v), None) for m in DEMO_CELL.finditer(tables[-1])
            for v in m.groups()]


def run_group(name: str, out: str, timeout: int) -> str:
    """Run a group's commands; return their joined output ('' if skipped)."""
    commands, needs = GROUPS[name]
    missing = [p for p in needs if not osp.exists(osp.join(REPO, p))]
    if missing:
        print(f'[{name}] skipped: missing {", ".join(missing)}',
              file=sys.stderr)
        return ''
    work_dir = osp.join(out, name)
    os.makedirs(work_dir, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=REPO)
    log_path = osp.join(out, 'logs', f'{name}.log')
    os.makedirs(osp.dirname(log_path), exist_ok=True)
    texts = []
    start = time.time()
    for argv in commands:
        argv = [a.replace(PY, sys.executable).replace(OUT, work_dir)
                for a in argv]
        try:
            proc = subprocess.run(argv, cwd=REPO, env=env, timeout=timeout,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True)
            texts.append(proc.stdout)
            if proc.returncode:
                texts.append(f'exit status {proc.returncode}\n')
        except subprocess.TimeoutExpired as e:
            texts.append((e.stdout or b'').decode() if isinstance(
                e.stdout, bytes) else (e.stdout or ''))
            texts.append(f'timed out after {timeout} s\n')
            break
    text = ''.join(texts)
    with open(log_path, 'w') as f:
        f.write(text)
    print(f'[{name}] {time.time() - start:.0f} s, log {log_path}',
          file=sys.stderr)
    return text


def measured(row: Row, outputs: Dict[str, str]) -> Optional[Figure]:
    text = outputs.get(row.group)
    if not text:
        return None
    if row.group == 'tests':
        test, index = row.index
        figures = parse_tests(text).get(TESTS[test], [])
    elif row.group in TASK_DEMOS:
        figures, index = parse_demo(text), row.index
    else:
        figures, index = parse_reports(text), row.index
    return figures[index] if index < len(figures) else None


def format_db(value: float) -> str:
    return 'inf' if math.isinf(value) else f'{value:.1f}'


def format_table(rows: Sequence[Row], outputs: Dict[str, str]) -> str:
    lines = ['| page | row | documented dB | re-measured dB | difference | '
             'agreement | group |', '|---|---|---|---|---|---|---|']
    for row in rows:
        fig = measured(row, outputs)
        if fig is None:
            now, diff, agree = 'not run', '', ''
        else:
            now = format_db(fig.sqnr)
            diff = ('0.0' if fig.sqnr == row.documented else
                    f'{fig.sqnr - row.documented:+.1f}')
            agree = '' if fig.agreement is None else f'{fig.agreement:.2f} %'
        lines.append(f'| {row.page} | {row.row} | '
                     f'{format_db(row.documented)} | {now} | {diff} | '
                     f'{agree} | {row.group} |')
    return '\n'.join(lines)


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--only', nargs='+', metavar='GROUP',
                        help='run these groups only; a prefix (litert, '
                        'rknn, ncnn) names every group it starts: '
                        + ', '.join(GROUPS))
    parser.add_argument('--out', default=osp.join(REPO, 'work_dirs',
                                                   'docs_parity'))
    parser.add_argument('--timeout', type=int, default=600,
                        help='seconds per command')
    parser.add_argument('--list', action='store_true',
                        help='print each group\'s commands and exit')
    args = parser.parse_args(argv)
    groups = list(GROUPS)
    if args.only:
        unknown = [g for g in args.only
                   if not any(n.startswith(g) for n in GROUPS)]
        if unknown:
            parser.error(f'--only: no group {unknown}; groups: '
                         + ', '.join(GROUPS))
        groups = [n for n in GROUPS
                  if any(n == g or n.startswith(g + '-') for g in args.only)]
    # the demos first: seg-export reads the checkpoints seg-demo writes
    groups.sort(key=lambda name: name not in TASK_DEMOS)
    if args.list:
        for name in groups:
            for cmd in GROUPS[name][0]:
                print(f'{name}: {" ".join(cmd)}')
        return 0
    outputs = {name: run_group(name, args.out, args.timeout)
               for name in groups}
    print(format_table([r for r in ROWS if r.group in groups], outputs))
    return 0


if __name__ == '__main__':
    sys.exit(main())
