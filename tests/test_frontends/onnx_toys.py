"""Small ONNX models written by torch.onnx.export, holding what a real
model file brings: a MatMul+Add head by constant weights, LayerNorm
(written out below opset 17), HardSigmoid, mean pooling, a Reshape fed by a
Shape/Gather subgraph, attention matmuls with a scalar scale."""
import torch
import torch.nn.functional as F
from torch import nn


class ToyNet(nn.Module):
    """Conv-BN-ReLU, conv, x * hardsigmoid(x), reshape by its own shape,
    LayerNorm, one self-attention, mean over tokens, x @ W + b."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, 3, stride=2, padding=1)
        self.hs = nn.Hardsigmoid()
        self.ln = nn.LayerNorm(16)
        self.w = nn.Parameter(torch.randn(16, 10) * 0.2)
        self.b = nn.Parameter(torch.randn(10))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.bn(self.conv(x)))
        x = self.conv2(x)
        x = x * self.hs(x)
        n, c, h, w = x.shape
        t = self.ln(x.reshape(n, c, h * w).transpose(1, 2))
        attn = torch.softmax(t @ t.transpose(1, 2) * 0.25, -1)
        t = t + attn @ t
        return t.mean(1) @ self.w + self.b


#: The toy's (C, H, W).
TOY_SHAPE = (3, 16, 16)


def export_toy(path: str, opset: int = 17, seed: int = 0) -> str:
    """Write a seeded :class:`ToyNet` (BN statistics drawn, eval mode) with
    input ``image``, output ``logits`` and a dynamic ``batch`` axis."""
    torch.manual_seed(seed)
    net = ToyNet()
    net.bn.running_mean.uniform_(-0.5, 0.5)
    net.bn.running_var.uniform_(0.5, 2.0)
    net.eval()
    torch.onnx.export(
        net, (torch.randn(2, *TOY_SHAPE), ), path, input_names=['image'],
        output_names=['logits'], opset_version=opset, dynamo=False,
        dynamic_axes={'image': {0: 'batch'}, 'logits': {0: 'batch'}})
    return path
