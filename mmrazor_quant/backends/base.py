"""A backend plugin: what this project knows about one deploy target.

A deploy target (a runtime, a device) is a small family of registered
classes, bound together by one :class:`BaseBackend` subclass registered in
:data:`~mmrazor_quant.registry.BACKENDS`:

* its **quantizer** (``MODELS``): where the target quantizes (``rules``) and
  which schemes it executes (``scheme``, a ``BackendSpec``);
* its **exporter** (``EXPORTERS``): the file it loads;
* its **runtime** (``RUNTIMES``): what runs that file for the parity check.

.. code-block:: python

    @BACKENDS.register_module()
    class ToyNPUBackend(BaseBackend):
        name = 'toy_npu'                 # deploy_cfg.backend_config.type
        quantizer = 'ToyNPUQuantizer'    # its backend attribute is 'toy_npu'
        exporter = 'ToyNPUExporter'
        runtime = 'onnxruntime'

Everything that lists backends (``deploy_cfg`` validation, ``tools/ptq.py
--export``, ``tools/export.py --backend``, the parity check, the model
check) asks this registry, so a backend defined in a user's own file and
loaded through ``custom_imports`` works with every tool. The declarations
are names, not classes, so that looking a backend up imports neither the
quantizers nor the exporters (and no ONNX).
"""
from typing import ClassVar, Dict, List, Mapping, Optional

from mmrazor_quant.registry import BACKENDS

__all__ = ['BaseBackend', 'get_backend', 'backend_names', 'all_backends']


class BaseBackend:
    """One deploy target: its name, quantizer, exporter and runtime.

    Subclasses declare class attributes, checked when the class is defined
    (a missing ``name`` is a ``TypeError`` at the ``class`` statement):

    Attributes:
        name (str): ``deploy_cfg.backend_config.type`` and the value of the
            tools' ``--backend``; the quantizer's ``backend`` attribute
            names it too.
        quantizer (str, optional): Registered name of the quantizer whose
            placement and schemes the target executes. None for a target
            that runs any standard QDQ model (onnxruntime).
        exporter (str, optional): Registered name of its exporter. None for
            a target that is only simulated (torch's native engine, the
            academic setting): it cannot be a ``deploy_cfg`` target.
        runtime (str, optional): Registered name of the runtime that runs
            the exported file for the parity check. None: exports are not
            checked.
        runtime_options (Mapping): Options of that runtime (e.g. TensorRT's
            float arithmetic in onnxruntime: ``qdq_fusion=False``).
        w8a8 (Mapping, optional): MMRazor's W8A8 ``w_qscheme`` and
            ``a_qscheme`` on this target, used by model checks and
            benchmarks. Defaults to None.
        placement_of (str, optional): For a target without a quantizer, the
            backend whose quantizer (and ``w8a8``) prepares a model for it
            where one is not given (``apis.front_door``'s defaults).
            Defaults to None.
        asymmetric_activations (bool): Whether the target runs activations
            on an asymmetric grid as its kernels run symmetric ones; the
            defaults for models trained elsewhere then use asymmetric
            activations (inputs after a scalar affine are rarely centred
            on zero). Defaults to False.
        asymmetric_quantizer_options (Mapping): Quantizer arguments those
            defaults add with the asymmetric activations (OpenVINO: the
            inputs of depthwise convs stay symmetric, which its kernels
            run faster). Defaults to none.
    """
    name: ClassVar[Optional[str]] = None
    quantizer: ClassVar[Optional[str]] = None
    exporter: ClassVar[Optional[str]] = None
    runtime: ClassVar[Optional[str]] = None
    runtime_options: ClassVar[Mapping] = {}
    w8a8: ClassVar[Optional[Mapping]] = None
    placement_of: ClassVar[Optional[str]] = None
    asymmetric_activations: ClassVar[bool] = False
    asymmetric_quantizer_options: ClassVar[Mapping] = {}

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if not isinstance(cls.name, str) or not cls.name.strip():
            raise TypeError(
                f"{cls.__name__} must declare name = '<backend>' (the "
                'deploy_cfg.backend_config.type value), got '
                f'{cls.name!r}')
        for attr in ('quantizer', 'exporter', 'runtime'):
            value = getattr(cls, attr)
            if value is not None and not isinstance(value, str):
                raise TypeError(
                    f'{cls.__name__}.{attr} must be a registered name '
                    f'(str) or None, got {value!r}')

    @property
    def deployable(self) -> bool:
        """Whether the target has a file format (an exporter)."""
        return self.exporter is not None

    # -- hooks ------------------------------------------------------------
    def parse_backend_config(self, backend_cfg: Mapping) -> Dict:
        """Settings this target reads from ``deploy_cfg.backend_config``
        beyond ``type`` and ``model_inputs`` (e.g. TensorRT's implicit
        int8 mode), as :class:`ExportSettings` fields. Defaults to none."""
        return {}

    def accepts_quantizer(self, quantizer) -> bool:
        """Whether a model prepared by ``quantizer`` may be deployed here.

        A quantizer made for another deployable target (OpenVINO's
        placement deployed to TensorRT) is refused; one made for no
        target in particular (native, academic) is accepted by every
        target.
        """
        own = getattr(quantizer, 'backend', None)
        if own == self.name:
            return True
        other = _find(own)
        return other is None or not other.deployable

    def scheme(self):
        """The ``BackendSpec`` of this target's quantizer: the schemes it
        executes, checked against a model's fake quants before any export
        is written. None for a target without a quantizer (onnxruntime
        runs any standard QDQ model)."""
        if self.quantizer is None:
            return None
        from mmengine.registry import DefaultScope

        from mmrazor_quant.registry import MODELS
        MODELS.import_from_location()
        with DefaultScope.overwrite_default_scope('mmrazor_quant'):
            quantizer = MODELS.get(self.quantizer)
        if quantizer is None:
            raise ValueError(f'backend {self.name!r}: its quantizer '
                             f'{self.quantizer!r} is not registered in '
                             'MODELS')
        return getattr(quantizer, 'scheme', None)

    def __repr__(self) -> str:
        return (f'{type(self).__name__}(name={self.name!r}, quantizer='
                f'{self.quantizer!r}, exporter={self.exporter!r}, runtime='
                f'{self.runtime!r})')


