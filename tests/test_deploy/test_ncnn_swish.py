"""ncnn's ``Swish`` layer against :func:`ncnn_swish`, bit for bit, on rows
whose lengths exercise every chunk of ncnn's x86 kernel (16, 8, 4 and the
scalar tail), and the ncnn simulation computing SiLU with it."""
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch import fx, nn

from mmrazor_quant.deploy.ncnn import ncnn_deploy_model
from mmrazor_quant.deploy.ncnn.runtime import load_net
from mmrazor_quant.deploy.ncnn.swish import (
    NCNNSwish,
    cpu_vendor,
    ncnn_swish,
    ncnn_x86_path,
)

#: Row lengths: every remainder modulo 16, and whole 16/8/4 chunks alone.
LENGTHS = list(range(1, 41)) + [47, 100, 400, 1600, 6400]


def _swish_net(tmp_path):
    param, weights = tmp_path / 'swish.param', tmp_path / 'swish.bin'
    param.write_text('7767517\n2 2\nInput in0 0 1 in0\n'
                     'Swish swish 1 1 in0 out0\n')
    weights.write_bytes(b'')
    return load_net(str(param), num_threads=1, packing=False)


def _run(ncnn, net, x: np.ndarray) -> torch.Tensor:
    # ncnn.Mat(ndarray) wraps the array: hand ncnn its own copy
    mat = ncnn.Mat(np.ascontiguousarray(x, dtype=np.float32)).clone()
    ex = net.create_extractor()
    ex.input('in0', mat)
    ret, out = ex.extract('out0')
    assert ret == 0
    return torch.from_numpy(np.array(out, dtype=np.float32, copy=True))


def _rows(length: int, generator: torch.Generator) -> torch.Tensor:
    """About 8,000 values in rows of ``length``: most as a conv output
    (N(0, 6)), a quarter far out (N(0, 40), past exp's clamp at 88.4)."""
    channels = max(2, 8000 // length)
    x = torch.randn(channels, 1, length, generator=generator) * 6
    x[:channels // 4] *= 40 / 6
    return x


def test_swish_bit_for_bit_with_ncnn(tmp_path):
    ncnn = pytest.importorskip('ncnn', reason='ncnn is not installed: run '
                               '`make ncnn`')
    path = ncnn_x86_path()
    if path is None:
        pytest.skip('ncnn_swish emulates ncnn on x86-64 only')
    if cpu_vendor() != 'GenuineIntel':
        pytest.skip('the reciprocal estimates are Intel\'s (rcpps differs '
                    'on other vendors)')
    net = _swish_net(tmp_path)
    generator = torch.Generator().manual_seed(0)
    count = 0
    for length in LENGTHS:
        x = _rows(length, generator)
        expected = _run(ncnn, net, x.numpy())
        got = ncnn_swish(x[None])[0]
        mismatch = (got.view(torch.int32) != expected.view(torch.int32))
        if path == 'avx512':  # the path checked against ncnn
            assert torch.equal(got, expected), (
                f'{path}: rows of {length}: {int(mismatch.sum())} of '
                f'{x.numel()} differ')
        else:
            # emulated from the same loops but not yet seen bit for bit:
            # at least as close as float32 SiLU (1-3 ulps)
            assert torch.allclose(got, expected, rtol=5e-7, atol=1e-35), \
                f'{path}: rows of {length}'
        count += x.numel()
    assert count > 300_000


def test_swish_chunks_differ_from_exact_silu():
    """The emulation is not torch's SiLU: the 16-lane chunk's rcp14
    division and the scalar tail's libm expf give other last bits."""
    x = torch.randn(1, 64, 1, 19, generator=torch.Generator().manual_seed(1))
    assert not torch.equal(ncnn_swish(x, 'avx512'), F.silu(x))
    assert torch.allclose(ncnn_swish(x, 'avx512'), F.silu(x), rtol=1e-5,
                          atol=1e-7)


class _TwoSiLU(nn.Module):

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.act = nn.SiLU()

    def forward(self, x):
        return F.silu(self.act(self.conv(x)))


def test_simulation_runs_silu_as_ncnn():
    model = fx.symbolic_trace(_TwoSiLU().eval())
    sim = ncnn_deploy_model(model)
    swishes = [m for m in sim.modules() if isinstance(m, NCNNSwish)]
    assert len(swishes) == 2
    assert not any(isinstance(m, nn.SiLU) for m in sim.modules())
    x = torch.randn(2, 3, 9, 11, generator=torch.Generator().manual_seed(2))
    expected = ncnn_swish(ncnn_swish(model.conv(x)))
    assert torch.equal(sim(x), expected)
