"""MMArchitectureQuant: an mmengine model whose forward modes are quantized."""
import copy
from typing import Dict, List, Optional, Sequence, Union

import torch
from mmengine.model import BaseModel, BaseModule, MMDistributedDataParallel
from mmengine.structures import BaseDataElement
from torch import fx, nn

from mmrazor_quant.backends import get_backend
from mmrazor_quant.registry import (
    CODEBASES,
    MODEL_WRAPPERS,
    MODELS,
    build_in_scope,
)
from mmrazor_quant.structures import DeployConfig
from ..codebases import codebases_of
from ..quantizers.base import BaseQuantizer, build_graph_module
from ..task_modules.tracer.custom_tracer import check_input_shape
from .mmrazor_api import MMArchitectureQuantAPIMixin, note_input_shapes
from .quant_state_format import QUANT_STATE_FORMAT, migrate_quant_state

__all__ = ['MMArchitectureQuant', 'MMArchitectureQuantDDP']

ForwardResults = Union[Dict[str, torch.Tensor], List[BaseDataElement],
                       torch.Tensor]
_MODES = ('tensor', 'predict', 'loss')


@MODELS.register_module()
class MMArchitectureQuant(MMArchitectureQuantAPIMixin, BaseModel):
    """Wrap a float mmengine model and quantize its forward modes.

    Building it loads ``float_checkpoint`` into the architecture, then the
    quantizer traces ``forward_modes`` symbolically (a model that reads its
    shapes at the ``input_shape`` given, or else at the one its codebase
    adapter derives from the config), fuses Conv+BN into QAT modules and
    inserts fake quants. This happens in the constructor, not in a later
    hook, because mmengine's Runner wraps the model in DDP, builds the
    optimizer and loads checkpoints right after building it: the fake
    quants' parameters and buffers must exist by then. Nothing runs on data
    here; calibration is :meth:`calibrate_step`, driven by the loops.

    The graphs of all modes call the very same modules, so qparams never
    need copying between them. Only ``architecture`` is a registered child:
    the state dict holds each tensor once.

    Args:
        architecture (dict | BaseModel): The float model or its config
            (e.g. an mmcls ``ImageClassifier``).
        quantizer (dict | BaseQuantizer): The backend quantizer or config.
        data_preprocessor (dict | nn.Module, optional): Defaults to the
            architecture's own ``data_preprocessor``.
        forward_modes (Sequence[str]): Modes to trace. Defaults to
            ``('tensor', 'predict', 'loss')``.
        float_checkpoint (str, optional): Float weights to load before
            quantizing. Defaults to None.
        deploy_cfg (dict, optional): mmdeploy's deployment description, as
            MMRazor's configs pass it (``deploy_cfg=_base_.deploy_cfg``):
            validated here, kept as :attr:`deploy_cfg` (a
            :class:`~mmrazor_quant.deploy.DeployConfig`) and read by
            ``tools/export.py``. Defaults to None.
        input_shape (Sequence[int], optional): Shape of one input sample
            without the batch dimension (e.g. ``(3, 64, 64)``), taken from
            the data or config; the tracer then evaluates an example batch
            so models that read shapes trace (see ``CustomTracer``).
            Defaults to None: models that read shapes are traced at the
            shape the architecture's codebase adapter derives from
            ``test_pipeline``, the backbone's ``img_size`` or the task's
            default size (see ``BaseCodebase.input_shape``).
        test_pipeline (Sequence[dict], optional): The config's test
            pipeline (``test_dataloader.dataset.pipeline``), whose crop or
            resize gives the input size when ``input_shape`` is not given.
            The tools fill it in from the config (``add_test_pipeline``), as
            the model config alone does not hold the data. Defaults to
            None.
        init_cfg (dict, optional): Defaults to None.
        input_shapes (Sequence[int], optional): MMRazor's shape of a dummy
            forward at build time; not used (one log line says so).
            Defaults to None.

    MMRazor's ``sync_qparams(src_mode)`` is a logged no-op here (see
    :class:`.mmrazor_api.MMArchitectureQuantAPIMixin`).

    Raises:
        ValueError: If a forward mode is unknown, or ``deploy_cfg`` is
            invalid or names another backend than the quantizer's.

    Example:
        >>> model = MODELS.build(dict(
        ...     type='mmrazor_quant.MMArchitectureQuant',
        ...     architecture=cfg.model,
        ...     quantizer=dict(type='mmrazor_quant.OpenVINOQuantizer',
        ...                    global_qconfig=global_qconfig)))
        >>> model.calibrate_step(data_batch)   # observers record ranges
        >>> logits = model(inputs, mode='tensor')
    """

    def __init__(self,
                 architecture: Union[dict, BaseModel],
                 quantizer: Union[dict, BaseQuantizer],
                 data_preprocessor: Optional[Union[dict, nn.Module]] = None,
                 forward_modes: Sequence[str] = _MODES,
                 float_checkpoint: Optional[str] = None,
                 deploy_cfg: Optional[dict] = None,
                 input_shape: Optional[Sequence[int]] = None,
                 test_pipeline: Optional[Sequence[dict]] = None,
                 init_cfg: Optional[dict] = None,
                 input_shapes: Optional[Sequence[int]] = None) -> None:
        note_input_shapes(input_shapes)
        unknown = [m for m in forward_modes if m not in _MODES]
        if unknown or not forward_modes:
            raise ValueError(f'forward_modes must be a non-empty subset of '
                             f'{_MODES}, got {tuple(forward_modes)}')
        # Validated first: a wrong backend fails before any tracing.
        parsed_deploy_cfg = DeployConfig.from_dict(deploy_cfg) \
            if deploy_cfg is not None else None
        if isinstance(architecture, dict):
            architecture = _build_architecture(architecture)
        for adapter in codebases_of(architecture):
            adapter.check_architecture(architecture)
        if data_preprocessor is None:
            data_preprocessor = getattr(architecture, 'data_preprocessor',
                                        None)
        super().__init__(
            data_preprocessor=data_preprocessor, init_cfg=init_cfg)
        self.architecture = architecture
        _check_preprocessor_fits(self.data_preprocessor, architecture)
        if float_checkpoint:
            from mmrazor_quant.utils.checkpoint import (
                register_checkpoint_safe_globals,
            )
            register_checkpoint_safe_globals()
            _load_float_checkpoint(self.architecture, float_checkpoint)
            # Runner.train() calls init_weights(); it must not overwrite the
            # float weights just loaded.
            _mark_initialized(self.architecture)
        self.forward_modes = tuple(forward_modes)
        self.quantizer = build_in_scope(MODELS, quantizer) if isinstance(
            quantizer, dict) else quantizer
        _check_deploy_backend(parsed_deploy_cfg, self.quantizer)
        self.deploy_cfg: Optional[DeployConfig] = parsed_deploy_cfg
        if input_shape is not None:
            _set_tracer_input_shape(self.quantizer.tracer, input_shape)
        if test_pipeline is not None and \
                hasattr(self.quantizer.tracer, 'test_pipeline'):
            self.quantizer.tracer.test_pipeline = list(test_pipeline)
        qmodels = self.quantizer.prepare(self.architecture,
                                         self.forward_modes)
        # Kept out of the module tree on purpose: they reference the
        # architecture's own submodules (see the class docstring).
        self._graphs = {mode: gm.graph for mode, gm in qmodels.items()}
        self._qmodels: Dict[str, fx.GraphModule] = qmodels

    # The quantization-state format, saved in the state dict's metadata as
    # torch versions module state (quant_state_format.py).
    _version = QUANT_STATE_FORMAT

    def _save_to_state_dict(self, destination, prefix, keep_vars):
        super()._save_to_state_dict(destination, prefix, keep_vars)
        metadata = getattr(destination, '_metadata', None)
        if metadata is not None and prefix[:-1] in metadata:
            from mmrazor_quant import __version__
            metadata[prefix[:-1]]['mmrazor_quant'] = __version__

    def _load_from_state_dict(self, state_dict, prefix, local_metadata,
                              strict, missing_keys, unexpected_keys,
                              error_msgs):
        # A state of an older format is migrated in place before the
        # submodules load; a newer one is refused.
        report = migrate_quant_state(
            self, state_dict, prefix,
            local_metadata.get('version') or 1,
            local_metadata.get('mmrazor_quant'))
        self.migration_report = report
        if report:
            from mmengine.logging import print_log
            print_log(f'MMArchitectureQuant: {report}', logger='current')
        super()._load_from_state_dict(state_dict, prefix, local_metadata,
                                      strict, missing_keys, unexpected_keys,
                                      error_msgs)

    @property
    def qmodels(self) -> Dict[str, fx.GraphModule]:
        """The quantized GraphModule of each forward mode."""
        return self._qmodels

    def _apply(self, fn, *args, **kwargs):
        # GraphModules hold their own containers; rebuild them so buffers
        # moved by `.to()`/`.cuda()` are the ones they call.
        out = super()._apply(fn, *args, **kwargs)
        if hasattr(self, '_graphs'):
            self._qmodels = {
                mode: build_graph_module(self.architecture, graph, mode)
                for mode, graph in self._graphs.items()
            }
        return out

    def forward(self,
                inputs: torch.Tensor,
                data_samples: Optional[list] = None,
                mode: str = 'tensor') -> ForwardResults:
        """Run the quantized graph of ``mode``.

        Raises:
            ValueError: If ``mode`` was not traced.
        """
        if mode not in self._qmodels:
            raise ValueError(f'forward mode {mode!r} was not traced; '
                             f'forward_modes={self.forward_modes}')
        return self._qmodels[mode](inputs, data_samples)

    def calibrate_step(self, data: Union[dict, tuple, list]) -> torch.Tensor:
        """One calibration forward (``tensor`` mode) on a data batch."""
        data = self.data_preprocessor(data, False)
        return self._run_forward(data, mode='tensor')

    def get_deploy_model(self) -> fx.GraphModule:
        """A copy for export: BN folded into float weights, every fake quant
        replaced by fixed qparams (see :mod:`mmrazor_quant.deploy`)."""
        from mmrazor_quant.deploy.deploy_model import build_deploy_model
        return build_deploy_model(self)