def all_backends() -> Dict[str, BaseBackend]:
    """Every registered backend by name (built-ins and those of imported
    user modules).

    Raises:
        ValueError: If two registered classes declare the same name.
    """
    BACKENDS.import_from_location()
    found: Dict[str, BaseBackend] = {}
    owners: Dict[str, str] = {}
    for key, cls in BACKENDS.module_dict.items():
        if cls.name in found:
            raise ValueError(
                f'backends {owners[cls.name]} and {key} both declare name '
                f'{cls.name!r}; rename one of them')
        found[cls.name] = cls()
        owners[cls.name] = key
    return found


def backend_names(deployable: bool = False) -> List[str]:
    """Registered backend names, sorted; only those with an exporter when
    ``deployable``."""
    return sorted(name for name, backend in all_backends().items()
                  if backend.deployable or not deployable)


def _find(name: Optional[str]) -> Optional[BaseBackend]:
    return all_backends().get(name) if name else None


def get_backend(name: str, key: str = 'backend',
                deployable: bool = False) -> BaseBackend:
    """The registered backend called ``name``.

    Args:
        name (str): The backend's name (e.g. ``'openvino'``).
        key (str): The config key or option that gave ``name``, for the
            message. Defaults to ``'backend'``.
        deployable (bool): Require an exporter. Defaults to False.

    Raises:
        ValueError: If no backend has that name (or, with ``deployable``,
            it has no exporter); the message lists the registered ones and
            says how to add one.
    """
    backend = _find(name) if isinstance(name, str) else None
    if backend is not None and (backend.deployable or not deployable):
        return backend
    choices = backend_names(deployable)
    if backend is not None:
        raise ValueError(
            f'{key}={name!r} has no exporter (it is only simulated); '
            f'deploy targets: {choices}')
    raise ValueError(
        f'{key}={name!r} is not a registered backend; expected one of '
        f'{choices}. A backend of your own is registered in BACKENDS and '
        'imported through custom_imports (see docs/add_backend.md)')
