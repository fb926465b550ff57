"""MMRazor's quantizer arguments and properties, on our quantizers:
``no_observer_modules``, ``support_w_modes``/``support_a_modes``,
``prepare_custom_config`` and ``export_onnx``."""
from typing import Any, List, Optional, Sequence, Tuple

from mmengine.utils import import_modules_from_strings
from torch import nn

from mmrazor_quant.compat.torch_ao import raise_torch_ao
from .backend_spec import TensorSpec

__all__ = [
    'QuantizerAPIMixin', 'resolve_module_classes', 'no_observer_object_types',
    'granularity_modes',
    'check_prepare_custom_config', 'export_quantized_onnx'
]

_DEPLOY_INSTEAD = ('model.get_deploy_model() (BN folded, fake quants '
                   'fixed for export)')


class QuantizerAPIMixin:
    """Helpers of MMRazor's ``BaseQuantizer``: the two plain-module ones
    work; the torch.ao-bound ones raise, saying what to use instead."""

    @staticmethod
    def convert_batchnorm2d(model: nn.Module) -> None:
        """Replace every ``SyncBatchNorm`` (and mmengine's ``_BatchNormXd``)
        in ``model`` by an ``nn.BatchNorm2d`` with the same settings and
        state, in place."""
        from mmengine.model.utils import _BatchNormXd
        for name, child in list(model.named_children()):
            if isinstance(child, (nn.SyncBatchNorm, _BatchNormXd)):
                bn = nn.BatchNorm2d(child.num_features, child.eps,
                                    child.momentum, child.affine,
                                    child.track_running_stats)
                bn.load_state_dict(child.state_dict())
                setattr(model, name, bn)
            else:
                QuantizerAPIMixin.convert_batchnorm2d(child)

    @staticmethod
    def sync_module_training_mode(model: nn.Module, mode: bool = True) -> None:
        """Set ``training`` of every module of ``model`` to ``mode``."""
        for module in model.modules():
            module.training = mode

    def swap_ff_with_fxff(self, model: nn.Module) -> None:
        raise_torch_ao('BaseQuantizer.swap_ff_with_fxff (FloatFunctional)',
                       'plain torch ops (x + y, torch.cat), which the tracer '
                       'quantizes by the backend rules')

    def post_process_for_deploy(self, *args: Any, **kwargs: Any) -> None:
        raise_torch_ao('post_process_for_deploy', _DEPLOY_INSTEAD)

    def gen_qconfig_mapping(self, *args: Any, **kwargs: Any) -> None:
        raise_torch_ao('gen_qconfig_mapping (torch.ao QConfigMapping)',
                       'the qconfig_mapping argument (_global_, '
                       'object_type, module_name dicts)')


_PREPARE_KEYS = ('float_to_observed_custom_module_class',
                 'preserved_attributes')


def resolve_module_classes(entries: Optional[Sequence[Any]],
                           key: str) -> Tuple[type, ...]:
    """Classes from classes or dotted paths (``'torch.nn.ReLU6'``).

    Raises:
        ValueError: If a path cannot be imported.
        TypeError: If an entry is not an ``nn.Module`` class.
    """
    if entries is None:
        return ()
    if isinstance(entries, (str, type)):
        entries = [entries]
    classes = []
    for entry in entries:
        cls = entry
        if isinstance(entry, str):
            module, _, name = entry.rpartition('.')
            try:
                cls = getattr(import_modules_from_strings(module), name)
            except (ImportError, AttributeError, ValueError) as e:
                raise ValueError(f'{key}: cannot import {entry!r}; give a '
                                 "dotted class path such as "
                                 f"'torch.nn.ReLU6' ({e})") from e
        if not (isinstance(cls, type) and issubclass(cls, nn.Module)):
            raise TypeError(f'{key} must hold nn.Module classes or their '
                            f'dotted paths, got {entry!r}')
        classes.append(cls)
    return tuple(classes)