def _check_preprocessor_fits(preprocessor: nn.Module,
                             architecture: nn.Module) -> None:
    """Raise if ``model.data_preprocessor`` is another codebase's
    preprocessor than the architecture's own (e.g. mmcls's for an mmdet
    detector, which would batch images without padding or box rescaling).

    Codebases are told apart by their adapters; a generic (mmengine)
    preprocessor, or one of a codebase the architecture's builds on (mmdet's
    for an mmyolo detector), fits.
    """
    own = getattr(architecture, 'data_preprocessor', None)
    if own is None or isinstance(preprocessor, type(own)):
        return
    if _same_codebase(preprocessor, own):
        return
    given_pkg = type(preprocessor).__module__.split('.')[0]
    own_pkg = type(own).__module__.split('.')[0]
    raise ValueError(
        f'model.data_preprocessor: {type(preprocessor).__name__} '
        f'({given_pkg}) does not fit the architecture '
        f'{type(architecture).__name__} ({own_pkg}), whose own data '
        f"preprocessor is {type(own).__name__}; use type='{own_pkg}."
        f"{type(own).__name__}'")


def _same_codebase(given: nn.Module, own: nn.Module) -> bool:
    """Whether ``given`` may stand in for ``own``: either is generic (no
    codebase, or mmengine's), or the codebase of one is among those of the
    other (mmdet's preprocessor for an mmyolo detector)."""
    given_cbs = [type(c) for c in codebases_of(given)]
    own_cbs = [type(c) for c in codebases_of(own)]
    generic = CODEBASES.get('MMEngineCodebase')
    return (not given_cbs or not own_cbs
            or generic in (given_cbs[0], own_cbs[0])
            or given_cbs[0] in own_cbs or own_cbs[0] in given_cbs)


