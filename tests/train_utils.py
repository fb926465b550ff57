"""The short training loop that test fixtures use to get usable weights."""
import torch
from torch import nn


def train_steps(model: nn.Module,
                images: torch.Tensor,
                labels: torch.Tensor,
                steps: int,
                optimizer: torch.optim.Optimizer,
                start: int = 0,
                batch_size: int = 32) -> nn.Module:
    """``steps`` optimizer steps on consecutive batches of
    ``images[start:]`` (wrapping around), in ``mode='tensor'``.

    Returns:
        nn.Module: ``model``, left in training mode.
    """
    model.train()
    span = len(images) - start - batch_size
    for step in range(steps):
        i = start + (step * batch_size) % span
        loss = torch.nn.functional.cross_entropy(
            model(images[i:i + batch_size], mode='tensor'),
            labels[i:i + batch_size])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model