def no_observer_object_types(object_type: Any,
                             no_observer_modules: Tuple[type, ...]) -> list:
    """``object_type`` rules with ``(cls, None)`` (keep float: no weight
    fake quant, no activation fake quant on the layer's inputs or outputs)
    appended for each class of ``no_observer_modules``."""
    rules: List[Any] = []
    if isinstance(object_type, dict):
        rules.extend(object_type.items())
    elif object_type:
        rules.extend(object_type)
    return rules + [(cls, None) for cls in no_observer_modules]


def granularity_modes(spec: Optional[TensorSpec]) -> Tuple[str, ...]:
    """``('per_tensor', 'per_channel')`` narrowed by ``spec.per_channel``."""
    per_channel = None if spec is None else spec.per_channel
    if per_channel is None:
        return ('per_tensor', 'per_channel')
    return ('per_channel', ) if per_channel else ('per_tensor', )


def check_prepare_custom_config(cfg: Optional[dict]) -> Tuple[str, ...]:
    """The ``preserved_attributes`` of MMRazor's ``prepare_custom_config``.

    Raises:
        KeyError: On an unknown key.
        TorchAONotSupportedError: For ``float_to_observed_custom_module_class``
            (torch.ao's observed custom modules).
    """
    cfg = dict(cfg or {})
    unknown = sorted(set(cfg) - set(_PREPARE_KEYS))
    if unknown:
        raise KeyError(f'prepare_custom_config has unknown keys {unknown}; '
                       f'allowed: {list(_PREPARE_KEYS)}')
    if cfg.get('float_to_observed_custom_module_class'):
        raise_torch_ao(
            'prepare_custom_config.float_to_observed_custom_module_class',
            'CustomTracer(skipped_module_classes=[...]) to keep the module '
            'whole, and a qconfig_mapping object_type rule for its '
            'precision')
    attrs = cfg.get('preserved_attributes', ())
    if isinstance(attrs, str) or not all(isinstance(a, str) for a in attrs):
        raise TypeError('prepare_custom_config.preserved_attributes must be '
                        f'a list of attribute names, got {attrs!r}')
    return tuple(attrs)


def export_quantized_onnx(model: nn.Module, args: Any, output_path: str,
                          opset_version: Optional[int] = None,
                          **kwargs: Any) -> None:
    """Write standard QDQ ONNX of a calibrated model (MMRazor's
    ``quantizer.export_onnx``).

    Args:
        model (nn.Module): An ``MMArchitectureQuant`` (its
            ``get_deploy_model()`` is exported), a calibrated tensor-mode
            GraphModule of ``quantizer.prepare`` or a deploy model.
        args (Tensor | tuple): The example input batch (a tuple's first
            element).
        output_path (str): Where to write the ``.onnx``.
        opset_version (int, optional): The opset. Defaults to None (the
            deploy default, see :func:`mmrazor_quant.deploy.export_onnx`).
        **kwargs: ``input_names``, ``output_names``, ``dynamic_axes``,
            ``dynamic_batch``.

    Raises:
        TypeError: On another keyword (torch.onnx.export's own options are
            fixed by the QDQ exporter).
    """
    from mmrazor_quant.deploy.onnx_export import DEFAULT_OPSET, export_onnx
    allowed = ('input_names', 'output_names', 'dynamic_axes',
               'dynamic_batch')
    unknown = sorted(set(kwargs) - set(allowed))
    if unknown:
        raise TypeError(f'export_onnx got unsupported arguments {unknown}; '
                        f'it takes {list(allowed)}')
    from mmrazor_quant.models.fake_quants import BaseFakeQuantize
    if hasattr(model, 'get_deploy_model'):
        model = model.get_deploy_model()
    elif any(isinstance(m, BaseFakeQuantize) for m in model.modules()):
        # A prepared tensor-mode GraphModule (MMRazor's observed model).
        from types import SimpleNamespace

        from mmrazor_quant.deploy import build_deploy_model
        model = build_deploy_model(SimpleNamespace(qmodels={'tensor': model}))
    example = args[0] if isinstance(args, (tuple, list)) else args
    export_onnx(
        model,
        example,
        output_path,
        opset=DEFAULT_OPSET if opset_version is None else opset_version,
        **kwargs)
