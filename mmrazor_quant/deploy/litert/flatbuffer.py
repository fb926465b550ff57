"""Write a ``.tflite`` flatbuffer (one subgraph) with the ``tflite`` schema
package: tensors with their quantization, constant buffers, builtin ops."""
import importlib
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from .runtime import MISSING_RUNTIME

__all__ = ['TFLiteGraph', 'QParams', 'schema_module']

#: numpy dtype -> TFLite ``TensorType`` name.
_TENSOR_TYPES = {
    np.dtype(np.float32): 'FLOAT32',
    np.dtype(np.int8): 'INT8',
    np.dtype(np.int32): 'INT32',
    np.dtype(np.int64): 'INT64',
}
#: Builtin codes above this one are stored in ``builtin_code`` only.
_PLACEHOLDER_FOR_GREATER_OP_CODES = 127
#: Alignment of constant data in the file (enough for any element type).
_ALIGN = 16


def schema_module(name: str):
    """A module of the ``tflite`` schema package (``tflite/__init__``
    re-exports the classes under the same names, hiding the modules).

    Raises:
        ImportError: If ``tflite`` is not installed (says how to install
            it).
    """
    try:
        return importlib.import_module(f'tflite.{name}')
    except ImportError as e:
        raise ImportError(MISSING_RUNTIME) from e


@dataclass(frozen=True)
class QParams:
    """Quantization of one tensor: per tensor (one scale) or per channel
    along ``axis``."""
    scale: Tuple[float, ...]
    zero_point: Tuple[int, ...]
    axis: int = 0

    @classmethod
    def of(cls, scale, zero_point, axis: int = 0) -> 'QParams':
        scale = np.atleast_1d(np.asarray(scale, dtype=np.float32))
        zero_point = np.broadcast_to(
            np.atleast_1d(np.asarray(zero_point, dtype=np.int64)),
            scale.shape)
        return cls(tuple(float(s) for s in scale),
                   tuple(int(z) for z in zero_point), int(axis))

    @property
    def per_tensor(self) -> bool:
        return len(self.scale) == 1


@dataclass
class _Tensor:
    name: str
    shape: Tuple[int, ...]
    dtype: np.dtype
    buffer: int
    qparams: Optional[QParams]


@dataclass
class _Op:
    code: str
    version: int
    inputs: List[int]
    outputs: List[int]
    options: Optional[str]
    option_values: Dict[str, object] = field(default_factory=dict)


