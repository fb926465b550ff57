"""Independent NumPy reference of the fake-quant formula.

Mirrors the ATen convention ``v = x * (1 / s)`` in float32, then rounds in
float64 (where ``|v| + 0.5`` is exact for float32 ``v``).
"""
from typing import Optional

import numpy as np
import torch


def shape_for(x: torch.Tensor, axis: Optional[int]):
    if axis is None:
        return ()
    shape = [1] * x.dim()
    shape[axis] = x.shape[axis]
    return shape


def quantize_ref(x, scale, zero_point, qmin, qmax, axis=None,
                 rounding='half_even'):
    """``(q, r, v)``: grid integer before clamping, rounded value, ``x/s``."""
    shape = shape_for(x, axis)
    s = scale.detach().numpy().astype(np.float32).reshape(shape)
    z = zero_point.detach().numpy().astype(np.float64).reshape(shape)
    v = (x.detach().numpy().astype(np.float32) *
         (np.float32(1) / s)).astype(np.float64)
    if rounding == 'half_even':
        r = np.round(v)
    else:
        r = np.sign(v) * np.floor(np.abs(v) + 0.5)
    return r + z, r, v


def fake_quant_ref(x, scale, zero_point, qmin, qmax, axis=None,
                   rounding='half_even'):
    """``(clamp(round(x * (1/s)) + z, qmin, qmax) - z) * s`` in float32."""
    shape = shape_for(x, axis)
    q, _, _ = quantize_ref(x, scale, zero_point, qmin, qmax, axis, rounding)
    z = zero_point.numpy().astype(np.float64).reshape(shape)
    s = scale.detach().numpy().astype(np.float32).reshape(shape)
    y = (np.clip(q, qmin, qmax) - z).astype(np.float32) * s
    return torch.from_numpy(y.astype(np.float32))
