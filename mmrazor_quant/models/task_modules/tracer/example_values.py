"""Example values carried through a trace.

Every node the tracer creates is evaluated on a small random example batch,
so Python code that reads shapes (``len``, ``int``, ``x.dim()``, iteration,
comparisons in ``if``/``assert``) gets real answers. Answers that steer
control flow are recorded as shape guards (see :mod:`.shape_guards`);
arithmetic on sizes stays symbolic in the graph.
"""
import builtins
import contextlib
import math
import operator
import sys
from typing import Any, Callable, Dict, Iterator, List, Tuple

import torch
from torch import nn
from torch.fx import Node, Proxy
from torch.fx import _symbolic_trace as _fx_trace
from torch.fx.node import map_aggregate
from torch.fx.proxy import Attribute

__all__ = [
    'EXAMPLE_BATCH_SIZE', 'UNKNOWN', 'Unknown', 'ValueProxy', 'evaluate_node',
    'patched_factories', 'shadowed_builtins', 'preserved_state'
]

#: Batch size of the example batch; distinct from 1 so that constants
#: that depend on the batch size are caught by guards rather than hidden.
EXAMPLE_BATCH_SIZE = 2

#: Attributes answered with the example's Python value, not traced: they
#: describe how the tensor is held, not what the graph computes.
VOLATILE_ATTRIBUTES = frozenset({'requires_grad', 'dtype', 'device',
                                 'is_cuda', 'layout'})

#: Tensor factories whose size arguments may be traced values.
FACTORY_NAMES = ('zeros', 'ones', 'empty', 'full', 'rand', 'randn',
                 'randint', 'arange', 'eye', 'linspace')


