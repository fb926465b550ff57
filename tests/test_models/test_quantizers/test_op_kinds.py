"""Swish written out (``x * sigmoid(x)``) is an activation, not a product of
two tensors."""
import torch
import torch.nn.functional as F
from torch import fx, nn

from mmrazor_quant.models.quantizers.op_kinds import OpKind, classify_node


class SwishForms(nn.Module):

    def __init__(self):
        super().__init__()
        self.silu = nn.SiLU()

    def forward(self, x):
        return (self.silu(x), F.silu(x), x * torch.sigmoid(x),
                x.sigmoid() * x, x.mul(torch.sigmoid(x)),
                x * torch.sigmoid(x + 1), x * x)


def test_swish_forms_classified_as_swish_other_products_as_mul():
    gm = fx.symbolic_trace(SwishForms())
    modules = dict(gm.named_modules())
    output = next(n for n in gm.graph.nodes if n.op == 'output')
    kinds = [classify_node(n, modules) for n in output.args[0]]
    assert kinds == [OpKind.SWISH] * 5 + [OpKind.MUL] * 2
