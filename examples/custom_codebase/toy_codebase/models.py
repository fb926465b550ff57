"""The toy codebase's model: it reads its input size and loops over data
samples, the two things plain symbolic tracing cannot follow."""
from typing import List, Optional

import torch
import torch.nn.functional as F
from mmengine.model import BaseModel
from torch import nn

from mmrazor_quant.registry import MODELS


class TallyHead(nn.Module):
    """A linear classifier whose ``predict`` writes scores into each data
    sample (a loop over them)."""

    def __init__(self, in_channels: int, num_classes: int) -> None:
        super().__init__()
        self.fc = nn.Linear(in_channels, num_classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)

    def predict(self, logits: torch.Tensor, data_samples: List) -> List:
        scores = logits.softmax(-1)
        for sample, score in zip(data_samples, scores):
            sample.set_pred_score(score).set_pred_label(score.argmax())
        return data_samples


@MODELS.register_module()
class TallyNet(BaseModel):
    """Conv, ReLU, average pool and a linear classifier.

    ``forward`` pads the input to a multiple of ``window`` (a Python branch
    on the input's size); the loss builds its targets by looping over the
    data samples (mmcls's ``ClsDataSample``: ``gt_label``), and so does the
    head's ``predict``.

    Args:
        in_channels (int): Input channels. Defaults to 1.
        num_classes (int): Defaults to 10.
        window (int): Pooling window; inputs are padded to a multiple of
            it. Defaults to 4.
    """

    def __init__(self, in_channels: int = 1, num_classes: int = 10,
                 window: int = 4) -> None:
        super().__init__()
        self.window = window
        self.conv = nn.Conv2d(in_channels, 8, 3, padding=1)
        self.head = TallyHead(8, num_classes)

    def forward(self, inputs: torch.Tensor,
                data_samples: Optional[List] = None,
                mode: str = 'tensor'):
        logits = self.logits(inputs)
        if mode == 'loss':
            return self.loss(logits, data_samples)
        if mode == 'predict':
            return self.head.predict(logits, data_samples)
        return logits

    def logits(self, x: torch.Tensor) -> torch.Tensor:
        h, w = x.shape[-2:]
        if h % self.window or w % self.window:
            x = F.pad(x, (0, -w % self.window, 0, -h % self.window))
        x = F.avg_pool2d(F.relu(self.conv(x)), self.window)
        return self.head(x.mean((2, 3)))

    def loss(self, logits: torch.Tensor, data_samples: List) -> dict:
        targets = torch.cat([s.gt_label.label for s in data_samples])
        return dict(loss=F.cross_entropy(logits, targets))
