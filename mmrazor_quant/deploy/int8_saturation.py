"""Whether this CPU's int8 kernels saturate u8 x s8 products.

x86 CPUs without VNNI multiply u8 activations by s8 weights with
``vpmaddubsw``, which adds two products into a saturating int16:
``255 * 127 * 2 > 32767``. onnxruntime's and OpenVINO's int8 kernels then
differ from the simulation wherever a pair of products exceeds it (the
parity report then says so). VNNI (``vpdpbusd``)
accumulates in int32 and is exact. Weights on 7 bits ([-63, 63]) stay below
the bound on any CPU: ``255 * 64 * 2 < 32767`` (onnxruntime's
``reduce_range``, NNCF's ``overflow_fix``).
"""
import functools

import numpy as np

__all__ = ['int8_pairs_saturate', 'SATURATION_NOTE']

#: Pairs of u8 x s8 products the probe adds (an even number).
_PROBE_DEPTH = 64

SATURATION_NOTE = (
    'this CPU has no VNNI: its int8 kernels add u8 x s8 products in '
    'saturating int16, so 8-bit weights lose parity here (not on a VNNI '
    'CPU); 7-bit weights do not (docs/deploy.md, CPUs without VNNI)')


@functools.lru_cache(maxsize=None)
def int8_pairs_saturate() -> bool:
    """Measured, not guessed from CPU flags: onnxruntime's ``MatMulInteger``
    of 255s (u8) by 127s (s8) on this machine, exact or saturated.

    Returns:
        bool: True if the sum came out as saturated int16 pairs.

    Raises:
        RuntimeError: If the result is neither (an unknown kernel).
    """
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper
    weights = np.full((_PROBE_DEPTH, 1), 127, np.int8)
    graph = helper.make_graph(
        [helper.make_node('MatMulInteger', ['a', 'b'], ['y'])], 'probe',
        [helper.make_tensor_value_info('a', TensorProto.UINT8,
                                       [1, _PROBE_DEPTH])],
        [helper.make_tensor_value_info('y', TensorProto.INT32, [1, 1])],
        [onnx.numpy_helper.from_array(weights, 'b')])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid('', 13)], ir_version=8)
    session = ort.InferenceSession(model.SerializeToString(),
                                   providers=['CPUExecutionProvider'])
    out = int(session.run(
        None, {'a': np.full((1, _PROBE_DEPTH), 255, np.uint8)})[0][0, 0])
    exact = 255 * 127 * _PROBE_DEPTH
    saturated = 32767 * _PROBE_DEPTH // 2
    if out not in (exact, saturated):
        raise RuntimeError(f'int8 probe: onnxruntime gave {out}, neither '
                           f'exact ({exact}) nor saturated ({saturated})')
    return out == saturated
