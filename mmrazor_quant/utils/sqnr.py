r"""Signal-to-quantization-noise ratio: the one definition every report uses.

.. math::

    \mathrm{SQNR}(x, y) = 10 \log_{10}
        \frac{\sum_i x_i^2}{\sum_i (y_i - x_i)^2}

with :math:`x` the reference (float model, simulation) and :math:`y` the
tested tensor (quantized model, runtime). Sums are accumulated in float64.
"""
import math
from typing import Tuple, Union

import numpy as np
import torch
from torch import Tensor

__all__ = ['sqnr_db', 'sqnr_from_sums']

ArrayLike = Union[Tensor, np.ndarray]


def sqnr_from_sums(signal: float, noise: float) -> float:
    r"""SQNR in dB from :math:`\sum x^2` and :math:`\sum (y - x)^2`.

    Edge cases, fixed once for every caller:

    * ``noise == 0`` (identical tensors, two all-zero ones included):
      ``+inf``;
    * ``signal == 0`` with noise, or noise so large the ratio underflows:
      ``-inf``.

    Args:
        signal (float): Energy of the reference, :math:`\sum_i x_i^2`.
        noise (float): Energy of the error, :math:`\sum_i (y_i - x_i)^2`.

    Returns:
        float: The SQNR in dB.
    """
    if noise == 0.0:
        return math.inf
    ratio = signal / noise
    if ratio == 0.0:
        return -math.inf
    return 10.0 * math.log10(ratio)


def sqnr_db(reference: ArrayLike, test: ArrayLike) -> float:
    """SQNR of ``test`` against ``reference`` in dB (see the module
    docstring; edge cases in :func:`sqnr_from_sums`).

    Higher is better; 0 dB when the noise is as strong as the signal; every
    halving of the noise amplitude adds 6.02 dB.

    Example:
        >>> sqnr_db(np.ones(4), np.full(4, 1.1))  # doctest: +ELLIPSIS
        20.0...

    Args:
        reference (Tensor | np.ndarray): The reference :math:`x`.
        test (Tensor | np.ndarray): The tested values :math:`y`, same shape.

    Returns:
        float: The SQNR in dB.

    Raises:
        ValueError: Naming both shapes, if they differ.
    """
    signal, noise = _energies(reference, test)
    return sqnr_from_sums(signal, noise)


def _energies(reference: ArrayLike, test: ArrayLike) -> Tuple[float, float]:
    """``(sum x^2, sum (y - x)^2)`` in float64, on the tensors' device when
    both are tensors."""
    if isinstance(reference, Tensor) and isinstance(test, Tensor):
        x, y = reference.detach(), test.detach().to(reference.device)
        _check_shapes(tuple(x.shape), tuple(y.shape))
        x, y = x.double(), y.double()
        return float(torch.sum(x * x)), float(torch.sum((y - x)**2))
    x, y = _numpy64(reference), _numpy64(test)
    _check_shapes(x.shape, y.shape)
    return float(np.sum(x * x)), float(np.sum((y - x)**2))


def _numpy64(values: ArrayLike) -> np.ndarray:
    if isinstance(values, Tensor):
        return values.detach().cpu().double().numpy()
    return np.asarray(values, dtype=np.float64)


def _check_shapes(reference: tuple, test: tuple) -> None:
    if reference != test:
        raise ValueError(f'SQNR needs tensors of one shape, got reference '
                         f'{reference} and test {test}')