def _check_deploy_backend(deploy_cfg: Optional[DeployConfig],
                          quantizer: BaseQuantizer) -> None:
    """Raise if ``deploy_cfg`` targets another device than the one the
    quantizer's schemes were chosen for (e.g. TensorRT's signed symmetric
    activations deployed to OpenVINO); see
    :meth:`BaseBackend.accepts_quantizer`."""
    if deploy_cfg is None or \
            get_backend(deploy_cfg.backend).accepts_quantizer(quantizer):
        return
    backend = quantizer.backend
    raise ValueError(
        f'model.deploy_cfg.backend_config.type={deploy_cfg.backend!r} does '
        f'not match model.quantizer ({type(quantizer).__name__}, backend '
        f'{backend!r}); use the {backend} deploy config or the quantizer of '
        f'{deploy_cfg.backend}')


def _build_architecture(cfg: dict) -> nn.Module:
    """Build the float model in the scope its ``type`` names.

    ``type='mmdet.RetinaNet'`` finds the class, but the detector's own nested
    builds (box coders, assigners) search the *current* default scope, which
    is the caller's (``mmcls`` or ours). Give the config the ``_scope_``
    mmengine adds to dicts inherited from ``mmdet::`` bases.
    """
    cfg = copy.copy(cfg)
    model_type = cfg.get('type')
    if '_scope_' not in cfg and isinstance(model_type, str) \
            and '.' in model_type:
        cfg['_scope_'] = model_type.split('.', 1)[0]
    return MODELS.build(cfg)

