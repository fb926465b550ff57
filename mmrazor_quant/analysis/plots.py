"""Plots and tables of the analysis results (matplotlib, Agg backend)."""
import csv
import math
import os
import os.path as osp
from dataclasses import asdict
from typing import List, Optional, Sequence

from torch import Tensor

from .graphwise import LayerError, worst_first
from .metrics import HIGHER_IS_BETTER, check_metric

__all__ = [
    'layer_error_figure', 'plot_layer_errors', 'plot_histograms', 'write_csv',
    'format_table'
]

_LABELS = dict(snr='SNR (dB, higher is better)',
               cosine='cosine similarity (higher is better)',
               mse='MSE (lower is better)')


def _pyplot():
    import matplotlib
    matplotlib.use('Agg', force=True)  # files only, no display needed
    import matplotlib.pyplot as plt
    return plt


def _finite(value: float) -> float:
    # +inf SNR (no error) would break the axis; draw it at a high value.
    return value if math.isfinite(value) else (200.0 if value > 0 else
                                               -200.0)


def layer_error_figure(records: Sequence[LayerError],
                       metric: str,
                       title: str = '',
                       highlight: Optional[str] = None):
    """A bar chart with one bar per record (graph order), the worst (or
    ``highlight``) in red.

    Returns:
        matplotlib.figure.Figure: The caller saves and closes it.

    Raises:
        ValueError: If ``records`` is empty or ``metric`` unknown.
    """
    check_metric(metric)
    if not records:
        raise ValueError('plot_layer_errors: no records to plot')
    plt = _pyplot()
    records = sorted(records, key=lambda r: r.index)
    if highlight is None:
        highlight = worst_first(records, metric)[0].name
    values = [_finite(r.metric(metric)) for r in records]
    colors = ['tab:red' if r.name == highlight else 'tab:blue'
              for r in records]
    width = max(6.0, 0.22 * len(records) + 2)
    fig, ax = plt.subplots(figsize=(width, 4.5))
    ax.bar(range(len(records)), values, color=colors)
    ax.set_xticks(range(len(records)))
    ax.set_xticklabels([r.name for r in records], rotation=90, fontsize=6)
    ax.set_ylabel(_LABELS[metric])
    ax.set_title(title, fontsize=10)
    if metric == 'mse':
        ax.set_yscale('log')
    fig.tight_layout()
    return fig


def plot_layer_errors(records: Sequence[LayerError],
                      metric: str,
                      path: str,
                      title: str = '',
                      highlight: Optional[str] = None) -> str:
    """Write :func:`layer_error_figure` to the PNG ``path``.

    Args:
        records (Sequence[LayerError]): One kind each (one bar per record),
            e.g. the ``'layer'`` records of a graph-wise run.
        metric (str): ``'snr'``, ``'cosine'`` or ``'mse'``.
        path (str): The PNG to write.
        title (str): Figure title. Defaults to ''.
        highlight (str, optional): The bar drawn in red. Defaults to the
            worst record.

    Returns:
        str: ``path``.
    """
    fig = layer_error_figure(records, metric, title, highlight)
    _save(fig, path)
    _pyplot().close(fig)
    return path


def plot_histograms(panels: Sequence[tuple], path: str,
                    bins: int = 100) -> str:
    """Overlaid float vs quantized histograms, one panel each.

    Args:
        panels (Sequence[tuple]): ``(title, float_values,
            quantized_values)`` per panel.
        path (str): The PNG to write.
        bins (int): Defaults to 100.

    Returns:
        str: ``path``.
    """
    if not panels:
        raise ValueError('plot_histograms: no panels')
    plt = _pyplot()
    fig, axes = plt.subplots(
        1, len(panels), figsize=(5.5 * len(panels), 4), squeeze=False)
    for ax, (title, ref, test) in zip(axes[0], panels):
        ref, test = _numpy(ref), _numpy(test)
        lo, hi = min(ref.min(), test.min()), max(ref.max(), test.max())
        ax.hist(ref, bins=bins, range=(lo, hi), alpha=0.6, label='float',
                log=True)
        ax.hist(test, bins=bins, range=(lo, hi), alpha=0.6,
                label='quantized', log=True, histtype='step', lw=1.2)
        ax.set_title(title, fontsize=9)
        ax.legend()
    fig.tight_layout()
    _save(fig, path)
    plt.close(fig)
    return path


def _numpy(values: Tensor):
    return values.detach().float().flatten().cpu().numpy()


def _save(fig, path: str) -> None:
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=110)


def write_csv(records: Sequence[LayerError], path: str) -> str:
    """All fields of ``records`` (``extra`` flattened) as CSV rows."""
    rows: List[dict] = []
    for r in records:
        row = asdict(r)
        extra = row.pop('extra')
        row.update({k: ' '.join(map(str, v)) if isinstance(v, (list, tuple))
                    else v for k, v in extra.items()})
        rows.append(row)
    fields: List[str] = []
    for row in rows:
        fields += [k for k in row if k not in fields]
    os.makedirs(osp.dirname(osp.abspath(path)), exist_ok=True)
    with open(path, 'w', newline='') as f:
        writer = csv.DictWriter(f, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    return path


def format_table(records: Sequence[LayerError], metric: str,
                 limit: Optional[int] = None) -> str:
    """A plain-text table, worst first on ``metric``."""
    check_metric(metric)
    rows = worst_first(records, metric)[:limit]
    name_width = max([len(r.name) for r in rows] + [5])
    head = (f'{"rank":>4}  {"layer":<{name_width}}  {"kind":<10} '
            f'{"snr(dB)":>9} {"cosine":>9} {"mse":>11}')
    lines = [head, '-' * len(head)]
    for rank, r in enumerate(rows, 1):
        lines.append(f'{rank:>4}  {r.name:<{name_width}}  {r.kind:<10} '
                     f'{r.snr:>9.2f} {r.cosine:>9.5f} {r.mse:>11.4e}')
    order = 'higher' if HIGHER_IS_BETTER[metric] else 'lower'
    lines.append(f'(sorted by {metric}, worst first; {order} is better)')
    return '\n'.join(lines)
