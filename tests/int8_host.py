"""Weight bits for tests that run onnxruntime's or OpenVINO's int8 kernels.

On x86 CPUs without VNNI those kernels add u8 x s8 products in saturating
int16, so 8-bit weights drift from the simulation there whatever the export
does; 7-bit weights saturate on no CPU (docs/deploy.md). Tests of the
runtimes' parity use 7 bits on such machines and MMRazor's 8 elsewhere.
"""
from mmrazor_quant.deploy import int8_pairs_saturate


def int8_weight_bits() -> int:
    """7 where this CPU's int8 kernels saturate, else 8."""
    return 7 if int8_pairs_saturate() else 8
