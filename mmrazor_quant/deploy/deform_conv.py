"""mmcv's deformable convolution in an export, as standard ONNX ops.

mmcv's ``deform_conv2d`` (``DeformConv2d``, TOOD's and VFNet's heads)
exports as ``mmcv::MMCVDeformConv2d``, which no runtime here runs; the
standard ``DeformConv`` (opset 19) runs in onnxruntime but OpenVINO 2026.4
has no conversion for it (only its own ``org.openvinotoolkit``
``DeformableConv2D``, which onnxruntime does not know). During an export,
:func:`onnx_deform_conv` computes it as what it is: each kernel tap a
bilinear sample of the input at the tap's position plus its offset
(``GridSample``, zeros outside the image, as mmcv's sampling), then one
grouped matrix product over the taps (a 1 x 1 convolution). The layer
stays float, as the simulation runs it.
"""
import contextlib
import sys
from typing import Iterator, Tuple, Union

import torch
import torch.nn.functional as F
from torch import Tensor

__all__ = ['deform_conv2d_by_sampling', 'onnx_deform_conv']

IntPair = Union[int, Tuple[int, int]]


def _pair(value: IntPair) -> Tuple[int, int]:
    return (value, value) if isinstance(value, int) else tuple(value)


def deform_conv2d_by_sampling(input: Tensor,
                              offset: Tensor,
                              weight: Tensor,
                              stride: IntPair = 1,
                              padding: IntPair = 0,
                              dilation: IntPair = 1,
                              groups: int = 1,
                              deform_groups: int = 1,
                              bias: bool = False,
                              im2col_step: int = 32) -> Tensor:
    """mmcv's ``deform_conv2d`` (same arguments) with ``grid_sample`` and a
    convolution.

    ``offset`` is ``(N, deform_groups * 2 * kh * kw, Ho, Wo)``: per deform
    group, per tap ``(i, j)`` (row-major), the ``(dy, dx)`` added to the
    tap's position ``(ho * sh - ph + i * dh, wo * sw - pw + j * dw)``.
    """
    if bias:
        raise ValueError('deform_conv2d: bias=True is not supported by '
                         'mmcv either')
    n, c, h, w = input.shape
    out_c, _, kh, kw = weight.shape
    sh, sw = _pair(stride)
    ph, pw = _pair(padding)
    dh, dw = _pair(dilation)
    ho, wo = offset.shape[-2:]
    dg = deform_groups
    offset = offset.reshape(n * dg, kh * kw, 2, ho, wo)
    grouped = input.reshape(n * dg, c // dg, h, w)
    base_y = (torch.arange(ho, dtype=input.dtype, device=input.device) * sh
              - ph).view(1, ho, 1)
    base_x = (torch.arange(wo, dtype=input.dtype, device=input.device) * sw
              - pw).view(1, 1, wo)
    taps = []
    for i in range(kh):
        for j in range(kw):
            tap = offset[:, i * kw + j]
            y = base_y + i * dh + tap[:, 0]
            x = base_x + j * dw + tap[:, 1]
            # pixel -> [-1, 1] with align_corners=False: (2p + 1) / size - 1
            grid = torch.stack([(2 * x + 1) / w - 1, (2 * y + 1) / h - 1],
                               dim=-1)
            taps.append(
                F.grid_sample(grouped, grid, mode='bilinear',
                              padding_mode='zeros', align_corners=False))
    # (N, groups, C / groups * K, Ho * Wo): channel-major, then the taps,
    # as the weight is laid; a MatMul, not a Conv: the weight may be
    # computed (TOOD's ones), and ONNX Conv needs a known kernel shape
    cols = torch.stack(taps, dim=2).reshape(n, groups, -1, ho * wo)
    out = weight.reshape(groups, out_c // groups, -1).matmul(cols)
    return out.reshape(n, out_c, ho, wo)


@contextlib.contextmanager
def onnx_deform_conv() -> Iterator[None]:
    """Every module-level reference to mmcv's ``deform_conv2d`` (mmcv's
    ``DeformConv2d``, mmdet's heads that import the function) is
    :func:`deform_conv2d_by_sampling` meanwhile."""
    try:
        from mmcv.ops import deform_conv
    except ImportError:  # no mmcv ops: nothing to swap
        yield
        return
    original = deform_conv.deform_conv2d
    namespaces = [getattr(m, '__dict__', None) for m in
                  list(sys.modules.values())]
    holders = [(ns, name) for ns in namespaces if isinstance(ns, dict)
               for name, value in list(ns.items()) if value is original]
    try:
        for namespace, name in holders:
            namespace[name] = deform_conv2d_by_sampling
        yield
    finally:
        for namespace, name in holders:
            namespace[name] = original
