"""The base of every backend quantizer."""
from typing import ClassVar, Dict, Optional, Sequence, Tuple, Union

from mmengine.model import BaseModule
from torch import fx, nn

from mmrazor_quant.registry import TASK_UTILS, build_in_scope
from mmrazor_quant.structures.quantization import QConfigHandler, QSchema
from .backend_spec import BackendSpec
from .mmrazor_compat import (
    QuantizerAPIMixin,
    export_quantized_onnx,
    granularity_modes,
    no_observer_object_types,
    resolve_module_classes,
)
from .qconfig_mapping import QConfigMapping
from .rules import QuantRules

__all__ = ['BaseQuantizer']

DEFAULT_TRACER = dict(type='mmrazor_quant.CustomTracer')


class BaseQuantizer(QuantizerAPIMixin, BaseModule):
    """Prepare a float model for quantization the way one backend runs it.

    ``prepare`` traces the model once per forward mode, fuses Conv+BN(+ReLU)
    and Linear+BN into QAT modules whose (BN-folded) weights are
    fake-quantized, inserts activation fake quants where :attr:`rules` say
    the backend quantizes, and removes redundant ones. All modes share the
    same modules (principle 3 of docs/architecture.md).

    A backend is a subclass that declares, as class attributes (checked
    when the class is defined, so a missing one is a ``TypeError`` at the
    ``class`` statement):

    * :attr:`backend` (required): the device name; deploy picks the
      exporter registered under it;
    * :attr:`rules` (required): a non-empty :class:`QuantRules`, which op
      kinds are quantized, on their inputs, outputs or both;
    * :attr:`scheme` (optional): a :class:`BackendSpec`, the bits, ranges,
      symmetry, granularity and rounding the device executes; every
      qconfig is checked against it and qschemes without ``rounding`` get
      the backend's. Without it the quantizer accepts any scheme.

    An intermediate class that declares nothing passes ``abstract=True``:
    ``class MyBase(BaseQuantizer, abstract=True)``. See
    ``docs/add_backend.md``.

    Per-layer qconfigs come from ``qconfig_mapping`` (any backend):

    .. code-block:: python

        qconfig_mapping=dict(
            _global_=global_qconfig,
            module_name=[('backbone.conv1', None),              # keep float
                         ('re:backbone\\.layer4\\..*',           # regex
                          dict(w_qscheme=dict(bit=8)))],       # 8-bit weights
            object_type=[('Linear', dict(a_qscheme=dict(bit=8)))])

    A rule gives a whole qconfig, only the keys that differ from the global
    one, or ``None`` (float). A layer's qconfig applies to its weights and
    to the fake quant on its input. A ``module_name`` that matches no module
    is an error.

    Args:
        global_qconfig (dict, optional): MMRazor's ``global_qconfig`` (six
            keys); same as ``qconfig_mapping['_global_']``.
        qconfig_mapping (dict, optional): ``_global_``, ``module_name`` and
            ``object_type`` rules. Defaults to None.
        tracer (dict): Config of the tracer. Defaults to
            ``dict(type='mmrazor_quant.CustomTracer')``.
        init_cfg (dict, optional): mmengine init config. Defaults to None.
        no_observer_modules (list, optional): MMRazor's key: module classes
            (or dotted paths) kept float, i.e. ``object_type`` rules
            ``(cls, None)`` after those of ``qconfig_mapping``.
            Defaults to None.
        extra_redundant_fakequants (dict, optional): MMRazor's key: activation
            fake quants to remove around given modules, functions, methods
            or node ops (see :mod:`.passes.remove_requested`).
            Defaults to None.

    Raises:
        KeyError, ValueError, TypeError: If a qconfig is invalid, names a
            scheme the backend cannot execute, or neither/both of
            ``global_qconfig`` and ``qconfig_mapping['_global_']`` is given.
    """
    #: Where this backend quantizes activations (required in subclasses).
    rules: ClassVar[Optional[QuantRules]] = None
    #: Name of the backend, used by deploy to pick an exporter (required in
    #: subclasses).
    backend: ClassVar[Optional[str]] = None
    #: The schemes the backend executes; None accepts any scheme.
    scheme: ClassVar[Optional[BackendSpec]] = None
    #: Whether transposed convs get fake-quantized weights (per channel on
    #: axis 1, their output channels); False keeps their weights float
    #: where the backend's deploy path cannot take them.
    quantizes_transposed_convs: ClassVar[bool] = True

    def __init_subclass__(cls, abstract: bool = False, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if not abstract:
            _check_declarations(cls)

    def __init__(self,
                 global_qconfig: Optional[Union[dict, QConfigHandler]] = None,
                 qconfig_mapping: Optional[dict] = None,
                 tracer: Optional[dict] = None,
                 init_cfg: Optional[dict] = None,
                 no_observer_modules: Optional[list] = None,
                 extra_redundant_fakequants: Optional[dict] = None) -> None:
        from .passes.remove_requested import check_redundant_spec
        super().__init__(init_cfg)
        mapping = dict(qconfig_mapping or {})
        self.no_observer_modules = resolve_module_classes(
            no_observer_modules, 'no_observer_modules')
        self.extra_redundant_fakequants = check_redundant_spec(
            extra_redundant_fakequants)
        unknown = set(mapping) - {'_global_', 'object_type', 'module_name'}
        if unknown:
            raise KeyError(f'qconfig_mapping has unknown keys '
                           f'{sorted(unknown)}; allowed: _global_, '
                           'object_type, module_name')
        if (global_qconfig is None) == ('_global_' not in mapping):
            raise ValueError(f'{type(self).__name__} needs exactly one of '
                             "global_qconfig and qconfig_mapping['_global_']")
        global_cfg = mapping['_global_'] if global_qconfig is None \
            else global_qconfig
        if self.scheme is not None and isinstance(global_cfg, dict):
            global_cfg = self.scheme.with_defaults(global_cfg)
        self.qconfig = QConfigHandler(global_cfg)
        self.qconfig_mapping = QConfigMapping(
            self.qconfig,
            module_name=mapping.get('module_name'),
            object_type=no_observer_object_types(
                mapping.get('object_type'), self.no_observer_modules))
        for handler in self.qconfig_mapping.handlers():
            self.check_qschemes(handler.w_qscheme, handler.a_qscheme)
        tracer = dict(DEFAULT_TRACER) if tracer is None else tracer
        if isinstance(tracer, dict):
            tracer = build_in_scope(TASK_UTILS, tracer)
        self.tracer = tracer

    # -- backend constraints ---------------------------------------------
    def check_qschemes(self, w_qscheme: QSchema, a_qscheme: QSchema) -> None:
        """Raise ValueError if the backend cannot execute these schemes:
        checks them against :attr:`scheme` if the class declares one."""
        if self.scheme is not None:
            self.scheme.check(w_qscheme, a_qscheme, type(self).__name__)

    @property
    def support_w_modes(self) -> Tuple[str, ...]:
        """Weight granularities the backend runs: ``'per_tensor'`` and/or
        ``'per_channel'`` (from :attr:`scheme`)."""
        return granularity_modes(self.scheme.weight if self.scheme else None)

    @property
    def support_a_modes(self) -> Tuple[str, ...]:
        """Activation granularities the backend runs (a tuple, also for
        one mode)."""
        return granularity_modes(
            self.scheme.activation if self.scheme else None)

    def export_onnx(self, model: nn.Module, args, output_path: str,
                    opset_version: Optional[int] = None, **kwargs) -> None:
        """Write standard QDQ ONNX of a calibrated model; see
        :func:`.mmrazor_compat.export_quantized_onnx`. Backend side files
        come from ``tools/export.py`` / ``mmrazor_quant.deploy.export_model``.
        """
        export_quantized_onnx(model, args, output_path, opset_version,
                              **kwargs)

    # -- per-layer qconfig ----------------------------------------------
    def qconfig_for(self, module_name: Optional[str],
                    module: Optional[nn.Module]
                    ) -> Tuple[Optional[QConfigHandler], str]:
        """The qconfig of a layer and a tag naming where it came from
        (``'global'`` or the per-layer rule); ``None`` keeps it float."""
        qconfig, tag = self.qconfig_mapping.lookup(module_name, module)
        if tag is None:
            return self.qconfig, 'global'
        return qconfig, tag

    def _weight_fake_quant(self, name: str, module: nn.Module) -> nn.Module:
        qconfig, _ = self.qconfig_for(name, module)
        assert qconfig is not None, f'{name} is kept float'
        fake_quant = qconfig.build_weight_fake_quant()
        fake_quant.name = f'{name} (weight)'
        return fake_quant

    def _keep_float(self, name: str) -> bool:
        modules = self._modules_cache
        qconfig, _ = self.qconfig_for(name, modules.get(name))
        return qconfig is None

    def _activation_fake_quant(self, key: str, consumer: Optional[fx.Node],
                               consumer_name: Optional[str]):
        module = self._modules_cache.get(consumer_name) \
            if consumer_name else None
        qconfig, tag = self.qconfig_for(consumer_name, module)
        if qconfig is None:
            return None
        return qconfig.build_activation_fake_quant(), tag

    # -- the pipeline ----------------------------------------------------
    def trace(self, model: nn.Module,
              forward_modes: Sequence[str]) -> Dict[str, fx.Graph]:
        """Trace ``model`` once per forward mode."""
        return {
            mode: self.tracer.trace_mode(model, mode).graph
            for mode in forward_modes
        }

    def prepare(self, model: nn.Module,
                forward_modes: Sequence[str] = ('tensor', )
                ) -> Dict[str, fx.GraphModule]:
        """Quantize ``model`` in place and return one GraphModule per mode.

        Args:
            model (nn.Module): The float model (e.g. an mmcls
                ``ImageClassifier``); its submodules are replaced in place
                by QAT modules and it gains ``act_fake_quants``.
            forward_modes (Sequence[str]): Modes to trace. Defaults to
                ``('tensor',)``.

        Returns:
            dict[str, fx.GraphModule]: Graph modules sharing ``model``'s
            submodules.
        """
        from .passes.fuse import fuse_conv_bn
        from .passes.insert_fake_quants import insert_activation_fake_quants
        from .passes.remove_redundant import remove_redundant_fake_quants
        from .passes.swap_qat_modules import swap_qat_modules

        graphs = self.trace(model, forward_modes)
        self.qconfig_mapping.check_names(n for n, _ in model.named_modules())
        self._modules_cache = dict(model.named_modules())
        fuse_conv_bn(
            model, graphs, self._weight_fake_quant, skip=self._keep_float)
        self._modules_cache = dict(model.named_modules())
        swap_qat_modules(
            model, graphs, self._weight_fake_quant, skip=self._keep_float,
            transposed_convs=self.quantizes_transposed_convs)
        self._modules_cache = dict(model.named_modules())
        insert_activation_fake_quants(model, graphs, self.rules,
                                      self._activation_fake_quant)
        remove_redundant_fake_quants(model, graphs, self.rules)
        self._remove_requested(model, graphs)
        del self._modules_cache
        return {
            mode: build_graph_module(model, graph, mode)
            for mode, graph in graphs.items()
        }


    def _remove_requested(self, model: nn.Module,
                          graphs: Dict[str, fx.Graph]) -> None:
        """Apply ``extra_redundant_fakequants`` and log what it removed."""
        from mmengine.logging import print_log

        from .passes.remove_requested import remove_requested_fake_quants
        removed = remove_requested_fake_quants(
            model, graphs, self.extra_redundant_fakequants, self.rules)
        if removed:
            print_log(f'extra_redundant_fakequants removed {len(removed)} '
                      f'activation fake quant(s): {removed}', logger='current')


def _check_declarations(cls: type) -> None:
    """Raise TypeError if a backend class misses a required declaration."""
    name = cls.__name__
    backend = getattr(cls, 'backend', None)
    if not isinstance(backend, str) or not backend.strip():
        raise TypeError(
            f"{name} must declare backend = '<name>' (a non-empty str naming "
            f'the device, used to pick its exporter), got {backend!r}. '
            f'Declare it, or define {name}(BaseQuantizer, abstract=True)')
    rules = getattr(cls, 'rules', None)
    if not isinstance(rules, QuantRules):
        raise TypeError(
            f'{name} must declare rules = QuantRules(...) (which op kinds '
            f'the backend quantizes), got {rules!r}')
    if not (rules.quantized_inputs or rules.quantized_outputs
            or rules.quantize_model_input):
        raise TypeError(
            f'{name}.rules quantizes nothing: give quantized_inputs and/or '
            'quantized_outputs (e.g. quantized_inputs={OpKind.CONV: '
            "'first'})")
    scheme = getattr(cls, 'scheme', None)
    if scheme is not None and not isinstance(scheme, BackendSpec):
        raise TypeError(f'{name}.scheme must be a BackendSpec or None, got '
                        f'{scheme!r}')


def build_graph_module(root: nn.Module, graph: fx.Graph,
                       mode: str) -> fx.GraphModule:
    """A GraphModule over ``root`` that shares its submodules."""
    name = f'{type(root).__name__}_{mode}'
    return fx.GraphModule(root, graph, class_name=name)
