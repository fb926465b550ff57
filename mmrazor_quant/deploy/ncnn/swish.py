"""ncnn's ``Swish`` layer (SiLU) as its x86 kernel computes it, bit for bit.

ncnn computes ``x / (1 + exp(0 - x))`` in float32 over each channel's row
(``w * h * d`` elements of an unpacked blob), in chunks: 16 elements with
the AVX-512 exponential, then 8 with the AVX one, then 4 with the SSE one,
then the remaining (at most 3) elements with libm's scalar ``expf``. Which
chunks exist depends on the instruction set ncnn picks when the process
starts (its ``avx512``, ``fma``, ``avx`` or base build of the layer):

========  ========================  ====================================
path      CPU (ncnn's runtime test)  chunks
========  ========================  ====================================
avx512    avx512 f, cd, bw, dq, vl   16 / 8 / 4 (all with FMA) / scalar
fma       fma (and avx)              8 / 4 (with FMA) / scalar
avx       avx                        8 / 4 (no FMA) / scalar
sse2      anything else on x86-64    4 (no FMA) / scalar
========  ========================  ====================================

The exponential of the chunks is the cephes polynomial: clamp to
``[-88.376..., 88.376...]``; ``n = floor(x * log2(e) + 0.5)``;
``r = x - n * C1 - n * C2`` (two steps); ``p = ((((p0 r + p1) r + p2) r +
p3) r + p4) r + p5``; ``y = p * r^2 + r + 1``; ``y * 2^n`` with ``2^n``
built from the exponent bits. With FMA every multiply-add is one fused
operation; ncnn's build contracts the SSE chunk's ``x * log2(e) + 0.5``
into one too (compilers fuse a product and a sum by default). Without
FMA each product and sum is rounded to float32.

ncnn is built with ``-ffast-math``, under which the compiler divides
float32 vectors by a reciprocal estimate refined by one Newton step:
``a * ((x0 + x0) - x0 * (x0 * b))``, each operation rounded to float32;
``x0`` is ``rcp14`` for the 16-lane chunk and ``rcpps`` for the 8- and
4-lane ones. Both estimates are functions of the mantissa's top bits,
measured here on an Intel Xeon over all 2^23 mantissas: ``rcpps`` is the
reciprocal of the middle of the input's 2^-11-wide bucket rounded to 13
significant bits; ``rcp14`` is linear in 64 segments (the table below).
Other vendors' ``rcpps`` differ. The scalar tail divides exactly.

A fused multiply-add is emulated by computing ``a * b + c`` in float64
from float32 operands (the product is exact there) and rounding once to
float32: that equals the hardware's single rounding except when the
float64 sum lands exactly on a float32 rounding tie it was not on before
(double rounding), which the polynomial's operands make vanishingly rare
(``tests/test_deploy/test_ncnn_swish.py`` compares hundreds of thousands
of values with ncnn's own layer).
"""
import ctypes
import ctypes.util
import functools
import platform
from typing import Optional, Tuple

import numpy as np
import torch
from torch import Tensor, nn

__all__ = ['ncnn_x86_path', 'cpu_vendor', 'ncnn_exp', 'ncnn_swish',
           'NCNNSwish', 'X86_PATHS']

#: ncnn's x86 builds of a layer, widest first: (name, chunk sizes, FMA).
X86_PATHS = {
    'avx512': ((16, 8, 4), True),
    'fma': ((8, 4), True),
    'avx': ((8, 4), False),
    'sse2': ((4, ), False),
}

_F32 = np.float32
_EXP_HI = _F32(88.3762626647949)
_EXP_LO = _F32(-88.3762626647949)
_LOG2EF = _F32(1.44269504088896341)
_C1 = _F32(0.693359375)
_C2 = _F32(-2.12194440e-4)
_POLY = tuple(_F32(p) for p in (1.9875691500E-4, 1.3981999507E-3,
                                 8.3334519073E-3, 4.1665795894E-2,
                                 1.6666665459E-1, 5.0000001201E-1))

