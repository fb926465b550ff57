"""Runtimes: what runs an exported file, and the arithmetic it runs it with.

A runtime is a :class:`BaseRuntime` subclass registered in
:data:`~mmrazor_quant.registry.RUNTIMES`. It loads a file
(:meth:`BaseRuntime.load`) and declares how its kernels compute where they
depart from the training graph's float32, so that the parity check compares
it with a simulation that computes the same way
(:meth:`BaseRuntime.simulation`):

* :attr:`~BaseRuntime.quantizes_by`: ``'division'`` for a
  ``QuantizeLinear`` computing ``round(x / s)`` as the ONNX spec writes it
  (onnxruntime, TensorRT), ``'multiplication'`` for the training kernels'
  ``round(x * (1 / s))``. The two differ only at exact ties;
* :attr:`~BaseRuntime.accumulates_exactly`: every quantized conv and linear
  is an int8 kernel summing its products in an int32 accumulator (OpenVINO),
  where the deploy model's float32 conv rounds each partial sum;
* :meth:`~BaseRuntime.runs_int8_kernels`: whether, with these options, it
  runs u8 x s8 kernels that pair products in int16 on a CPU without VNNI
  (the parity report then says whether this CPU saturates them);
* :attr:`~BaseRuntime.zero_point_in_float32`: its ``FakeQuantize`` adds
  the zero-point before rounding, in float32 (OpenVINO). Not simulated: a
  zero-point near 128 loses ties there, which the OpenVINO configs avoid
  with asymmetric activation grids;
* :attr:`~BaseRuntime.runs_any_qdq_onnx`: it loads any standard QDQ
  ``.onnx``, not only its own backend's export (onnxruntime, OpenVINO), so
  every export that is one can be compared in it too
  (:func:`parity_runtimes`).

Nothing outside a runtime's own class matches its name: the parity
pipeline, the per-tensor diagnosis and the tools ask the registry.

.. code-block:: python

    @RUNTIMES.register_module()
    class ReferenceRuntime(BaseRuntime):
        name = 'onnx_reference'      # what a backend's ``runtime`` names
        quantizes_by = 'division'

        def load(self, path, **options):
            ...                      # returns run(x) -> list of arrays
"""
from contextlib import ExitStack, contextmanager
from typing import Callable, ClassVar, Dict, Iterator, List, Sequence, Union

import numpy as np
from torch import nn

from mmrazor_quant.registry import RUNTIMES

__all__ = [
    'BaseRuntime', 'Runner', 'get_runtime', 'all_runtimes', 'load_runtime',
    'runtime_names', 'parity_runtimes'
]

#: Runs one batch: an array for the model's first input, or a list of
#: arrays for its inputs in order; returns every output, in graph order.
Runner = Callable[[Union[np.ndarray, Sequence[np.ndarray]]],
                  List[np.ndarray]]

_QUANTIZES_BY = ('multiplication', 'division')


class BaseRuntime:
    """A runtime plugin: a loader and the arithmetic of its kernels.

    Subclasses declare class attributes, checked at the ``class`` statement,
    and implement :meth:`load`.

    Attributes:
        name (str): What a backend's ``runtime`` attribute and the tools'
            ``--runtime`` name.
        quantizes_by (str): ``'multiplication'`` (``round(x * (1 / s))``,
            the training kernels) or ``'division'`` (``round(x / s)``, ONNX's
            ``QuantizeLinear``). Defaults to ``'multiplication'``.
        accumulates_exactly (bool): Every quantized conv and linear sums its
            integer products exactly (an int32 accumulator) and rounds once
            when rescaling. Defaults to False.
        zero_point_in_float32 (bool): Its quantizer rounds
            ``x / s + z`` in float32 (declared; not simulated). Defaults to
            False.
        runs_any_qdq_onnx (bool): It loads any standard QDQ ``.onnx`` file
            (not only its own backend's export). Defaults to False.
    """
    name: ClassVar[str] = None
    quantizes_by: ClassVar[str] = 'multiplication'
    accumulates_exactly: ClassVar[bool] = False
    zero_point_in_float32: ClassVar[bool] = False
    runs_any_qdq_onnx: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if not isinstance(cls.name, str) or not cls.name.strip():
            raise TypeError(f"{cls.__name__} must declare name = "
                            f"'<runtime>', got {cls.name!r}")
        if cls.quantizes_by not in _QUANTIZES_BY:
            raise TypeError(f'{cls.__name__}.quantizes_by must be one of '
                            f'{_QUANTIZES_BY}, got {cls.quantizes_by!r}')

    def load(self, path: str, **options) -> Runner:
        """A function running ``path`` on a batch, returning the list of
        all its outputs."""
        raise NotImplementedError

    def runs_int8_kernels(self, **options) -> bool:
        """Whether, with ``options``, the runtime executes quantized ops in
        u8 x s8 kernels that add pairs of products in int16 where the CPU
        has no VNNI. Defaults to False."""
        return False

    def int8_saturates(self, **options) -> bool:
        """Whether its int8 kernels saturate u8 x s8 products on this CPU
        (see :func:`~mmrazor_quant.deploy.int8_pairs_saturate`)."""
        if not self.runs_int8_kernels(**options):
            return False
        from .int8_saturation import int8_pairs_saturate
        return int8_pairs_saturate()

    @contextmanager
    def simulation(self, model: nn.Module, **options) -> Iterator[nn.Module]:
        """Within the block, the module yielded (``model`` itself, unless a
        runtime's arithmetic needs layers of its own) computes as this
        runtime's kernels do (see the class attributes).

        Args:
            model (nn.Module): A deploy model.
            **options: The runtime's options (as given to :meth:`load`).

        Yields:
            nn.Module: The simulation: ``model``, or a runtime's copy of it
            computing with its own layers (ncnn's int8 layers).
        """
        from .qdq_fake_quantize import quantize_by_division
        from .runtime_arithmetic import exact_accumulation
        with ExitStack() as stack:
            if self.accumulates_exactly:
                stack.enter_context(exact_accumulation(model))
            stack.enter_context(quantize_by_division(
                model, self.quantizes_by == 'division'))
            yield model

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(name={self.name!r}, quantizes_by='
                f'{self.quantizes_by!r}, accumulates_exactly='
                f'{self.accumulates_exactly})')


