r"""Error metrics between a float reference and its quantized counterpart.

Every metric compares a reference tensor :math:`x` (the float model) with a
test tensor :math:`y` (the quantized model), both flattened to
:math:`n` elements. The pure functions take whole tensors;
:class:`ErrorAccumulator` gives the same numbers over a stream of batches
from running sums, so nothing but five scalars per layer is kept.
"""
import math
from typing import Callable, Dict

from torch import Tensor

from mmrazor_quant.utils.sqnr import sqnr_db, sqnr_from_sums

__all__ = [
    'snr_db', 'cosine', 'mse', 'ErrorAccumulator', 'METRICS',
    'HIGHER_IS_BETTER', 'check_metric'
]


def _pair(ref: Tensor, test: Tensor):
    if ref.shape != test.shape:
        raise ValueError(f'shapes differ: reference {tuple(ref.shape)}, '
                         f'test {tuple(test.shape)}')
    return ref.detach().double().flatten(), test.detach().double().flatten()


#: SNR of ``test`` against ``ref`` in dB, as
#: :func:`mmrazor_quant.utils.sqnr.sqnr_db` (+inf for identical tensors,
#: -inf for an all-zero ``ref`` with noise).
snr_db = sqnr_db


def cosine(ref: Tensor, test: Tensor) -> float:
    r"""Cosine similarity of the flattened tensors.

    .. math::

        \cos(x, y) = \frac{\sum_i x_i y_i}
            {\sqrt{\sum_i x_i^2}\,\sqrt{\sum_i y_i^2}}

    In [-1, 1], higher is better; 1 when ``test`` is a positive multiple of
    ``ref``. Two all-zero tensors give 1, one all-zero tensor gives 0.

    Raises:
        ValueError: If the shapes differ.
    """
    x, y = _pair(ref, test)
    return _cosine(float((x * y).sum()), float((x * x).sum()),
                   float((y * y).sum()))


def mse(ref: Tensor, test: Tensor) -> float:
    r"""Mean squared error, :math:`\frac{1}{n}\sum_i (y_i - x_i)^2`.

    Lower is better; 0 when ``test == ref``.

    Raises:
        ValueError: If the shapes differ or the tensors are empty.
    """
    x, y = _pair(ref, test)
    if x.numel() == 0:
        raise ValueError('mse of empty tensors is undefined')
    return float(((y - x)**2).mean())


def _cosine(dot: float, xx: float, yy: float) -> float:
    if xx == 0.0 and yy == 0.0:
        return 1.0
    if xx == 0.0 or yy == 0.0:
        return 0.0
    return dot / math.sqrt(xx * yy)


class ErrorAccumulator:
    """Running sums that give :func:`snr_db`, :func:`cosine` and
    :func:`mse` of the concatenation of every batch seen.

    >>> import torch
    >>> acc = ErrorAccumulator()
    >>> acc.update(torch.ones(4), torch.ones(4) * 1.1)
    >>> round(acc.result()['snr'], 2)
    20.0
    """

    def __init__(self) -> None:
        self.signal = 0.0  # sum x^2
        self.noise = 0.0  # sum (y - x)^2
        self.dot = 0.0  # sum x*y
        self.test_energy = 0.0  # sum y^2
        self.count = 0

    def update(self, ref: Tensor, test: Tensor) -> None:
        """Add one batch (any shape, same for both)."""
        x, y = _pair(ref, test)
        self.signal += float((x * x).sum())
        self.noise += float(((y - x)**2).sum())
        self.dot += float((x * y).sum())
        self.test_energy += float((y * y).sum())
        self.count += x.numel()

    def result(self) -> Dict[str, float]:
        """``{'snr': dB, 'cosine': ..., 'mse': ...}`` over every batch.

        Raises:
            RuntimeError: If no batch was added.
        """
        if self.count == 0:
            raise RuntimeError('ErrorAccumulator.result() before update()')
        return dict(
            snr=sqnr_from_sums(self.signal, self.noise),
            cosine=_cosine(self.dot, self.signal, self.test_energy),
            mse=self.noise / self.count)


#: The metric functions by the names that ``--method`` takes.
METRICS: Dict[str, Callable[[Tensor, Tensor], float]] = dict(
    snr=snr_db, cosine=cosine, mse=mse)
#: Whether a larger value means a smaller error.
HIGHER_IS_BETTER: Dict[str, bool] = dict(snr=True, cosine=True, mse=False)


def check_metric(metric: str) -> str:
    """Return ``metric`` if it is a known metric name.

    Raises:
        ValueError: Listing the valid names.
    """
    if metric not in METRICS:
        raise ValueError(f'unknown metric {metric!r}; choose one of '
                         f'{sorted(METRICS)}')
    return metric