#: ``rcp14`` (AVX-512's 14-bit reciprocal estimate), measured on an Intel
#: Xeon: a function of the top 16 mantissa bits, linear in bits 7..16 within
#: each of 64 segments (top 6 bits): ``q = (A - S * t) >> 10`` is the
#: significand in units of 2^-17 of a value in (0.5, 1]; an exact power of
#: two gets its exact reciprocal.
_RCP14_A = (
    134214144, 132148224, 130147328, 128204800, 126318080,
    124489216, 122709504, 120982528, 119301120, 117667840,
    116076544, 114529280, 113022976, 111556096, 110125568,
    108730368, 107372032, 106045952, 104754176, 103491072,
    102259200, 101056000, 99881984, 98732544, 97610752,
    96514048, 95443456, 94393344, 93367808, 92363264,
    91380736, 90418688, 89478144, 88555008, 87652352,
    86765568, 85898240, 85047808, 84213760, 83396096,
    82595840, 81807872, 81035776, 80279040, 79536640,
    78805504, 78089216, 77385728, 76695040, 76016128,
    75348992, 74695680, 74050560, 73417216, 72796160,
    72183296, 71582720, 70991360, 70408704, 69838336,
    69276160, 68722176, 68176384, 67638784,
)
_RCP14_S = (
    2018, 1954, 1898, 1842, 1786, 1738, 1686, 1642, 1594, 1554, 1510, 1470,
    1434, 1398, 1362, 1326, 1294, 1262, 1234, 1202, 1174, 1146, 1122, 1094,
    1070, 1046, 1026, 1002, 982, 958, 938, 918, 902, 882, 866, 846,
    830, 814, 798, 782, 770, 754, 738, 726, 714, 698, 686, 674,
    662, 650, 638, 630, 618, 606, 598, 586, 578, 570, 558, 550,
    542, 534, 526, 518,
)


def _cpuinfo_field(name: str) -> Optional[str]:
    """The first ``name`` line of ``/proc/cpuinfo``; None without one."""
    try:
        with open('/proc/cpuinfo') as f:
            line = next(ln for ln in f if ln.startswith(name))
    except (OSError, StopIteration):
        return None
    return line.split(':', 1)[1].strip()


def cpu_vendor() -> str:
    """The CPU's vendor id (``GenuineIntel``, ``AuthenticAMD``; empty where
    unknown): the reciprocal estimates above are Intel's."""
    return _cpuinfo_field('vendor_id') or ''


@functools.lru_cache(maxsize=1)
def ncnn_x86_path() -> Optional[str]:
    """The build of its x86 layers ncnn runs on this CPU (a key of
    :data:`X86_PATHS`), decided from the kernel's CPU flags as ncnn's
    ``cpu_support_x86_*`` do (Linux lists a flag only where the OS enables
    its registers); None off x86-64 Linux."""
    if platform.machine().lower() not in ('x86_64', 'amd64'):
        return None
    line = _cpuinfo_field('flags')
    if line is None:
        return None
    flags = set(line.split())
    if {'avx512f', 'avx512cd', 'avx512bw', 'avx512dq',
            'avx512vl'} <= flags:
        return 'avx512'
    if {'avx', 'fma'} <= flags:
        return 'fma'
    if 'avx' in flags:
        return 'avx'
    return 'sse2'


def _fma(a: Tensor, b, c) -> Tensor:
    """``a * b + c`` rounded once to float32 (see the module docstring)."""
    return (a.double() * _as_double(b) + _as_double(c)).float()


def _fnma(a: Tensor, b, c) -> Tensor:
    """``c - a * b`` rounded once to float32."""
    return (_as_double(c) - a.double() * _as_double(b)).float()


def _as_double(v):
    return v.double() if isinstance(v, Tensor) else float(v)


def ncnn_exp(x: Tensor, fma: bool) -> Tensor:
    """ncnn's SIMD exponential of float32 ``x`` (``exp_ps``,
    ``exp256_ps``, ``exp512_ps``: the same steps; ``fma`` says whether its
    multiply-adds are fused)."""
    x = x.float().clamp(float(_EXP_LO), float(_EXP_HI))
    if fma:
        fx = _fma(x, _LOG2EF, _F32(0.5))
        fx = torch.floor(fx)
        r = _fnma(fx, _C1, x)
        r = _fnma(fx, _C2, r)
    else:
        fx = torch.floor(x * float(_LOG2EF) + 0.5)
        r = x - fx * float(_C1)
        r = r - fx * float(_C2)
    r2 = r * r
    y = torch.full_like(r, float(_POLY[0]))
    for p in _POLY[1:]:
        y = _fma(y, r, p) if fma else y * r + float(p)
    y = _fma(y, r2, r) if fma else y * r2 + r
    y = y + 1.0
    pow2n = ((fx.to(torch.int32) + 127) << 23).view(torch.float32)
    return y * pow2n


@functools.lru_cache(maxsize=1)
def _libm_expf():
    """libm's scalar ``expf`` (ncnn's exponential of a row's last
    elements)."""
    lib = ctypes.CDLL(ctypes.util.find_library('m') or 'libm.so.6')
    fn = lib.expf
    fn.argtypes = [ctypes.c_float]
    fn.restype = ctypes.c_float
    return fn


def _scalar_swish(x: Tensor) -> Tensor:
    expf = _libm_expf()
    values = x.float().reshape(-1).tolist()
    neg_exp = torch.tensor([expf(-v) for v in values], dtype=torch.float32)
    return (x.float().reshape(-1) / (1.0 + neg_exp)).reshape(x.shape)


