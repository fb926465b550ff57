"""Small models for quantizer tests, shaped like mmengine models."""
import torch
import torch.nn.functional as F
from torch import nn


class ResidualCatPoolNet(nn.Module):
    """conv-bn-relu, conv-bn, residual add + ReLU, max pooling, two 1x1
    convs concatenated, global average pooling, flatten, linear.

    ``forward(inputs, data_samples=None, mode)`` like an mmengine model;
    ``data_samples`` are class labels here.
    """

    def __init__(self, num_classes: int = 5) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 8, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(8)
        self.relu1 = nn.ReLU()
        self.conv2 = nn.Conv2d(8, 8, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(8)
        self.relu2 = nn.ReLU()
        self.pool = nn.MaxPool2d(2)
        self.conv3 = nn.Conv2d(8, 4, 1)
        self.conv4 = nn.Conv2d(8, 4, 1)
        self.gap = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(8, num_classes)

    def forward(self, inputs, data_samples=None, mode='tensor'):
        y = self.relu1(self.bn1(self.conv1(inputs)))
        z = self.bn2(self.conv2(y))
        s = self.relu2(z + y)
        p = self.pool(s)
        c = torch.cat([self.conv3(p), self.conv4(p)], 1)
        logits = self.fc(torch.flatten(self.gap(c), 1))
        if mode == 'tensor':
            return logits
        if mode == 'loss':
            return dict(loss=F.cross_entropy(logits, data_samples))
        return logits.argmax(1)


class AttentionBlockNet(nn.Module):
    """A pre-norm transformer block on tokens ``(B, N, C)`` and a linear
    head on the mean token: LayerNorm, qkv linear, reshape/permute,
    ``Q @ K^T``, a bias added to the scores, softmax, ``attn @ V``, output
    projection, residual add, and an MLP with GELU and a second residual
    add.

    ``forward(inputs, data_samples=None, mode)`` like an mmengine model.
    """

    def __init__(self, dims: int = 16, heads: int = 2,
                 num_classes: int = 5) -> None:
        super().__init__()
        self.heads = heads
        self.scale = (dims // heads)**-0.5
        # a relative-position bias on the scores, as in Swin
        self.score_bias = nn.Parameter(0.1 * torch.randn(heads, 1, 1))
        self.norm1 = nn.LayerNorm(dims)
        self.qkv = nn.Linear(dims, 3 * dims)
        self.proj = nn.Linear(dims, dims)
        self.norm2 = nn.LayerNorm(dims)
        self.fc1 = nn.Linear(dims, 2 * dims)
        self.act = nn.GELU()
        self.fc2 = nn.Linear(2 * dims, dims)
        self.head = nn.Linear(dims, num_classes)

    def attention(self, x):
        qkv = self.qkv(self.norm1(x))
        qkv = qkv.unflatten(-1, (3, self.heads, -1)).permute(2, 0, 3, 1, 4)
        q, k, v = qkv[0], qkv[1], qkv[2]
        attn = (q @ k.transpose(-2, -1)) * self.scale
        attn = (attn + self.score_bias).softmax(dim=-1)
        out = (attn @ v).transpose(1, 2)
        # size arithmetic: numbers, never quantized
        return self.proj(out.reshape(x.size(0), x.size(1), -1))

    def forward(self, inputs, data_samples=None, mode='tensor'):
        x = inputs + self.attention(inputs)
        x = x + self.fc2(self.act(self.fc1(self.norm2(x))))
        logits = self.head(x.mean(1))
        if mode == 'tensor':
            return logits
        if mode == 'loss':
            return dict(loss=F.cross_entropy(logits, data_samples))
        return logits.argmax(1)
