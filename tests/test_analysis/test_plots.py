"""The plots are valid PNGs with one bar per quantized layer."""
import csv

import pytest

from mmrazor_quant.analysis import (
    find_quantized_layers,
    graphwise_error,
    layerwise_sensitivity,
)
from mmrazor_quant.analysis.plots import format_table, layer_error_figure
from mmrazor_quant.analysis.report import _write_outputs
from mmrazor_quant.analysis.statistics import weight_statistics
from .toy import HARD, LAYERS, build, inputs

PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


@pytest.fixture(scope='module')
def analysis(tmp_path_factory):
    import torch
    torch.set_num_threads(1)
    gm, _ = build(bit=4)
    x = inputs()
    graphwise = graphwise_error(gm, x)
    layerwise = layerwise_sensitivity(gm, x)
    work_dir = tmp_path_factory.mktemp('analysis')
    files = _write_outputs(gm, x, graphwise, layerwise,
                           weight_statistics(gm), 'snr', str(work_dir))
    return gm, graphwise, layerwise, files


def test_files_are_valid_pngs_and_csvs(analysis):
    import matplotlib.image as mpimg
    _, graphwise, layerwise, files = analysis
    names = sorted(f.split('/')[-1] for f in files)
    assert names == [
        'graphwise.csv', 'graphwise_snr.png', 'histogram.png',
        'layerwise.csv', 'layerwise_snr.png', 'tensor_stats.csv'
    ]
    for path in files:
        if path.endswith('.png'):
            with open(path, 'rb') as f:
                assert f.read(8) == PNG_SIGNATURE
            height, width, channels = mpimg.imread(path).shape
            assert height >= 300 and width >= 600 and channels in (3, 4)
    with open([f for f in files if f.endswith('layerwise.csv')][0]) as f:
        rows = list(csv.DictReader(f))
    assert [r['name'] for r in rows] == list(LAYERS)
    assert {'snr', 'cosine', 'mse', 'kind'} <= set(rows[0])


@pytest.mark.parametrize('which', ['graphwise', 'layerwise'])
def test_one_bar_per_quantized_layer(analysis, which):
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    gm, graphwise, layerwise, _ = analysis
    records = [r for r in graphwise if r.kind == 'layer'] \
        if which == 'graphwise' else layerwise
    fig = layer_error_figure(records, 'snr')
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    plt.close(fig)
    assert len(bars) == len(find_quantized_layers(gm)) == len(LAYERS)
    labels = [t.get_text() for t in fig.axes[0].get_xticklabels()]
    assert labels == list(LAYERS)
    if which == 'layerwise':  # the worst bar is red
        red = [lab for lab, bar in zip(labels, bars)
               if bar.get_facecolor()[0] > 0.8]
        assert red == [HARD]


def test_table_is_sorted_worst_first(analysis):
    _, _, layerwise, _ = analysis
    table = format_table(layerwise, 'mse')
    first_row = table.splitlines()[2].split()
    assert first_row[:2] == ['1', HARD]
    assert 'worst first; lower is better' in table