def _reciprocal_estimate(b: Tensor, rcp14: bool) -> Tensor:
    """The reciprocal estimate of positive float32 ``b``: ``rcp14`` (the
    table above, exact for powers of two, denormal results kept) or
    ``rcpps``: the reciprocal of the midpoint of ``b``'s 2^-11-wide
    mantissa bucket rounded to 13 significant bits (measured on an Intel
    Xeon over every mantissa), results below the normal range flushed to
    zero. Zero gives infinity and infinity zero."""
    bits = b.view(torch.int32).long()
    exponent = (bits >> 23) & 0xff
    mantissa = bits & 0x7fffff
    if rcp14:
        seg = mantissa >> 17
        t = (mantissa >> 7) & 1023
        a = torch.tensor(_RCP14_A, dtype=torch.long)[seg]
        q = (a - torch.tensor(_RCP14_S, dtype=torch.long)[seg] * t) >> 10
        q = torch.where(mantissa == 0, torch.full_like(q, 1 << 17), q)
        significand = q.double() * 2.0**-17
    else:
        bucket = (mantissa >> 12).double()
        significand = torch.round(2.0**25 / (4097 + 2 * bucket)) * 2.0**-13
    value = torch.ldexp(significand, (127 - exponent).double())
    if not rcp14:
        value = torch.where(value < 2.0**-126, torch.zeros_like(value), value)
    value = torch.where(b == 0, torch.full_like(value, float('inf')), value)
    value = torch.where(torch.isinf(b), torch.zeros_like(value), value)
    return value.float()


def _fast_divide(a: Tensor, b: Tensor, rcp14: bool) -> Tensor:
    """``a / b`` as ncnn's build divides float32 vectors (fast-math): the
    reciprocal estimate refined by one Newton step,
    ``a * ((x0 + x0) - x0 * (x0 * b))``, every operation rounded to
    float32 (unfused)."""
    x0 = _reciprocal_estimate(b, rcp14)
    refined = (x0 + x0) - x0 * (x0 * b)
    return a * refined


def _chunk_swish(x: Tensor, fma: bool, width: int) -> Tensor:
    """Swish of the elements a ``width``-lane vector loop covers: the
    512-bit loop divides with ``rcp14``, the narrower ones with
    ``rcpps``."""
    return _fast_divide(x, 1.0 + ncnn_exp(0.0 - x, fma), width == 16)


def ncnn_swish_rows(rows: Tensor, path: str) -> Tensor:
    """ncnn's ``Swish`` on each row of the 2-D float32 ``rows`` (one row
    per channel of an unpacked blob), on the x86 build ``path``."""
    sizes, fma = X86_PATHS[path]
    length = rows.shape[1]
    out = torch.empty_like(rows)
    start = 0
    for chunk in sizes:
        stop = start + (length - start) // chunk * chunk
        if stop > start:
            # the SSE chunk's exponential is fused where the build has FMA
            out[:, start:stop] = _chunk_swish(rows[:, start:stop], fma,
                                              chunk)
        start = stop
    if start < length:
        out[:, start:] = _scalar_swish(rows[:, start:])
    return out


def _rows_of(x: Tensor) -> Tuple[int, int]:
    """How ncnn lays ``x`` (batch first) out: one row per channel of a
    sample with 3 or more dims (``c, [d,] h, w``); one row per sample
    otherwise (its ``w`` or ``w * h``)."""
    if x.dim() >= 4:
        return x.shape[0] * x.shape[1], -1
    return max(x.shape[0], 1) if x.dim() > 1 else 1, -1


def ncnn_swish(x: Tensor, path: Optional[str] = None) -> Tensor:
    """SiLU of ``x`` (a batch) as ncnn's x86 ``Swish`` layer computes it on
    unpacked blobs; ``path`` defaults to this CPU's (see
    :func:`ncnn_x86_path`). Off x86 it is ``torch``'s SiLU in float32."""
    path = path or ncnn_x86_path()
    x32 = x.float()
    if path is None or x32.numel() == 0:
        return torch.nn.functional.silu(x32)
    rows = x32.reshape(*_rows_of(x32)).contiguous()
    return ncnn_swish_rows(rows, path).reshape(x32.shape)


class NCNNSwish(nn.Module):
    """``nn.SiLU`` as ncnn's ``Swish`` computes it (:func:`ncnn_swish`),
    on the x86 build ``path`` (default: this CPU's)."""

    def __init__(self, path: Optional[str] = None) -> None:
        super().__init__()
        self.path = path

    def forward(self, x: Tensor) -> Tensor:
        return ncnn_swish(x, self.path)

    def extra_repr(self) -> str:
        return f'path={self.path or ncnn_x86_path()}'