class TFLiteGraph:
    """A single-subgraph TFLite model under construction.

    Tensors and ops are added in execution order; :meth:`serialize` writes
    the flatbuffer (identifier ``TFL3``, schema version 3).
    """

    def __init__(self) -> None:
        self.tensors: List[_Tensor] = []
        self.buffers: List[bytes] = [b'']  # buffer 0: the empty sentinel
        self.ops: List[_Op] = []
        self.inputs: List[int] = []
        self.outputs: List[int] = []
        self._names: Dict[str, int] = {}

    def _unique(self, name: str) -> str:
        count = self._names.get(name, 0)
        self._names[name] = count + 1
        return name if count == 0 else f'{name}_{count}'

    def add_tensor(self, name: str, shape: Sequence[int], dtype,
                   qparams: Optional[QParams] = None,
                   data: Optional[np.ndarray] = None) -> int:
        """Add a tensor (a constant if ``data`` is given); returns its
        index."""
        dtype = np.dtype(dtype)
        buffer = 0
        if data is not None:
            # (not ascontiguousarray: it turns a scalar into shape (1,))
            data = np.array(data, dtype=dtype, order='C')
            shape = data.shape
            self.buffers.append(data.tobytes())
            buffer = len(self.buffers) - 1
        self.tensors.append(
            _Tensor(self._unique(name), tuple(int(d) for d in shape), dtype,
                    buffer, qparams))
        return len(self.tensors) - 1

    def add_op(self, code: str, inputs: Sequence[int], outputs: Sequence[int],
               version: int = 1, options: Optional[str] = None,
               **option_values) -> None:
        """Add a builtin op (``code`` a ``BuiltinOperator`` name such as
        ``'CONV_2D'``) with its ``options`` table (e.g.
        ``'Conv2DOptions'``) and that table's fields (``StrideW=2``)."""
        self.ops.append(_Op(code, version, list(inputs), list(outputs),
                            options, option_values))

    # -- serialization -------------------------------------------------
    def serialize(self, description: str = 'mmrazor_quant') -> bytes:
        """The ``.tflite`` file's bytes."""
        import flatbuffers
        b = flatbuffers.Builder(1024)
        buffers = [self._buffer(b, data) for data in self.buffers]
        tensors = [self._tensor(b, t) for t in self.tensors]
        codes: Dict[Tuple[str, int], int] = {}
        for op in self.ops:
            codes.setdefault((op.code, op.version), len(codes))
        code_offsets = [self._op_code(b, c, v) for c, v in codes]
        ops = [self._operator(b, op, codes[(op.code, op.version)])
               for op in self.ops]
        sg = schema_module('SubGraph')
        tv = _offsets(b, tensors, sg.StartTensorsVector)
        iv = _ints(b, self.inputs, sg.StartInputsVector)
        ov = _ints(b, self.outputs, sg.StartOutputsVector)
        opv = _offsets(b, ops, sg.StartOperatorsVector)
        name = b.CreateString('main')
        sg.Start(b)
        sg.AddTensors(b, tv)
        sg.AddInputs(b, iv)
        sg.AddOutputs(b, ov)
        sg.AddOperators(b, opv)
        sg.AddName(b, name)
        subgraph = sg.End(b)
        model = schema_module('Model')
        cv = _offsets(b, code_offsets, model.StartOperatorCodesVector)
        sv = _offsets(b, [subgraph], model.StartSubgraphsVector)
        bv = _offsets(b, buffers, model.StartBuffersVector)
        desc = b.CreateString(description)
        model.Start(b)
        model.AddVersion(b, 3)
        model.AddOperatorCodes(b, cv)
        model.AddSubgraphs(b, sv)
        model.AddDescription(b, desc)
        model.AddBuffers(b, bv)
        b.Finish(model.End(b), file_identifier=b'TFL3')
        return bytes(b.Output())

    @staticmethod
    def _buffer(b, data: bytes) -> int:
        buf = schema_module('Buffer')
        vector = None
        if data:
            b.StartVector(1, len(data), _ALIGN)
            b.head = b.head - len(data)
            b.Bytes[b.head:b.head + len(data)] = data
            vector = b.EndVector()
        buf.Start(b)
        if vector is not None:
            buf.AddData(b, vector)
        return buf.End(b)

    @staticmethod
    def _tensor(b, t: _Tensor) -> int:
        tensor = schema_module('Tensor')
        qp = schema_module('QuantizationParameters')
        name = b.CreateString(t.name)
        shape = _ints(b, t.shape, tensor.StartShapeVector)
        quant = None
        if t.qparams is not None:
            sv = _floats(b, t.qparams.scale, qp.StartScaleVector)
            zv = _ints(b, t.qparams.zero_point, qp.StartZeroPointVector,
                       64)
            qp.Start(b)
            qp.AddScale(b, sv)
            qp.AddZeroPoint(b, zv)
            qp.AddQuantizedDimension(b, t.qparams.axis)
            quant = qp.End(b)
        tensor.Start(b)
        tensor.AddShape(b, shape)
        tensor.AddType(b, getattr(schema_module('TensorType').TensorType,
                                  _TENSOR_TYPES[t.dtype]))
        tensor.AddBuffer(b, t.buffer)
        tensor.AddName(b, name)
        if quant is not None:
            tensor.AddQuantization(b, quant)
        return tensor.End(b)

    @staticmethod
    def _op_code(b, code: str, version: int) -> int:
        oc = schema_module('OperatorCode')
        value = getattr(schema_module('BuiltinOperator').BuiltinOperator, code)
        oc.Start(b)
        oc.AddDeprecatedBuiltinCode(
            b, min(value, _PLACEHOLDER_FOR_GREATER_OP_CODES))
        oc.AddBuiltinCode(b, value)
        oc.AddVersion(b, version)
        return oc.End(b)

    @staticmethod
    def _operator(b, op: _Op, code_index: int) -> int:
        options = None
        if op.options is not None:
            table = schema_module(op.options)
            table.Start(b)
            for key, value in op.option_values.items():
                getattr(table, f'Add{key}')(b, value)
            options = table.End(b)
        operator = schema_module('Operator')
        iv = _ints(b, op.inputs, operator.StartInputsVector)
        ov = _ints(b, op.outputs, operator.StartOutputsVector)
        operator.Start(b)
        operator.AddOpcodeIndex(b, code_index)
        operator.AddInputs(b, iv)
        operator.AddOutputs(b, ov)
        if options is not None:
            operator.AddBuiltinOptionsType(
                b, getattr(schema_module('BuiltinOptions').BuiltinOptions,
                           op.options))
            operator.AddBuiltinOptions(b, options)
        return operator.End(b)


def _ints(b, values, start, bits: int = 32) -> int:
    start(b, len(values))
    prepend = b.PrependInt64 if bits == 64 else b.PrependInt32
    for v in reversed(list(values)):
        prepend(int(v))
    return b.EndVector()


def _floats(b, values, start) -> int:
    start(b, len(values))
    for v in reversed(list(values)):
        b.PrependFloat32(float(v))
    return b.EndVector()


def _offsets(b, offsets, start) -> int:
    start(b, len(offsets))
    for o in reversed(offsets):
        b.PrependUOffsetTRelative(o)
    return b.EndVector()
