"""MMRazor's qconfig structures: ``QSchemeHandler`` and the methods of its
``QConfigHandler``, on :class:`QSchema` and our handler.

``QConfigHandler.convert()`` returned a torch.ao ``QConfig`` in MMRazor;
here it returns a :class:`QConfigFactories` pair with the same two fields,
``weight`` and ``activation``, each a factory that builds a fresh fake quant
of this project when called.
"""
from collections import namedtuple
from typing import Any, Dict

import torch

from mmrazor_quant.structures.quantization.qscheme import QSchema
from .torch_ao import raise_torch_ao

__all__ = ['QSchemeHandler', 'QConfigFactories', 'QConfigHandlerAPIMixin']

#: ``(weight, activation)`` fake-quant factories, what ``convert()`` gives.
QConfigFactories = namedtuple('QConfigFactories', ['weight', 'activation'])

_REQUIRED = ('w_qscheme', 'a_qscheme', 'w_fake_quant', 'a_fake_quant',
             'w_observer', 'a_observer')


class QSchemeHandler:
    """MMRazor's qscheme object: the keys of a ``w_qscheme``/``a_qscheme``
    and the torch-style observer arguments they mean.

    Args:
        qdtype (str): ``'quint8'`` or ``'qint8'``. Defaults to ``'quint8'``.
        bit (int): Bit width. Defaults to 8.
        is_symmetry (bool): Symmetric quantization. Defaults to True (as in
            MMRazor; a config's ``w_qscheme``/``a_qscheme`` dict without
            ``is_symmetry`` is asymmetric in :class:`QSchema`).
        is_per_channel (bool): Per-channel. Defaults to False.
        **kwargs: ``is_symmetric_range`` and keys for the observer.

    Raises:
        ValueError: If a value is out of :class:`QSchema`'s range.
    """

    def __init__(self,
                 qdtype: str = 'quint8',
                 bit: int = 8,
                 is_symmetry: bool = True,
                 is_per_channel: bool = False,
                 **kwargs: Any) -> None:
        kwargs = dict(kwargs)
        self.is_symmetric_range = bool(kwargs.pop('is_symmetric_range',
                                                  False))
        self.qschema = QSchema.from_dict(
            dict(
                qdtype=qdtype,
                bit=bit,
                is_symmetry=is_symmetry,
                is_per_channel=is_per_channel,
                is_symmetric_range=self.is_symmetric_range,
                **kwargs))
        self.qdtype = qdtype
        self.bit = bit
        self.is_symmetry = is_symmetry
        self.is_per_channel = is_per_channel
        self.kwargs = kwargs

    @property
    def torch_qscheme(self) -> torch.qscheme:
        """``torch.per_{tensor,channel}_{affine,symmetric}``."""
        if self.is_per_channel:
            return torch.per_channel_symmetric if self.is_symmetry \
                else torch.per_channel_affine
        return torch.per_tensor_symmetric if self.is_symmetry \
            else torch.per_tensor_affine

    def to_observer_params(self) -> Dict[str, Any]:
        """The torch-style observer arguments (``dtype``, ``quant_min``,
        ``quant_max``, ``qscheme``, ``reduce_range``, ``ch_axis``) plus the
        extra keys; ``Observer.with_args(**params)`` accepts them."""
        quant_min, quant_max = self.qschema.quant_range
        params = dict(self.kwargs)
        params.update(
            dtype=torch.qint8 if self.qschema.is_signed else torch.quint8,
            quant_min=quant_min,
            quant_max=quant_max,
            qscheme=self.torch_qscheme,
            reduce_range=False)
        if self.is_per_channel:
            params['ch_axis'] = self.qschema.ch_axis
        return params

    def __str__(self) -> str:
        return (f'qdtype: {self.qdtype} / bit: {self.bit} / is_symmetry: '
                f'{self.is_symmetry} / is_per_channel: {self.is_per_channel}'
                f' / extra_kwargs: {self.kwargs}')


class QConfigHandlerAPIMixin:
    """``check_qconfig``, ``convert``, ``w_fake_quant`` and
    ``a_fake_quant`` of MMRazor's ``QConfigHandler``."""

    @staticmethod
    def check_qconfig(qconfig: Any) -> bool:
        """Whether ``qconfig`` has the six keys, each a dict (MMRazor's
        check; building the handler gives the detailed error)."""
        if hasattr(qconfig, 'to_dict') and not isinstance(qconfig, dict):
            qconfig = qconfig.to_dict()
        if not isinstance(qconfig, dict):
            return False
        return all(isinstance(qconfig.get(k), dict) for k in _REQUIRED)

    @property
    def w_fake_quant(self):
        """A factory: ``w_fake_quant()`` builds a weight fake quant."""
        return self.build_weight_fake_quant

    @property
    def a_fake_quant(self):
        """A factory: ``a_fake_quant()`` builds an activation fake quant."""
        return self.build_activation_fake_quant

    def convert(self) -> QConfigFactories:
        """The ``(weight, activation)`` factories (torch.ao's ``QConfig``
        fields, without torch.ao)."""
        return QConfigFactories(self.w_fake_quant, self.a_fake_quant)

    def fixed_w_fakequant(self) -> None:
        raise_torch_ao('QConfigHandler.fixed_w_fakequant',
                       'model.get_deploy_model(), which fixes every fake '
                       'quant for export')

    @staticmethod
    def replace_fakequant(*args: Any, **kwargs: Any) -> None:
        raise_torch_ao('QConfigHandler.replace_fakequant',
                       'model.get_deploy_model(), which replaces every fake '
                       'quant by fixed qparams for export')
