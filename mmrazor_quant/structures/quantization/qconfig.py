"""MMRazor's ``global_qconfig``: validated once, then a factory of quantizers.

.. code-block:: python

    global_qconfig = dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                       is_symmetric_range=True),
        a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True,
                       averaging_constant=0.1),
    )
"""
import copy
from typing import Any, Dict, Optional

from torch import nn

from mmrazor_quant.compat.qconfig_api import QConfigHandlerAPIMixin
from mmrazor_quant.compat.torch_ao import is_torch_ao_object, raise_torch_ao
from .qscheme import QSchema

__all__ = ['QConfigHandler']

REQUIRED_KEYS = ('w_observer', 'a_observer', 'w_fake_quant', 'a_fake_quant',
                 'w_qscheme', 'a_qscheme')


#: The ``quant_role`` class attribute of observers and fake quants (set on
#: ``BaseObserver`` / ``BaseFakeQuantize``), with the base class named in
#: messages. Checking the marker keeps structures free of imports from
#: models, which sit above them.
ROLES = {'observer': 'BaseObserver', 'fake_quant': 'BaseFakeQuantize'}


def _has_role(cls: Any, role: str) -> bool:
    return isinstance(cls, type) and getattr(cls, 'quant_role', None) == role


def _registered_names(registry, role: str) -> list:
    registry.import_from_location()
    return sorted(name for name, cls in registry.module_dict.items()
                  if _has_role(cls, role))


def _resolve(key: str, cfg: Any, role: str) -> type:
    """The class named by ``cfg['type']`` if it has ``quant_role == role``,
    or a ValueError naming ``key``."""
    from mmrazor_quant.registry import MODELS
    if not isinstance(cfg, dict) or 'type' not in cfg:
        raise TypeError(f'global_qconfig.{key} must be a dict with a "type" '
                        f'key, got {cfg!r}')
    type_ = cfg['type']
    cls = type_ if isinstance(type_, type) else MODELS.get(type_)
    if not _has_role(cls, role):
        valid = _registered_names(MODELS, role)
        raise ValueError(
            f'global_qconfig.{key}.type={type_!r} is not a registered '
            f'{ROLES[role]} in the mmrazor_quant::model registry. '
            f'Valid names: {valid}')
    return cls


class QConfigHandler(QConfigHandlerAPIMixin):
    """Validate a ``global_qconfig`` and build its fake-quant modules.

    Per-channel is decided by the weight/activation observer class
    (``PerChannel*`` observers have ``per_channel = True``) unless the
    qscheme sets ``is_per_channel``; a disagreement is an error.

    MMRazor's ``check_qconfig``, ``convert()``, ``w_fake_quant`` and
    ``a_fake_quant`` are available (see
    :class:`~mmrazor_quant.compat.qconfig_api.QConfigHandlerAPIMixin`).

    Args:
        qconfig (dict | Config | ConfigDict): The six keys of MMRazor's
            ``global_qconfig``.

    Raises:
        KeyError: If a required key is missing or an unknown key is given.
        ValueError: If a type is not registered, or observer and qscheme
            disagree on per-channel quantization.
    """

    def __init__(self, qconfig: Dict[str, Any]) -> None:
        if isinstance(qconfig, QConfigHandler):
            qconfig = qconfig.cfg
        if hasattr(qconfig, 'to_dict') and not isinstance(qconfig, dict):
            qconfig = qconfig.to_dict()  # an mmengine Config
        if is_torch_ao_object(qconfig):
            raise_torch_ao(f'a torch.ao {type(qconfig).__name__}',
                           'a global_qconfig dict (w_observer, a_observer, '
                           'w_fake_quant, a_fake_quant, w_qscheme, '
                           'a_qscheme)')
        if not isinstance(qconfig, dict):
            raise TypeError(f'global_qconfig must be a dict, got {qconfig!r}')
        missing = [k for k in REQUIRED_KEYS if k not in qconfig]
        if missing:
            raise KeyError(f'global_qconfig is missing {missing}; it needs '
                           f'all of {list(REQUIRED_KEYS)}')
        unknown = sorted(set(qconfig) - set(REQUIRED_KEYS))
        if unknown:
            raise KeyError(f'global_qconfig has unknown keys {unknown}; '
                           f'allowed: {list(REQUIRED_KEYS)}')
        self.cfg = copy.deepcopy(dict(qconfig))
        self.w_observer_cls = _resolve('w_observer', qconfig['w_observer'],
                                       'observer')
        self.a_observer_cls = _resolve('a_observer', qconfig['a_observer'],
                                       'observer')
        self.w_fake_quant_cls = _resolve('w_fake_quant',
                                         qconfig['w_fake_quant'],
                                         'fake_quant')
        self.a_fake_quant_cls = _resolve('a_fake_quant',
                                         qconfig['a_fake_quant'],
                                         'fake_quant')
        self.w_qscheme = self._scheme('w', self.w_observer_cls)
        self.a_qscheme = self._scheme('a', self.a_observer_cls)

    def _scheme(self, prefix: str, observer_cls: type) -> QSchema:
        key = f'{prefix}_qscheme'
        try:
            qscheme = QSchema.from_dict(self.cfg[key])
        except (TypeError, ValueError) as e:
            raise type(e)(f'global_qconfig.{key}: {e}') from e
        per_channel = bool(getattr(observer_cls, 'per_channel', False))
        if qscheme.is_per_channel is None:
            return qscheme.replace(is_per_channel=per_channel)
        if qscheme.is_per_channel != per_channel:
            kind = 'per-channel' if per_channel else 'per-tensor'
            raise ValueError(
                f'global_qconfig.{prefix}_observer {observer_cls.__name__} is '
                f'{kind} but global_qconfig.{key} sets is_per_channel='
                f'{qscheme.is_per_channel}; use a matching observer or drop '
                'is_per_channel')
        return qscheme

    def replace(self, w_qscheme: Optional[dict] = None,
                a_qscheme: Optional[dict] = None) -> 'QConfigHandler':
        """A new handler whose qschemes are updated with the given keys.

        Used by per-layer precision (e.g. keep one layer at 8 bit).
        """
        cfg = copy.deepcopy(self.cfg)
        if w_qscheme:
            cfg['w_qscheme'] = {**cfg['w_qscheme'], **w_qscheme}
        if a_qscheme:
            cfg['a_qscheme'] = {**cfg['a_qscheme'], **a_qscheme}
        return QConfigHandler(cfg)

    def _build(self, fq_key: str, obs_key: str, qscheme: QSchema) -> nn.Module:
        from mmrazor_quant.registry import MODELS, build_in_scope
        obs_cfg = copy.deepcopy(self.cfg[obs_key])
        obs_cfg.update(qscheme.observer_kwargs)
        obs_cfg['qscheme'] = qscheme
        fq_cfg = copy.deepcopy(self.cfg[fq_key])
        fq_cfg['observer'] = obs_cfg
        fq_cfg['qscheme'] = qscheme
        try:
            return build_in_scope(MODELS, fq_cfg)
        except TypeError as e:
            raise TypeError(f'cannot build global_qconfig.{fq_key} with '
                            f'global_qconfig.{obs_key}: {e}') from e

    def build_weight_fake_quant(self) -> nn.Module:
        """A fresh weight fake-quant module (with its own observer)."""
        return self._build('w_fake_quant', 'w_observer', self.w_qscheme)

    def build_activation_fake_quant(self) -> nn.Module:
        """A fresh activation fake-quant module (with its own observer)."""
        return self._build('a_fake_quant', 'a_observer', self.a_qscheme)
