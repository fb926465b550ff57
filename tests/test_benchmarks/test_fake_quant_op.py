"""The helpers of benchmarks/fake_quant_op.py count what they claim."""
import pytest
import torch

from benchmarks.fake_quant_op import (
    QMAX,
    QMIN,
    aten_contenders,
    make_row,
    minmax_qparams,
    our_contenders,
    saved_bytes,
)


class _SavesInputAndTwo(torch.autograd.Function):
    """Saves ``x``, a float32 tensor of its size and a bool mask of it."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x, x * 2, x > 0)
        return x.clone()

    @staticmethod
    def backward(ctx, grad):
        return grad


def test_saved_bytes_counts_each_storage_once_and_x_apart():
    x = torch.randn(10, 30, requires_grad=True)
    # x (flagged, not counted) + 4 bytes + 1 byte per element
    assert saved_bytes(_SavesInputAndTwo.apply, x) == (300 * 5, True)
    # exp saves its output only
    assert saved_bytes(torch.exp, x) == (300 * 4, False)
    # x * x saves x twice: one storage, and it is x's
    assert saved_bytes(lambda t: t * t, x) == (0, True)
    # a view of x is x
    assert saved_bytes(lambda t: t.reshape(-1).sin(), x) == (0, True)
    # nothing saved without autograd
    assert saved_bytes(torch.exp, x.detach()) == (0, False)


def test_minmax_qparams_closed_form():
    x = torch.tensor([-1.0, 0.5, 3.0])
    scale, zero_point = minmax_qparams(x)
    assert scale == pytest.approx(4.0 / (QMAX - QMIN))
    assert zero_point == round(1.0 / scale)
    assert minmax_qparams(torch.tensor([1.0, 2.0]))[1] == 0  # range has 0


@pytest.mark.parametrize('dtype', [torch.float32, torch.bfloat16])
def test_our_fake_quants_keep_at_most_a_byte_per_element(dtype):
    """Issue 12's memory contract, as the benchmark reports it: every fake
    quant keeps one byte per element (plus, for LSQ/LSQ+, the input it
    recomputes from), never a float copy."""
    x = torch.randn(2, 4, 6, 6, dtype=dtype, requires_grad=True)
    for name, build in our_contenders(x.detach()).items():
        row = make_row(name, build, x)
        assert not row.error, (name, row.error)
        # the mask, plus qparams of a few bytes
        assert x.numel() <= row.saved < x.numel() + 64, (name, row.saved)
        assert row.keeps_x == ('LSQ' in name), name


def test_aten_peers_run_and_report_their_mask():
    x = torch.randn(2, 4, 6, 6, requires_grad=True)
    rows = {
        name: make_row(name, build, x)
        for name, build in aten_contenders(x.detach()).items()
    }
    for name, row in rows.items():
        assert not row.error, (name, row.error)
    fixed = rows['ATen fake_quantize_per_tensor_affine']
    assert (fixed.saved, fixed.keeps_x) == (x.numel(), False)  # bool mask
    learnable = rows['ATen _fake_quantize_learnable_per_tensor']
    assert learnable.keeps_x
