"""Skips tests marked ``cuda`` on machines without a CUDA GPU."""
import pytest
import torch


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if item.get_closest_marker('cuda') is not None:
            item.add_marker(skip)