class Unknown:
    """The example value of a node that could not be evaluated.

    Args:
        reason (str): Why, e.g. the exception of the evaluation.
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f'UNKNOWN({self.reason})'


#: A node with no example value because none was requested.
UNKNOWN = Unknown('no example value')


def _is_unknown(value: Any) -> bool:
    return isinstance(value, Unknown)


def evaluate_node(node: Node, root: nn.Module, values: Dict[Node, Any],
                  placeholders: Dict[str, Any]) -> Any:
    """Compute the example value of ``node`` from those of its inputs.

    Args:
        node (Node): A node just created by the tracer.
        root (nn.Module): The traced model.
        values (dict): Example values of the earlier nodes.
        placeholders (dict): Example values of the inputs, by name.

    Returns:
        Any: The value, or an :class:`Unknown` saying why there is none.
    """
    if node.op == 'placeholder':
        return placeholders.get(str(node.target),
                                Unknown(f'input {node.target!r} has no '
                                        'example value'))
    if node.op == 'output':
        return UNKNOWN
    unknown: List[Unknown] = []

    def lookup(a: Any) -> Any:
        if isinstance(a, Node):
            value = values.get(a, UNKNOWN)
            if _is_unknown(value):
                unknown.append(value)
            return value
        return a

    args = map_aggregate(node.args, lookup)
    kwargs = map_aggregate(node.kwargs, lookup)
    if unknown:
        return Unknown(f'input {unknown[0].reason}')
    try:
        with torch.no_grad(), _untraced_module_calls(_may_call_modules(node)):
            return _run(node, root, args, kwargs)
    except Exception as e:  # noqa: BLE001 - recorded, raised on use
        return Unknown(f'{node.format_node()} failed: '
                       f'{type(e).__name__}: {e}')


def _may_call_modules(node: Node) -> bool:
    """Whether running ``node`` can call an ``nn.Module`` or read its
    attributes: a leaf module, a ``get_attr`` or a Python function (a
    skipped method); not a tensor method, a torch op or an
    ``operator``/builtin function."""
    if node.op in ('call_module', 'get_attr'):
        return True  # fx's patched __getattr__ would proxy parameters
    if node.op != 'call_function':
        return False
    module = getattr(node.target, '__module__', None) or ''
    return not (module in ('operator', '_operator', 'builtins', 'math')
                or module.split('.')[0] == 'torch')


@contextlib.contextmanager
def _untraced_module_calls(needed: bool = True) -> Iterator[None]:
    """Undo fx's patch of ``nn.Module.__call__``/``__getattr__`` so that a
    leaf evaluated on example values runs, not traces, its submodules.

    Setting an attribute of ``nn.Module`` invalidates the type caches of
    all its subclasses (slow with mmcls and mmdet imported): skipped when
    ``needed`` is False or fx has not patched the class."""
    if not needed or nn.Module.__call__ is _fx_trace._orig_module_call:
        yield
        return
    patched = nn.Module.__call__, nn.Module.__getattr__
    nn.Module.__call__ = _fx_trace._orig_module_call
    nn.Module.__getattr__ = _fx_trace._orig_module_getattr
    try:
        yield
    finally:
        nn.Module.__call__, nn.Module.__getattr__ = patched


def _run(node: Node, root: nn.Module, args: Tuple, kwargs: Dict) -> Any:
    if node.op == 'get_attr':
        obj: Any = root
        for attr in str(node.target).split('.'):
            obj = getattr(obj, attr)
        return obj
    if node.op == 'call_module':
        return root.get_submodule(str(node.target))(*args, **kwargs)
    if node.op == 'call_method':
        return getattr(args[0], str(node.target))(*args[1:], **kwargs)
    return node.target(*args, **kwargs)


class ValueProxy(Proxy):
    """A ``torch.fx`` proxy that knows its node's example value.

    Python asks concrete questions of it: ``len()``, ``int()``,
    ``operator.index``, ``float()``, ``bool()`` and iteration get the
    example's answer, recorded as a shape guard by the tracer;
    ``round``/``math.floor``/``math.ceil``/``math.trunc``, item assignment
    and attribute reads stay in the graph. ``requires_grad``, ``dtype`` and
    ``device`` are answered with the example's values.
    """

    @property
    def example(self) -> Any:
        """The example value of this proxy's node."""
        return self.tracer.example_value(self.node)

    def __getattr__(self, attr: str) -> Any:
        value = self.example
        if _is_unknown(value) or attr.startswith('__'):
            return Attribute(self, attr)
        if attr in VOLATILE_ATTRIBUTES and isinstance(value, torch.Tensor):
            return getattr(value, attr)
        try:
            attr_value = getattr(value, attr)
        except AttributeError:
            return Attribute(self, attr)
        if callable(attr_value):
            return Attribute(self, attr)
        # ``x.shape``/``x.ndim``: an eager node, so its value is known.
        return self.tracer.create_proxy('call_function', getattr,
                                        (self, attr), {})

    def _concrete(self, convert: str, what: str) -> Any:
        return self.tracer.concrete_answer(self, convert, what)

    def __len__(self) -> int:
        length = self.tracer.create_proxy('call_function', builtins.len,
                                          (self, ), {})
        return length._concrete('int', 'len()')

    def __index__(self) -> int:
        return self._concrete('index', 'an index')

    def __int__(self) -> int:
        return self._concrete('int', 'int()')

    def __float__(self) -> float:
        return self._concrete('float', 'float()')

    def __bool__(self) -> bool:
        return self._concrete('bool', 'a condition')

    def __iter__(self) -> Iterator[Proxy]:
        value = self.example
        if _is_unknown(value) or isinstance(value, torch.Tensor):
            return super().__iter__()
        return iter([self[i] for i in range(len(self))])

    def __setitem__(self, key: Any, item: Any) -> None:
        self.tracer.create_proxy('call_function', operator.setitem,
                                 (self, key, item), {})

    def __round__(self, ndigits: Any = None) -> Proxy:
        args = (self, ) if ndigits is None else (self, ndigits)
        return self.tracer.create_proxy('call_function', builtins.round,
                                        args, {})

    def __floor__(self) -> Proxy:
        return self.tracer.create_proxy('call_function', math.floor, (self, ),
                                        {})

    def __ceil__(self) -> Proxy:
        return self.tracer.create_proxy('call_function', math.ceil, (self, ),
                                        {})

    def __trunc__(self) -> Proxy:
        return self.tracer.create_proxy('call_function', math.trunc, (self, ),
                                        {})