def all_runtimes() -> Dict[str, BaseRuntime]:
    """Every registered runtime by name (built-ins and those of imported
    user modules).

    Raises:
        TypeError: If something registered is not a :class:`BaseRuntime`.
        ValueError: If two registered classes declare the same name.
    """
    RUNTIMES.import_from_location()
    found: Dict[str, BaseRuntime] = {}
    owners: Dict[str, str] = {}
    for key, cls in RUNTIMES.module_dict.items():
        if not (isinstance(cls, type) and issubclass(cls, BaseRuntime)):
            raise TypeError(f'RUNTIMES[{key!r}] is {cls!r}: register a '
                            'BaseRuntime subclass (mmrazor_quant.deploy.'
                            'runtimes) declaring its name and arithmetic')
        if cls.name in found:
            raise ValueError(f'runtimes {owners[cls.name]} and {key} both '
                             f'declare name {cls.name!r}; rename one')
        found[cls.name] = cls()
        owners[cls.name] = key
    return found


def runtime_names() -> List[str]:
    """The registered runtimes, sorted."""
    return sorted(all_runtimes())


def get_runtime(runtime: Union[str, BaseRuntime]) -> BaseRuntime:
    """The registered runtime called ``runtime`` (a runtime is returned as
    it is).

    Raises:
        ValueError: If ``runtime`` is unknown (lists the registered ones).
    """
    if isinstance(runtime, BaseRuntime):
        return runtime
    found = all_runtimes().get(runtime) if isinstance(runtime, str) else None
    if found is None:
        raise ValueError(f'runtime must be one of {runtime_names()}, got '
                         f'{runtime!r}; a runtime of your own is a '
                         'BaseRuntime registered in RUNTIMES '
                         '(docs/add_backend.md)')
    return found


def parity_runtimes(backend) -> List[str]:
    """The runtimes an export for ``backend`` is compared in: the
    backend's own runtime first, then, where that runtime reads standard
    QDQ ONNX (its export is one), every other registered runtime that does
    (:attr:`BaseRuntime.runs_any_qdq_onnx`).

    Args:
        backend (BaseBackend): A registered backend (see
            :func:`~mmrazor_quant.backends.get_backend`).

    Returns:
        list[str]: Runtime names; empty if the backend names none.
    """
    runtimes = all_runtimes()
    own = backend.runtime
    if own is None:
        return []
    names = [own]
    if get_runtime(own).runs_any_qdq_onnx:
        names += [name for name, runtime in runtimes.items()
                  if runtime.runs_any_qdq_onnx and name != own]
    return names


def load_runtime(runtime: Union[str, BaseRuntime], path: str,
                 all_outputs: bool = False, **options) -> Callable:
    """Load ``path`` in the registered ``runtime``.

    Args:
        runtime (str | BaseRuntime): A registered runtime.
        path (str): The exported file.
        all_outputs (bool): The function returns the list of all outputs;
            False returns the first. Defaults to False.
        **options: The runtime's options.

    Raises:
        ValueError: If ``runtime`` is unknown.
    """
    run = get_runtime(runtime).load(path, **options)
    if all_outputs:
        return run
    return lambda x: run(x)[0]
