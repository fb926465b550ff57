"""benchmarks/docs_parity.py: its rows match the pages, its commands name
files that exist, and it reads the reports the tools print."""
import math
import os.path as osp

import numpy as np
import pytest

from benchmarks import docs_parity
from mmrazor_quant.deploy import compare_outputs

REPO = docs_parity.REPO


@pytest.mark.parametrize('row', docs_parity.ROWS,
                         ids=lambda r: f'{r.page}:{r.row}')
def test_each_documented_figure_is_on_its_page(row):
    with open(osp.join(REPO, row.page)) as f:
        page = f.read()
    assert docs_parity.format_db(row.documented) in page


def test_every_config_and_tool_a_command_names_exists():
    for commands, _ in docs_parity.GROUPS.values():
        for argv in commands:
            for arg in argv:
                if arg.startswith(('configs/', 'tools/', 'tests/')):
                    path = arg.split('::')[0]
                    assert osp.exists(osp.join(REPO, path)), arg


def test_reads_the_figures_of_a_parity_report():
    rng = np.random.default_rng(0)
    sim = rng.normal(size=(64, 10)).astype(np.float32)
    out = sim + rng.normal(scale=1e-3, size=sim.shape).astype(np.float32)
    out[0] = -sim[0]  # one sample whose arg-max moves
    report = compare_outputs(sim, out, 'onnxruntime')
    text = 'log line\n' + report.format() + '\n' + report.format()
    figures = docs_parity.parse_reports(text)
    assert len(figures) == 2
    assert figures[0].sqnr == round(report.sqnr_db, 1)
    assert figures[0].agreement == pytest.approx(63 / 64 * 100, abs=5e-3)


def test_reads_each_tests_reports_and_a_demo_table():
    a, b = docs_parity.TESTS[:2]
    text = (f'{a} parity with the simulation (x, 8 samples):\n'
            '  output SQNR     : 54.0 dB\nPASSED\n'
            f'{b} 35 ReLU6\nparity with the simulation (x, 8 samples):\n'
            '  output SQNR     : inf dB\nPASSED\n')
    tests = docs_parity.parse_tests(text)
    assert tests[a][0].sqnr == 54.0 and math.isinf(tests[b][0].sqnr)
    table = ('| model | method | backend | ...\n'
             '| A | PTQ | openvino | W8A8 | 1 | 1 | 0 | ok | '
             'openvino 42.9 (onnxruntime 42.2) |\n'
             '| A | LSQ QAT | academic | W4A8 | 1 | 1 | 0 | ok |  |\n'
             '| B | PTQ | tensorrt | W8A8 | 1 | 1 | 0 | ok | '
             'onnxruntime 35.2 (openvino 26.6) |\n')
    assert [f.sqnr for f in docs_parity.parse_demo(table)] == [
        42.9, 42.2, 35.2, 26.6]
