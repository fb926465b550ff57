"""Shared helpers of the fake-quant tests."""
from mmrazor_quant.models.observers.minmax import (
    MinMaxObserver,
    PerChannelMinMaxObserver,
)
from mmrazor_quant.structures.quantization import QSchema


def observer(per_channel: bool = False, **qscheme) -> MinMaxObserver:
    """A (per-channel) min/max observer with the scheme ``QSchema(**qscheme)``.
    """
    cls = PerChannelMinMaxObserver if per_channel else MinMaxObserver
    return cls(QSchema(is_per_channel=per_channel, **qscheme))
