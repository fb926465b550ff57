"""A frozen fake quant that exports as ONNX ``QuantizeLinear`` /
``DequantizeLinear``.

Outside of an ONNX export it is exactly :class:`FixedFakeQuantize`, or,
within :func:`quantize_by_division`, the ONNX spec's arithmetic:
``q = clamp(round(x / s) + z)``, a division rounded half to even, as
onnxruntime's and TensorRT's ``QuantizeLinear`` compute it. The two differ
only at exact ties, which the training kernels' ``x * (1 / s)`` can round
the other way. Ties are frequent where an op averages values of one grid:
the mean of two (an adaptive average pool whose bins overlap, as in
Fast-SCNN's pyramid pooling) lands on ``k + 1/2`` for half of the pairs.

Under ``torch.onnx.is_in_onnx_export()`` its forward emits the standard ONNX
ops through :func:`torch.onnx.ops.symbolic` (the dynamo exporter turns them
into nodes of the default domain), so nothing is patched globally.

The integer grid ``[quant_min, quant_max]`` is stored in the smallest ONNX
integer type that holds it (:func:`onnx_qtype`). ``QuantizeLinear`` saturates
to that type's full range, so a narrower grid (``[-127, 127]`` in int8, a
7-bit ``[0, 127]`` in uint8) is first clipped in float to
``[(quant_min - z) s, (quant_max - z) s]``: ``round(clip(x) / s) + z`` then
lands on ``quant_min``/``quant_max`` exactly where the simulation's clamp
does.
"""
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Optional, Tuple

import torch
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants import (
    BaseFakeQuantize,
    FixedFakeQuantize,
)
from mmrazor_quant.models.fake_quants.kernels import check_float_input
from mmrazor_quant.structures.opsets import LOW_BIT_OPSET, QDQ_MIN_OPSET
from mmrazor_quant.structures.quantization import RoundingPolicy
from mmrazor_quant.utils.attribute_scope import attribute_set

__all__ = [
    'QDQFakeQuantize', 'OnnxQType', 'onnx_qtype', 'quantize_by_division'
]


@dataclass(frozen=True)
class OnnxQType:
    """An ONNX integer tensor type used as a quantization container.

    Attributes:
        name (str): ONNX name, e.g. ``'INT8'``.
        elem_type (int): ``onnx.TensorProto`` element type.
        qmin (int): Smallest value of the type.
        qmax (int): Largest value of the type.
        min_opset (int): First opset whose ``QuantizeLinear`` accepts it.
        torch_dtype (torch.dtype): dtype holding the zero-point while
            exporting (4-bit zero-points are retyped afterwards).
    """
    name: str
    elem_type: int
    qmin: int
    qmax: int
    min_opset: int
    torch_dtype: torch.dtype

    @property
    def bits(self) -> int:
        return (self.qmax - self.qmin + 1).bit_length() - 1


# Smallest first: the grid goes into the first type that holds it.
_QTYPES = (
    OnnxQType('UINT4', 21, 0, 15, LOW_BIT_OPSET, torch.uint8),
    OnnxQType('INT4', 22, -8, 7, LOW_BIT_OPSET, torch.int8),
    OnnxQType('UINT8', 2, 0, 255, QDQ_MIN_OPSET, torch.uint8),
    OnnxQType('INT8', 3, -128, 127, QDQ_MIN_OPSET, torch.int8),
    OnnxQType('UINT16', 4, 0, 65535, LOW_BIT_OPSET, torch.int32),
    OnnxQType('INT16', 5, -32768, 32767, LOW_BIT_OPSET, torch.int16),
)


#: First opset whose ``QuantizeLinear`` has the ``output_dtype`` attribute.
_OUTPUT_DTYPE_OPSET = LOW_BIT_OPSET


def onnx_qtype(quant_min: int, quant_max: int, opset: int,
               name: str = 'fake quant') -> OnnxQType:
    """The smallest ONNX integer type holding ``[quant_min, quant_max]`` that
    ``QuantizeLinear`` of ``opset`` accepts; grids of at most 4 bits need
    INT4/UINT4 (opset >= 21) and are never widened.

    Args:
        quant_min (int): Smallest integer of the grid.
        quant_max (int): Largest integer of the grid.
        opset (int): Target ONNX opset.
        name (str): Name used in the error message.

    Returns:
        OnnxQType: The container type.

    Raises:
        ValueError: If no type of ``opset`` holds the range (e.g. 4-bit
            below opset 21, 16-bit below opset 21).
    """
    smallest = next((q for q in _QTYPES
                     if q.qmin <= quant_min and quant_max <= q.qmax), None)
    # A 4-bit grid must ship as 4-bit: widening it to int8 would silently
    # double the weight size and hide that the opset cannot express it.
    if smallest is not None and (smallest.bits > 4
                                 or opset >= smallest.min_opset):
        for qtype in _QTYPES[_QTYPES.index(smallest):]:
            fits = qtype.qmin <= quant_min and quant_max <= qtype.qmax
            if fits and opset >= qtype.min_opset:
                return qtype
    hint = (f'; {smallest.name} needs opset >= {smallest.min_opset}'
            if smallest else '')
    raise ValueError(
        f'{name}: the integer range [{quant_min}, {quant_max}] has no '
        f'QuantizeLinear type at opset {opset}{hint}')