def _load_float_checkpoint(architecture: nn.Module, path: str) -> None:
    """Load ``path`` into ``architecture``, refusing one that does not fit.

    mmengine's ``load_checkpoint`` would only warn about missing keys and
    quantize a half-random model; this raises instead.
    """
    from mmrazor_quant.utils.checkpoint import read_checkpoint
    from mmrazor_quant.utils.state_dict_check import (
        check_state_dict_matches,
        strip_wrapper_prefix,
    )
    checkpoint = read_checkpoint(path, 'model.float_checkpoint')
    state_dict = checkpoint.get('state_dict', checkpoint) if isinstance(
        checkpoint, dict) else None
    if not isinstance(state_dict, dict):
        raise ValueError(f'model.float_checkpoint {path!r} holds no state '
                         f'dict (got {type(checkpoint).__name__})')
    state_dict = strip_wrapper_prefix(state_dict)
    check_state_dict_matches(architecture, state_dict,
                             f'model.float_checkpoint {path!r}')
    architecture.load_state_dict(state_dict)


def _mark_initialized(module: nn.Module) -> None:
    for m in module.modules():
        if isinstance(m, BaseModule):
            m._is_init = True


@MODEL_WRAPPERS.register_module()
class MMArchitectureQuantDDP(MMDistributedDataParallel):
    """DDP wrapper of :class:`MMArchitectureQuant`.

    Nothing is re-traced: the wrapped model's graphs share its modules, so
    moving it to the device is enough. Adds :meth:`calibrate_step`.
    """

    def __init__(self,
                 module: MMArchitectureQuant,
                 detect_anomalous_params: bool = False,
                 **kwargs) -> None:
        if not torch.cuda.is_available():
            # gloo on CPU: DDP must not be given a CUDA device.
            kwargs.pop('device_ids', None)
            kwargs.pop('output_device', None)
        super().__init__(
            module=module,
            detect_anomalous_params=detect_anomalous_params,
            **kwargs)

    def calibrate_step(self, data: Union[dict, tuple, list]) -> torch.Tensor:
        return self.module.calibrate_step(data)

    def sync_qparams(self, src_mode: str) -> None:
        self.module.sync_qparams(src_mode)


def _set_tracer_input_shape(tracer: object,
                            input_shape: Sequence[int]) -> None:
    """Give the tracer the shape of one sample (from the data or config)."""
    if not hasattr(tracer, 'input_shape'):
        raise TypeError(f'MMArchitectureQuant: input_shape needs a tracer '
                        f'that takes one (CustomTracer), but the quantizer '
                        f'has a {type(tracer).__name__}')
    if tracer.input_shape is not None and \
            tuple(tracer.input_shape) != tuple(input_shape):
        raise ValueError(f'MMArchitectureQuant: input_shape={input_shape!r} '
                         'contradicts the tracer config\'s input_shape='
                         f'{tracer.input_shape!r}')
    tracer.input_shape = check_input_shape(input_shape)
