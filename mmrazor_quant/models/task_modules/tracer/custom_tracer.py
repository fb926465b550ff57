"""A ``torch.fx`` tracer that can leave methods and modules out of a graph."""
import collections
import contextlib
import inspect
import re
from typing import (
    Any,
    Callable,
    Dict,
    FrozenSet,
    Iterator,
    List,
    Optional,
    Sequence,
    Tuple,
    Union,
)

import torch
from mmengine.logging import print_log
from torch import nn
from torch.fx import Graph, GraphModule, Node, Proxy, Tracer
from torch.fx.proxy import TraceError as FxTraceError

from mmrazor_quant.registry import TASK_UTILS
from ...codebases import BaseCodebase, codebases_of
from .example_values import (
    EXAMPLE_BATCH_SIZE,
    UNKNOWN,
    Unknown,
    ValueProxy,
    evaluate_node,
    patched_factories,
    preserved_state,
    shadowed_builtins,
)
from .layer_types import plain_layer_type
from .path_utils import resolve_dotted_path, resolve_method
from .shape_guards import CONVERSIONS, check_shape_guard, decision_site
from .trace_error import TraceError, format_failure, locate_failure
from .untraced_methods import UntracedMethodRegistry

__all__ = ['CustomTracer']

#: The forward modes of an mmengine ``BaseModel``.
FORWARD_MODES = ('tensor', 'predict', 'loss')

_MISSING = object()

#: Module classes that are always leaves: stochastic depth draws a random
#: mask whose shape comes from the input; onnx2torch's ONNX op modules
#: (what an imported ONNX model keeps of them) branch on their inputs.
DEFAULT_LEAF_CLASS_NAMES = frozenset({'DropPath', 'OnnxToTorchModule'})