class QDQFakeQuantize(FixedFakeQuantize):
    """:class:`FixedFakeQuantize` that exports as standard ONNX Q/DQ.

    Call :meth:`prepare_export` with the target opset before exporting; it
    validates the scheme for ONNX and picks the container type.

    Attributes:
        qtype (OnnxQType, optional): Container type chosen by
            :meth:`prepare_export`.
    """

    qtype: Optional[OnnxQType] = None
    #: Opset of the emitted Q/DQ nodes (set by :meth:`prepare_export`).
    node_opset: int = _OUTPUT_DTYPE_OPSET
    #: Quantize as ONNX's ``QuantizeLinear``, ``round(x / s)``, instead of
    #: the training kernels' ``round(x * (1 / s))`` (see
    #: :func:`quantize_by_division`).
    divides: bool = False
    #: ``'symbolic'``: emit Q/DQ with :func:`torch.onnx.ops.symbolic` (the
    #: dynamo exporter, opset >= 18); ``'aten'``: call torch's fake-quant
    #: ops on the container range, which the TorchScript exporter maps to
    #: Q/DQ (opset 13..17).
    export_mode: str = 'symbolic'
    #: Clip to the grid before ``QuantizeLinear`` when it is narrower than
    #: its container type (exact parity). TensorRT fuses only bare Q/DQ
    #: pairs, so its exporter turns this off.
    clip_narrow_range: bool = True
    #: The input is already on the grid (a deploy weight, see
    #: :class:`WeightQuantizedLayer`): no clip is needed for exactness, and
    #: none is exported (a clip on a weight keeps onnxruntime from folding
    #: and fusing it).
    input_on_grid: bool = False

    @classmethod
    def from_fake_quant(cls, fake_quant: BaseFakeQuantize
                        ) -> 'QDQFakeQuantize':
        """Freeze a calibrated fake quant (see
        :meth:`FixedFakeQuantize.from_fake_quant`); always in eval mode."""
        return super().from_fake_quant(fake_quant).eval()

    def prepare_export(self, opset: int,
                       export_mode: str = 'symbolic',
                       clip_narrow_range: bool = True) -> OnnxQType:
        """Choose the ONNX container type for ``opset``.

        Args:
            opset (int): The target ONNX opset.
            export_mode (str): ``'symbolic'`` or ``'aten'`` (see
                :attr:`export_mode`). Defaults to ``'symbolic'``.
            clip_narrow_range (bool): See :attr:`clip_narrow_range`.
                Defaults to True.

        Returns:
            OnnxQType: The chosen type.

        Raises:
            ValueError: If the rounding is not ONNX's (half to even), the
                range has no type at ``opset``, or per-channel qparams are
                used below opset 13.
        """
        if self.qscheme.rounding is not RoundingPolicy.HALF_EVEN:
            raise ValueError(
                f'{self.name}: ONNX QuantizeLinear rounds half to even, but '
                f'this fake quant rounds {self.qscheme.rounding.value}')
        if self.is_per_channel and opset < 13:
            raise ValueError(f'{self.name}: per-channel QuantizeLinear '
                             f'needs opset >= 13, got {opset}')
        self.export_mode = export_mode
        self.clip_narrow_range = clip_narrow_range
        # Q/DQ nodes of the opset itself: the exporter cannot convert
        # opset-21 nodes down to 19/20, and 18's have no output_dtype.
        self.node_opset = min(opset, _OUTPUT_DTYPE_OPSET)
        self.qtype = onnx_qtype(self.quant_min, self.quant_max, opset,
                                self.name)
        # Cast once here so the exported graph holds a typed initializer
        # rather than a Cast node.
        self.register_buffer(
            'onnx_zero_point',
            self.zero_point.to(self.qtype.torch_dtype),
            persistent=False)
        return self.qtype

    @property
    def needs_clip(self) -> bool:
        """Whether the grid is narrower than its container type."""
        qtype = self._require_qtype()
        return (self.quant_min, self.quant_max) != (qtype.qmin, qtype.qmax)

    def clip_bounds(self) -> Tuple[Tensor, Tensor]:
        """Float ``((quant_min - z) s, (quant_max - z) s)``, shaped to
        broadcast against the input."""
        scale, zero_point = self.scale, self.zero_point.float()
        low = (self.quant_min - zero_point) * scale
        high = (self.quant_max - zero_point) * scale
        return low, high

    def _require_qtype(self) -> OnnxQType:
        if self.qtype is None:
            raise RuntimeError(f'{self.name}: call prepare_export(opset) '
                               'before exporting')
        return self.qtype

    def _clip(self, x: Tensor) -> Tensor:
        if self.input_on_grid or not (self.clip_narrow_range
                                      and self.needs_clip):
            return x
        low, high = self.clip_bounds()
        if self.is_per_channel:
            shape = [1] * x.dim()
            shape[self.ch_axis] = -1
            low, high = low.reshape(shape), high.reshape(shape)
        # Only the side narrower than the type needs a node: [-127, 127]
        # gets a Max alone, a 7-bit [0, 127] a Min alone.
        qtype = self._require_qtype()
        if self.quant_max < qtype.qmax:
            x = torch.minimum(x, high)
        if self.quant_min > qtype.qmin:
            x = torch.maximum(x, low)
        return x

    def _aten_qdq(self, x: Tensor) -> Tensor:
        qtype = self.qtype
        if self.is_per_channel:
            return torch.fake_quantize_per_channel_affine(
                x, self.scale, self.zero_point, self.ch_axis, qtype.qmin,
                qtype.qmax)
        return torch.fake_quantize_per_tensor_affine(
            x, self.scale, self.zero_point, qtype.qmin, qtype.qmax)

    def _onnx_qdq(self, x: Tensor) -> Tensor:
        qtype = self._require_qtype()
        x = self._clip(x)
        if self.export_mode == 'aten':
            return self._aten_qdq(x)
        attrs = {'axis': self.ch_axis} if self.is_per_channel else {}
        zero_point = self.onnx_zero_point
        q_attrs = dict(attrs)
        if self.node_opset >= _OUTPUT_DTYPE_OPSET:
            # output_dtype tells the exporter's post-pass which 4/16-bit
            # type the wider torch zero-point stands for (below opset 21
            # every type is 8-bit, the zero-point's own).
            q_attrs.update(output_dtype=qtype.elem_type)
        q = torch.onnx.ops.symbolic(
            'QuantizeLinear', (x, self.scale, zero_point), q_attrs,
            dtype=qtype.elem_type, shape=x.shape, version=self.node_opset)
        return torch.onnx.ops.symbolic(
            'DequantizeLinear', (q, self.scale, zero_point), attrs,
            dtype=x.dtype, shape=x.shape, version=self.node_opset)

    def _spec_qdq(self, x: Tensor) -> Tensor:
        """ONNX ``QuantizeLinear`` then ``DequantizeLinear`` in float32 (or
        float64 for a float64 ``x``)."""
        check_float_input(x, self.name)
        scale, zero_point = self.scale, self.zero_point
        if self.is_per_channel:
            shape = [1] * x.dim()
            shape[self.ch_axis] = -1
            scale, zero_point = scale.reshape(shape), zero_point.reshape(shape)
        v = x if x.dtype == torch.float64 else x.float()
        q = torch.clamp(
            torch.round(v / scale) + zero_point, self.quant_min,
            self.quant_max)
        return ((q - zero_point) * scale).to(x.dtype)

    def forward(self, x: Tensor) -> Tensor:
        """The simulation (the ONNX pair's arithmetic when :attr:`divides`;
        a fake quant rounding ties away from zero, which ONNX cannot export,
        keeps its own), or ONNX Q/DQ while exporting."""
        if torch.onnx.is_in_onnx_export():
            return self._onnx_qdq(x)
        if not self.divides or \
                self.qscheme.rounding is not RoundingPolicy.HALF_EVEN:
            return super().forward(x)
        return self._spec_qdq(x)


@contextmanager
def quantize_by_division(model: nn.Module,
                         enabled: bool = True) -> Iterator[nn.Module]:
    """Within the block, every :class:`QDQFakeQuantize` of ``model``
    quantizes as ONNX's ``QuantizeLinear`` computes, ``round(x / s)``: the
    simulation a runtime that follows the spec (onnxruntime, TensorRT) is
    compared against.

    Args:
        model (nn.Module): A deploy model.
        enabled (bool): False leaves the model as it is. Defaults to True.

    Yields:
        nn.Module: ``model``.
    """
    fake_quants = [m for m in model.modules()
                   if isinstance(m, QDQFakeQuantize)] if enabled else []
    with attribute_set(fake_quants, 'divides', True):
        yield model