def _has_proxy(args: Any, kwargs: Any) -> bool:
    found = []
    map_aggregate((args, kwargs),
                  lambda a: found.append(a) if isinstance(a, Proxy) else a)
    return bool(found)


@contextlib.contextmanager
def patched_factories(tracer: Any) -> Iterator[None]:
    """Make ``torch.zeros(B, C)`` and friends graph nodes when sized by
    traced values (they otherwise call ``__index__`` and bake a number)."""
    originals = {name: getattr(torch, name) for name in FACTORY_NAMES}

    def make(original: Callable) -> Callable:

        def factory(*args: Any, **kwargs: Any) -> Any:
            if _has_proxy(args, kwargs):
                return tracer.create_proxy('call_function', original, args,
                                           kwargs)
            return original(*args, **kwargs)

        return factory

    try:
        for name, original in originals.items():
            setattr(torch, name, make(original))
        yield
    finally:
        for name, original in originals.items():
            setattr(torch, name, original)


def _traced_builtin(builtin: type, tracer: Any) -> type:
    """A stand-in for ``int``/``float`` that traces calls on proxies.

    It is a class whose metaclass delegates ``isinstance``/``issubclass``
    to the builtin, so ``isinstance(3, int)`` still holds in shadowed
    modules.
    """

    class _Meta(type):

        def __call__(cls, *args: Any, **kwargs: Any) -> Any:
            if args and isinstance(args[0], Proxy):
                return tracer.create_proxy('call_function', builtin, args,
                                           kwargs)
            return builtin(*args, **kwargs)

        def __instancecheck__(cls, obj: Any) -> bool:
            return isinstance(obj, builtin)

        def __subclasscheck__(cls, sub: type) -> bool:
            return issubclass(sub, builtin)

    return _Meta(builtin.__name__, (), {})


@contextlib.contextmanager
def shadowed_builtins(tracer: Any, root: nn.Module) -> Iterator[None]:
    """Shadow ``int``/``float`` in the Python modules defining ``root``'s
    classes, so ``int(x.shape[2] / s)`` stays a graph node."""
    namespaces = {}
    for module in root.modules():
        for cls in type(module).__mro__:
            py_module = sys.modules.get(cls.__module__)
            name = getattr(py_module, '__name__', '')
            if py_module is None or name.startswith(('torch', 'builtins')):
                continue
            namespaces[name] = vars(py_module)
    saved: List[Tuple[dict, str, Any]] = []
    try:
        for namespace in namespaces.values():
            for builtin in (builtins.int, builtins.float):
                key = builtin.__name__
                saved.append((namespace, key, namespace.get(key, UNKNOWN)))
                namespace[key] = _traced_builtin(builtin, tracer)
        yield
    finally:
        for namespace, key, original in reversed(saved):
            if original is UNKNOWN:
                namespace.pop(key, None)
            else:
                namespace[key] = original


@contextlib.contextmanager
def preserved_state(root: nn.Module) -> Iterator[None]:
    """Restore ``root``'s buffers and the RNG state after evaluating
    examples (BN running statistics must not move during a trace)."""
    buffers = {name: b.detach().clone() for name, b in root.named_buffers()}
    devices = sorted({b.device.index for b in root.parameters()
                      if b.device.type == 'cuda'} - {None})
    with torch.random.fork_rng(devices=devices):
        try:
            yield
        finally:
            with torch.no_grad():
                for name, b in root.named_buffers():
                    if name in buffers:
                        b.copy_(buffers[name])
