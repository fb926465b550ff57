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