@TASK_UTILS.register_module()
class CustomTracer(Tracer):
    """Trace OpenMMLab models, keeping untraceable parts as opaque nodes.

    Three kinds of code stay out of the graph:

    - ``skipped_methods``: during a trace, each named method is replaced on
      its class so that a call becomes one ``call_method`` node on a
      ``get_attr`` node of the module it was called on; the graph module
      then calls the real method at run time (e.g.
      ``self.head._get_loss(cls_score, data_samples)``), so data samples
      and loss dicts flow through as opaque values. The class is restored
      when the trace ends, even if it fails.
    - ``skipped_module_names`` and ``skipped_module_classes``: these modules
      become leaves (one ``call_module`` node each).
    - Always leaves: standard ``torch.nn`` modules (``torch.fx``'s default)
      and modules whose class sets ``is_fx_leaf = True`` (observers, fake
      quants, QAT modules).

    What is specific to a codebase comes from the adapters of the traced
    model (:func:`~mmrazor_quant.models.codebases.codebases_of`): the trace
    runs inside each adapter's ``tracer_rewrites()`` (mmdet's detectors
    loop over data samples in methods it rewrites), and each adapter's
    ``skipped_methods`` are skipped too.

    Without ``input_shape`` a model is traced symbolically. If that fails,
    it is traced again at the shape its codebase adapter derives (the test
    pipeline's crop or resize, the backbone's ``img_size``, the task's
    default size; see :meth:`BaseCodebase.input_shape`), so models that read
    their shapes trace from their config as written; the shape used and its
    source are logged. A given ``input_shape`` is always used.

    Nodes keep ``node.meta['nn_module_stack']``, the modules whose code
    produced them, outermost first.

    Examples:
        >>> tracer = CustomTracer(skipped_methods=[
        ...     'mmcls.models.heads.ClsHead._get_loss',
        ...     'mmcls.models.heads.ClsHead._get_predictions'])
        >>> gm = tracer.trace_mode(model, 'loss')
        >>> losses = gm(inputs, data_samples)  # == model(..., mode='loss')

    Args:
        skipped_methods (Sequence[str]): Dotted paths of methods, e.g.
            ``'mmcls.models.heads.ClsHead._get_loss'``. The longest
            importable module prefix is imported and the rest looked up as
            attributes. Defaults to ().
        skipped_module_names (Sequence[str]): Qualified names of submodules
            to keep as leaves, e.g. ``'backbone.layer1.0'``. Defaults to ().
        skipped_module_classes (Sequence[str | type]): Classes to keep as
            leaves (instances of subclasses too), given as classes, as
            dotted paths, or as bare class names matched against each
            module's MRO. Defaults to ().
        input_shape (Sequence[int], optional): Shape of one input sample
            without the batch dimension, e.g. ``(3, 64, 64)``, taken from
            the data or the config. When given, every node is evaluated on
            a random example batch of :data:`EXAMPLE_BATCH_SIZE` samples
            while tracing, so shape reads, asserts and shape arithmetic
            trace; decisions on shapes become run-time guards that raise
            :class:`ShapeGuardError`. Defaults to None (plain symbolic
            tracing, then the derived shape if that fails).
        test_pipeline (Sequence[dict], optional): The config's test
            pipeline, from which the codebase adapter reads the input size
            when the model needs one and ``input_shape`` is not given
            (``MMArchitectureQuant`` passes it on). Defaults to None.

    Raises:
        ValueError: If an entry of ``skipped_methods`` or a dotted entry of
            ``skipped_module_classes`` cannot be resolved, or
            ``input_shape`` is not a sequence of positive ints; the message
            names the entry.
        TypeError: If an entry of ``skipped_module_classes`` is neither a
            class nor a string.
    """

    def __init__(
        self,
        skipped_methods: Sequence[str] = (),
        skipped_module_names: Sequence[str] = (),
        skipped_module_classes: Sequence[Union[str, type]] = (),
        input_shape: Optional[Sequence[int]] = None,
        test_pipeline: Optional[Sequence[dict]] = None
    ) -> None:
        super().__init__()
        self.skipped_methods = list(skipped_methods)
        self.skipped_module_names = list(skipped_module_names)
        self.skipped_module_classes = list(skipped_module_classes)
        self._methods = [
            _resolve_method_entry(e) for e in self.skipped_methods
        ]
        self._leaf_names: FrozenSet[str] = frozenset(skipped_module_names)
        self._leaf_classes, leaf_class_names = _split_class_entries(
            self.skipped_module_classes)
        self._leaf_class_names = leaf_class_names | DEFAULT_LEAF_CLASS_NAMES
        self.input_shape = check_input_shape(input_shape)
        self.test_pipeline = test_pipeline
        # Example values of the nodes of the trace under way; None when
        # not tracking.
        self._values: Optional[Dict[Node, Any]] = None
        self._placeholders: Dict[str, Any] = {}
        self._root: Optional[nn.Module] = None
        # True while an example value is computed: skipped methods then run
        # for real instead of recording nodes.
        self._evaluating = False
        # Innermost module whose call raised, for messages.
        self._failed_module: Optional[nn.Module] = None

    # -- leaves -----------------------------------------------------------
    def is_leaf_module(self, m: nn.Module, module_qualified_name: str) -> bool:
        """Whether ``m`` becomes a single ``call_module`` node."""
        return (module_qualified_name in self._leaf_names
                or self._is_leaf_class(type(m))
                # mmcv's Linear/Conv wrappers: quantized as torch's layers
                or plain_layer_type(m) is not type(m)
                or getattr(type(m), 'is_fx_leaf', False) is True
                or super().is_leaf_module(m, module_qualified_name))

    def _is_leaf_class(self, cls: type) -> bool:
        if issubclass(cls, self._leaf_classes):
            return True
        return any(c.__name__ in self._leaf_class_names for c in cls.__mro__)

    def call_module(self, m: nn.Module, forward: Callable[..., Any],
                    args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Any:
        """Trace a module call, remembering the innermost one that fails."""
        try:
            return super().call_module(m, forward, args, kwargs)
        except Exception:
            if self._failed_module is None:
                self._failed_module = m
            raise

    # -- example values -----------------------------------------------------
    def proxy(self, node: Node) -> Proxy:
        """A :class:`ValueProxy` while example values are tracked."""
        if self._values is None:
            return super().proxy(node)
        return ValueProxy(node, self)

    def create_node(self, *args: Any, **kwargs: Any) -> Node:
        """Create a node and evaluate its example value."""
        node = super().create_node(*args, **kwargs)
        if self._values is not None and not self._evaluating:
            self._evaluating = True
            try:
                self._values[node] = evaluate_node(node, self._root,
                                                   self._values,
                                                   self._placeholders)
            finally:
                self._evaluating = False
        return node

    def example_value(self, node: Node) -> Any:
        """The example value of ``node`` (an ``Unknown`` if none)."""
        if self._values is None:
            return UNKNOWN
        return self._values.get(node, UNKNOWN)

    def concrete_answer(self, proxy: Proxy, convert: str, what: str) -> Any:
        """Answer ``convert(proxy)`` from the example and guard it.

        Only values computed from shapes are answered: a tensor value (data)
        cannot steer Python code in a graph, so it still fails the trace.
        """
        value = self.example_value(proxy.node)
        if isinstance(value, Unknown) or isinstance(value, torch.Tensor):
            why = ('its value depends on the data' if isinstance(
                value, torch.Tensor) else f'its value is {value!r}')
            raise FxTraceError(
                f'symbolically traced value {proxy.node.format_node()} '
                f'cannot be used as {what}: {why}')
        answer = CONVERSIONS[convert](value)
        site = decision_site(next(reversed(self.module_stack), None))
        self.create_proxy('call_function', check_shape_guard,
                          (proxy, convert, answer, site), {})
        return answer

    def _example_inputs(
            self, root: Union[nn.Module, Callable[..., Any]],
            concrete_args: Optional[Dict[str, Any]] = None,
            codebases: Sequence[BaseCodebase] = ()) -> Dict[str, Any]:
        forward = root.forward if isinstance(root, nn.Module) else root
        params = list(inspect.signature(forward).parameters.values())
        device = next((p.device for p in root.parameters()), None) \
            if isinstance(root, nn.Module) else None
        values: Dict[str, Any] = {}
        for i, param in enumerate(params):
            if i == 0:
                values[param.name] = torch.randn(
                    EXAMPLE_BATCH_SIZE, *self.input_shape, device=device)
            elif param.default is not inspect.Parameter.empty:
                values[param.name] = param.default
        mode = (concrete_args or {}).get('mode', 'tensor')
        if (mode != 'tensor' and codebases and params
                and values.get('data_samples', 0) is None):
            # the adapter's samples, where its graphs branch on shapes
            # computed from them (codebase ``example_data_samples``)
            samples = codebases[0].example_data_samples(
                root, values[params[0].name])
            if samples is not None:
                values['data_samples'] = samples
        return values

    @contextlib.contextmanager
    def _tracking_examples(
            self,
            root: Union[nn.Module, Callable[..., Any]],
            concrete_args: Optional[Dict[str, Any]] = None,
            codebases: Sequence[BaseCodebase] = ()) -> Iterator[None]:
        """Evaluate nodes on an example batch for the trace of ``root``."""
        if self.input_shape is None:
            yield
            return
        module = root if isinstance(root, nn.Module) else nn.Module()
        self._root = module
        self._values = {}
        with contextlib.ExitStack() as stack:
            # fork_rng inside: the example batch must not move the RNG.
            stack.enter_context(preserved_state(module))
            self._placeholders = self._example_inputs(root, concrete_args,
                                                      codebases)
            stack.enter_context(patched_factories(self))
            stack.enter_context(shadowed_builtins(self, module))
            try:
                yield
            finally:
                self._summarise_examples()
                self._values, self._root, self._placeholders = None, None, {}

    def _summarise_examples(self) -> None:
        """Keep what later passes need in ``node.meta``, drop the tensors."""
        for node, value in self._values.items():
            if isinstance(value, Unknown):
                node.meta['example_kind'] = 'unknown'
                node.meta['example_unknown_reason'] = value.reason
            elif isinstance(value, torch.Tensor):
                node.meta['example_kind'] = 'tensor'
                node.meta['example_shape'] = tuple(value.shape)
            else:
                node.meta['example_kind'] = 'other'

    # -- tracing ----------------------------------------------------------
    def trace(self,
              root: Union[nn.Module, Callable[..., Any]],
              concrete_args: Optional[Dict[str, Any]] = None) -> Graph:
        """Trace ``root`` with the skipped methods patched out.

        Args:
            root (nn.Module | Callable): The model (or function) to trace.
            concrete_args (dict, optional): Arguments to specialise, as in
                :meth:`torch.fx.Tracer.trace`. Defaults to None.

        Returns:
            Graph: The traced graph.

        Raises:
            ValueError: If a ``skipped_module_names`` entry is not a
                submodule of ``root``.
            TraceError: If tracing fails; it names the module and method and
                suggests the entry that would skip them.
        """
        name = getattr(root, '__name__', type(root).__name__)
        return self._trace(root, concrete_args, f'{name}.forward')

    def trace_mode(self,
                   model: nn.Module,
                   mode: str = 'tensor') -> GraphModule:
        """Trace ``model.forward(inputs, data_samples=None, mode=mode)``.

        ``mode`` is specialised away: the result is called as
        ``gm(inputs, data_samples=None)`` and returns what
        ``model(inputs, data_samples, mode=mode)`` returns. It is built over
        ``model`` and shares its submodules (the very same objects), so
        graph modules of several modes share parameters, buffers and any
        module later added to a shared submodule.

        Args:
            model (nn.Module): A model with an mmengine ``BaseModel``
                forward signature.
            mode (str): One of ``'tensor'``, ``'predict'``, ``'loss'``.
                Defaults to ``'tensor'``.

        Returns:
            GraphModule: The graph module of that mode.

        Raises:
            ValueError: If ``mode`` is unknown.
            TypeError: If ``model.forward`` takes no ``mode`` argument.
            TraceError: If tracing fails (see :meth:`trace`).
        """
        if mode not in FORWARD_MODES:
            raise ValueError(f'mode must be one of {FORWARD_MODES}, '
                             f'but got {mode!r}')
        if 'mode' not in inspect.signature(model.forward).parameters:
            raise TypeError(f'{type(model).__name__}.forward takes no `mode` '
                            'argument; trace it with `trace()` instead')
        what = f"{type(model).__name__}.forward(mode='{mode}')"
        graph = self._trace(model, {'mode': mode}, what)
        _drop_specialised_placeholder(graph, 'mode')
        gm = GraphModule(model, graph, class_name=type(model).__name__)
        _share_children(gm, model)
        return gm

    def _trace(self, root: Union[nn.Module, Callable[..., Any]],
               concrete_args: Optional[Dict[str, Any]], what: str) -> Graph:
        if isinstance(root, nn.Module):
            self._check_leaf_names(root)
        codebases = codebases_of(root) if isinstance(root, nn.Module) \
            else []
        try:
            return self._trace_once(root, concrete_args, what, codebases)
        except TraceError:
            if self.input_shape is not None or not codebases:
                raise
            shape, source = codebases[0].input_shape(root,
                                                     self.test_pipeline)
            if shape is None:
                raise
        print_log(
            f'CustomTracer: {what} does not trace symbolically; tracing it '
            f'at input_shape={shape}, from {source} (set input_shape to '
            'trace at another)', logger='current')
        self.input_shape = shape
        try:
            return self._trace_once(root, concrete_args, what, codebases)
        except TraceError as e:
            raise TraceError(
                f'{e}\n(traced at input_shape={shape}, from {source}; set '
                'input_shape if the data has another shape)') from e.__cause__
        finally:
            self.input_shape = None

    def _trace_once(self, root: Union[nn.Module, Callable[..., Any]],
                    concrete_args: Optional[Dict[str, Any]], what: str,
                    codebases: Sequence[BaseCodebase]) -> Graph:
        # fx sets these once per tracer; reset them so that the
        # ``nn_module_stack`` keys of one trace do not depend on earlier
        # (or failed) traces.
        self.module_stack = collections.OrderedDict()
        self.num_calls = {}
        self._failed_module = None
        try:
            with contextlib.ExitStack() as stack:
                for codebase in codebases:
                    stack.enter_context(codebase.tracer_rewrites())
                # Skips apply inside the rewrites, so a skip of a rewritten
                # method wins.
                stack.enter_context(self._skipping_methods(codebases))
                stack.enter_context(
                    self._tracking_examples(root, concrete_args, codebases))
                return super().trace(root, concrete_args)
        except TraceError:
            raise
        except Exception as e:
            site = None
            if isinstance(root, nn.Module):
                site = locate_failure(e, root, self._failed_module)
            message = format_failure(e, what, site)
            if self.input_shape is None:
                message += ('\nIf this code reads shapes (len, int(), '
                            'x.dim(), size arithmetic), pass the input '
                            'shape: CustomTracer(input_shape=(C, H, W)).')
            raise TraceError(message) from e
        finally:
            self._failed_module = None

    def _check_leaf_names(self, root: nn.Module) -> None:
        names = {n for n, _ in root.named_modules()}
        missing = [n for n in self.skipped_module_names if n not in names]
        if missing:
            raise ValueError(
                f'skipped_module_names {missing} are not submodules of '
                f'{type(root).__name__}')

    # -- skipped methods --------------------------------------------------
    @contextlib.contextmanager
    def _skipping_methods(
            self, codebases: Sequence[BaseCodebase] = ()) -> Iterator[None]:
        """Replace each skipped method (the config's, the codebase
        adapters' defaults, and each one registered with
        ``UntracedMethodRegistry``) on its class for the trace only."""
        defaults = [
            _resolve_method_entry(e) for c in codebases
            for e in c.skipped_methods
        ]
        saved: List[Tuple[type, str, Any]] = []
        try:
            for owner, name in dict.fromkeys(
                    self._methods + defaults +
                    list(UntracedMethodRegistry.registered())):
                original = owner.__dict__.get(name, _MISSING)
                saved.append((owner, name, original))
                setattr(owner, name,
                        self._opaque_method(owner, name, original))
            yield
        finally:
            # Reverse order restores correctly when an entry repeats.
            for owner, name, original in reversed(saved):
                if original is _MISSING:
                    delattr(owner, name)
                else:
                    setattr(owner, name, original)

    def _opaque_method(self, owner: type, name: str,
                       original: Any) -> Callable[..., Proxy]:
        tracer = self

        def opaque(module: nn.Module, *args: Any, **kwargs: Any) -> Proxy:
            if tracer._evaluating:
                # Computing an example value: run the real method.
                real = original if original is not _MISSING else getattr(
                    super(owner, module), name).__func__
                return real(module, *args, **kwargs)
            return tracer._call_opaque(module, name, args, kwargs)

        opaque.__name__ = name
        return opaque

    def _call_opaque(self, module: nn.Module, name: str, args: Tuple[Any, ...],
                     kwargs: Dict[str, Any]) -> Proxy:
        """Emit ``get_attr(module).name(*args, **kwargs)`` as graph nodes."""
        try:
            path = self.path_of_module(module)
        except NameError as e:
            raise TraceError(
                f'Cannot skip {type(module).__name__}.{name}: it was called '
                'on a module that is not part of the traced model') from e
        if path == '':
            raise TraceError(
                f'Cannot skip {type(module).__name__}.{name}: methods of the '
                'traced model itself cannot be skipped; skip a method of one '
                'of its submodules instead')
        with self._module_scope(path, module):
            owner = self.create_proxy('get_attr', path, (), {})
            return self.create_proxy('call_method', name, (owner, ) + args,
                                     kwargs)

    @contextlib.contextmanager
    def _module_scope(self, path: str, module: nn.Module) -> Iterator[None]:
        """Record ``module`` in ``nn_module_stack`` of the nodes made here.

        A skipped method is usually called from outside its module's
        ``forward`` (``head.loss`` calls ``self._get_loss``), so fx's own
        stack does not name the module yet.
        """
        if path in self.module_stack:
            yield
            return
        self.module_stack[path] = (path, type(module))
        try:
            yield
        finally:
            self.module_stack.pop(path)


def check_input_shape(
        input_shape: Optional[Sequence[int]]) -> Optional[Tuple[int, ...]]:
    """Validate ``input_shape`` (one sample, no batch dimension).

    Raises:
        ValueError: Unless it is None or a non-empty sequence of positive
            ints.
    """
    if input_shape is None:
        return None
    if (isinstance(input_shape, (str, bytes))
            or not isinstance(input_shape, Sequence) or not input_shape
            or not all(isinstance(d, int) and not isinstance(d, bool)
                       and d > 0 for d in input_shape)):
        raise ValueError('CustomTracer: input_shape must be a non-empty '
                         'sequence of positive ints without the batch '
                         f'dimension, e.g. (3, 64, 64), but got '
                         f'{input_shape!r}')
    return tuple(input_shape)


def _resolve_method_entry(entry: str) -> Tuple[type, str]:
    try:
        return resolve_method(entry)
    except ValueError as e:
        raise ValueError(f'CustomTracer: cannot use skipped_methods entry '
                         f'{entry!r}: {e}') from e


def _split_class_entries(
    entries: Sequence[Union[str, type]]
) -> Tuple[Tuple[type, ...], FrozenSet[str]]:
    """Split class entries into classes and bare class names."""
    classes: List[type] = []
    names: List[str] = []
    for entry in entries:
        if isinstance(entry, str) and '.' not in entry:
            names.append(entry)
            continue
        if isinstance(entry, str):
            try:
                cls = resolve_dotted_path(entry)
            except ValueError as e:
                raise ValueError('CustomTracer: cannot use '
                                 'skipped_module_classes entry '
                                 f'{entry!r}: {e}') from e
        else:
            cls = entry
        if not inspect.isclass(cls):
            raise TypeError('CustomTracer: skipped_module_classes entries '
                            'must be classes or class names, but '
                            f'{entry!r} is a {type(cls).__name__}')
        classes.append(cls)
    return tuple(classes), frozenset(names)


def _drop_specialised_placeholder(graph: Graph, name: str) -> None:
    """Remove the placeholder of concrete argument ``name`` and its guards.

    fx keeps a placeholder for a specialised argument, defaulting to the
    signature's default, plus an ``assert`` that it equals the traced value;
    with ``mode='loss'`` that default (``'tensor'``) would fail the assert.
    """
    pattern = re.compile(rf'{re.escape(name)}_\d+')
    for ph in [n for n in graph.nodes if n.op == 'placeholder']:
        if not pattern.fullmatch(str(ph.target)):
            continue
        guards = _transitive_users(ph)
        for node in reversed([n for n in graph.nodes if n in guards]):
            graph.erase_node(node)
        graph.erase_node(ph)
    graph.lint()


def _transitive_users(node: Node) -> set:
    seen: set = set()
    todo = list(node.users)
    while todo:
        user = todo.pop()
        if user not in seen:
            seen.add(user)
            todo.extend(user.users)
    return seen


def _share_children(gm: GraphModule, model: nn.Module) -> None:
    """Make ``gm``'s top-level submodules the very ones of ``model``.

    ``GraphModule`` shares leaf modules but recreates the containers on the
    way to them; sharing the containers too keeps one module tree, so a
    module added under ``gm.backbone`` is seen by every mode's graph.
    """
    for name, child in model.named_children():
        if hasattr(gm, name) and isinstance(getattr(gm, name), nn.Module):
            setattr(gm, name, child)
