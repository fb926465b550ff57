"""RoIAlign as the ONNX standard op in an export.

mmcv's ``RoIAlign`` (the RoI extractors of mmdet's two-stage detectors)
exports through its own symbolic, written for opsets below 13 (``Squeeze``
with an ``axes`` attribute), which ``onnx.checker`` refuses at the opsets
exported here; torchvision's ``roi_align`` has no kernel in a CPU wheel
without its C++ ops. During an export, :func:`onnx_roi_align` makes each
mmcv ``RoIAlign`` in ``avg`` mode compute with mmcv's own kernel (the
numbers the simulation has) and write ONNX ``RoiAlign`` (opset 16:
``coordinate_transformation_mode``, ``half_pixel`` for mmcv's
``aligned=True``), which onnxruntime and OpenVINO run.
"""
import contextlib
from typing import Iterator

import torch
from torch import nn

__all__ = ['onnx_roi_align', 'ROI_ALIGN_MIN_OPSET']

#: ONNX ``RoiAlign`` with ``coordinate_transformation_mode``.
ROI_ALIGN_MIN_OPSET = 16


class _RoIAlignOnnx(torch.autograd.Function):
    """mmcv's ``roi_align`` (``avg``) with the symbolic of ONNX
    ``RoiAlign``-16."""

    @staticmethod
    def forward(ctx, feats, rois, output_size, spatial_scale,
                sampling_ratio, aligned):
        from mmcv.ops import roi_align
        return roi_align(feats, rois, output_size, spatial_scale,
                         sampling_ratio, 'avg', aligned)

    @staticmethod
    def symbolic(g, feats, rois, output_size, spatial_scale, sampling_ratio,
                 aligned):
        # rois: (R, 5) of (image index, x1, y1, x2, y2)
        index = g.op('Gather', rois,
                     g.op('Constant', value_t=torch.tensor(0)), axis_i=1)
        index = g.op('Cast', index, to_i=7)  # INT64
        boxes = g.op('Gather', rois,
                     g.op('Constant', value_t=torch.tensor([1, 2, 3, 4])),
                     axis_i=1)
        return g.op(
            'RoiAlign', feats, boxes, index,
            coordinate_transformation_mode_s=('half_pixel' if aligned else
                                              'output_half_pixel'),
            mode_s='avg', output_height_i=output_size[0],
            output_width_i=output_size[1], spatial_scale_f=spatial_scale,
            sampling_ratio_i=max(0, sampling_ratio))


def _forward(module: nn.Module, feats: torch.Tensor,
             rois: torch.Tensor) -> torch.Tensor:
    return _RoIAlignOnnx.apply(feats, rois, module.output_size,
                               module.spatial_scale, module.sampling_ratio,
                               module.aligned)


@contextlib.contextmanager
def onnx_roi_align(model: nn.Module) -> Iterator[None]:
    """Every mmcv ``RoIAlign`` of ``model`` in ``avg`` mode exports as ONNX
    ``RoiAlign`` meanwhile (at opset >= :data:`ROI_ALIGN_MIN_OPSET`)."""
    try:
        from mmcv.ops import RoIAlign
    except ImportError:  # no mmcv ops: nothing to swap
        yield
        return
    modules = [m for m in model.modules()
               if isinstance(m, RoIAlign) and m.pool_mode == 'avg']
    try:
        for module in modules:
            module.forward = _forward.__get__(module)
        yield
    finally:
        for module in modules:
            del module.forward
