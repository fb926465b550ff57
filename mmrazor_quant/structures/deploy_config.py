"""mmdeploy's deployment description (``deploy_cfg``), as MMRazor's
quantization configs carry it.

A deploy config has three parts::

    deploy_cfg = dict(
        onnx_config=dict(
            type='onnx', opset_version=11, save_file='end2end.onnx',
            input_names=['input'], output_names=['output'],
            input_shape=None,       # [width, height] or None
            dynamic_axes={'input': {0: 'batch', 2: 'height', 3: 'width'},
                          'output': {0: 'batch'}}),
        backend_config=dict(
            type='tensorrt',        # a registered backend
            common_config=dict(int8_mode=True, explicit_quant_mode=True),
            model_inputs=[dict(input_shapes=dict(input=dict(
                min_shape=[1, 3, 224, 224], opt_shape=[4, 3, 224, 224],
                max_shape=[8, 3, 224, 224])))]),
        codebase_config=dict(type='mmcls', task='Classification'))

:class:`DeployConfig` validates it when ``MMArchitectureQuant`` is built and
tells ``tools/export.py`` what to write. The backend is looked up in the
backend registry (:mod:`mmrazor_quant.backends`), which also reads its own
``backend_config`` settings; ``codebase_config`` is only recorded. Keys
mmdeploy uses for its own steps (``optimize``, ``function_record_to_pop``,
TensorRT's ``max_workspace_size`` and ``fp16_mode``, OpenVINO's
``mo_options``) are accepted and not used here.
"""
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from mmrazor_quant.backends import get_backend
from .opsets import MAX_OPSET, MIN_OPSET, QDQ_MIN_OPSET

__all__ = ['DeployConfig', 'InputShapes', 'MIN_OPSET', 'MAX_OPSET']

Shape = Tuple[int, ...]


@dataclass(frozen=True)
class InputShapes:
    """The shapes a backend is built for, for one input.

    OpenVINO's ``model_inputs`` give ``opt_shapes`` only; TensorRT's give
    an optimization profile (``min_shape`` <= ``opt_shape`` <=
    ``max_shape``, each dimension).

    Attributes:
        opt (tuple): The shape the backend optimizes for.
        min (tuple, optional): TensorRT's smallest shape.
        max (tuple, optional): TensorRT's largest shape.
    """
    opt: Shape
    min: Optional[Shape] = None
    max: Optional[Shape] = None

    def contains(self, shape: Sequence[int]) -> bool:
        """Whether ``shape`` lies inside the profile (always, without
        one)."""
        if self.min is None or self.max is None:
            return True
        return len(shape) == len(self.min) and all(
            lo <= s <= hi for lo, s, hi in zip(self.min, shape, self.max))


@dataclass(frozen=True)
class DeployConfig:
    """A validated ``deploy_cfg``.

    Attributes:
        backend (str): ``backend_config.type``, a registered backend with
            an exporter.
        opset (int, optional): ``onnx_config.opset_version`` as given.
        input_names (list[str]): Names of the graph inputs.
        output_names (list[str]): Names of the graph outputs (or of groups
            of outputs, see ``tools/export.py``).
        dynamic_axes (dict): ``{name: {axis: axis_name}}``.
        save_file (str, optional): File name of the ONNX model.
        input_shape (tuple, optional): ``(height, width)`` of the export's
            example input (mmdeploy writes ``[width, height]``).
        model_inputs (dict): :class:`InputShapes` by input name.
        backend_settings (dict): Export settings the backend reads from
            its ``backend_config`` (e.g. TensorRT's ``implicit``: int8
            without Q/DQ, ``int8_mode`` without ``explicit_quant_mode``).
        codebase (str, optional): ``codebase_config.type`` (e.g. ``mmcls``).
        task (str, optional): ``codebase_config.task``.
        post_processing (bool): Whether ``codebase_config`` asks for
            post-processing in the graph (mmdeploy's end2end NMS).
    """
    backend: str
    opset: Optional[int] = None
    input_names: List[str] = field(default_factory=lambda: ['input'])
    output_names: List[str] = field(default_factory=lambda: ['output'])
    dynamic_axes: Dict[str, Dict[int, str]] = field(default_factory=dict)
    save_file: Optional[str] = None
    input_shape: Optional[Tuple[int, int]] = None
    model_inputs: Dict[str, InputShapes] = field(default_factory=dict)
    backend_settings: Dict[str, Any] = field(default_factory=dict)
    codebase: Optional[str] = None
    task: Optional[str] = None
    post_processing: bool = False

    @classmethod
    def from_dict(cls, cfg: Mapping) -> 'DeployConfig':
        """Parse and validate mmdeploy's dict.

        Args:
            cfg (Mapping): The ``deploy_cfg`` dict (or mmengine ConfigDict).

        Returns:
            DeployConfig: The parsed description.

        Raises:
            TypeError: If a part has the wrong type (the key is named).
            ValueError: If ``backend_config.type`` is unknown, the opset is
                outside [:data:`QDQ_MIN_OPSET`, :data:`MAX_OPSET`], a shape
                is malformed, or the settings cannot be exported (the key,
                the value and what is allowed are named).
        """
        cfg = _mapping(cfg, 'deploy_cfg')
        onnx_cfg = _mapping(cfg.get('onnx_config', {}),
                            'deploy_cfg.onnx_config')
        backend_cfg = _mapping(cfg.get('backend_config'),
                               'deploy_cfg.backend_config')
        codebase_cfg = _mapping(cfg.get('codebase_config', {}),
                                'deploy_cfg.codebase_config')
        backend = get_backend(backend_cfg.get('type'),
                              'deploy_cfg.backend_config.type',
                              deployable=True)
        _check_onnx_flags(onnx_cfg)
        input_names = _names(onnx_cfg, 'input_names', ['input'])
        return cls(
            backend=backend.name,
            opset=_opset(onnx_cfg.get('opset_version')),
            input_names=input_names,
            output_names=_names(onnx_cfg, 'output_names', ['output']),
            dynamic_axes=_dynamic_axes(onnx_cfg.get('dynamic_axes')),
            save_file=_save_file(onnx_cfg.get('save_file')),
            input_shape=_input_shape(onnx_cfg.get('input_shape')),
            model_inputs=_model_inputs(backend_cfg.get('model_inputs'),
                                       input_names),
            backend_settings=backend.parse_backend_config(backend_cfg),
            codebase=codebase_cfg.get('type'),
            task=codebase_cfg.get('task'),
            post_processing='post_processing' in codebase_cfg)

    @property
    def implicit(self) -> bool:
        """Whether the export is a float model plus ranges (TensorRT's
        implicit int8 mode) rather than QDQ."""
        return bool(self.backend_settings.get('implicit', False))

    def export_opset(self) -> Optional[int]:
        """The opset to export at: :attr:`opset`, raised to
        :data:`MIN_OPSET` (with a warning naming the key) where it is too
        low for per-channel ``QuantizeLinear``, as in MMRazor's configs
        (opset 11)."""
        if self.opset is None or self.opset >= MIN_OPSET:
            return self.opset
        warnings.warn(
            f'deploy_cfg.onnx_config.opset_version={self.opset} has no '
            f'per-channel QuantizeLinear; exporting at opset {MIN_OPSET}, '
            'which OpenVINO, TensorRT >= 8 and onnxruntime all read',
            stacklevel=2)
        return MIN_OPSET

    def example_hw(self) -> Optional[Tuple[int, int]]:
        """``(height, width)`` of the export's example input:
        ``input_shape``, else the first input's optimal backend shape,
        else None (the data's own size)."""
        if self.input_shape is not None:
            return self.input_shape
        shapes = self.model_inputs.get(self.input_names[0])
        if shapes is not None and len(shapes.opt) == 4:
            return tuple(shapes.opt[2:])
        return None


def _mapping(value, key: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise TypeError(f'{key} must be a dict, got '
                        f'{type(value).__name__}: {value!r}')
    return value


def _opset(value) -> Optional[int]:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError('deploy_cfg.onnx_config.opset_version must be an '
                        f'int, got {value!r}')
    if not QDQ_MIN_OPSET <= value <= MAX_OPSET:
        raise ValueError(
            f'deploy_cfg.onnx_config.opset_version={value} is not '
            f'supported: QuantizeLinear needs opset >= {QDQ_MIN_OPSET} '
            f'(per-channel >= {MIN_OPSET}) and exports are checked up to '
            f'{MAX_OPSET}')
    return value


def _names(cfg: Mapping, key: str, default: List[str]) -> List[str]:
    value = cfg.get(key)
    if value is None:
        return list(default)
    if isinstance(value, str) or not all(
            isinstance(v, str) and v for v in value) or not value:
        raise TypeError(f'deploy_cfg.onnx_config.{key} must be a non-empty '
                        f'list of names, got {value!r}')
    if len(set(value)) != len(value):
        raise ValueError(f'deploy_cfg.onnx_config.{key} repeats a name: '
                         f'{list(value)}')
    return list(value)


def _dynamic_axes(value) -> Dict[str, Dict[int, str]]:
    if value is None:
        return {}
    key = 'deploy_cfg.onnx_config.dynamic_axes'
    axes = {}
    for name, dims in _mapping(value, key).items():
        if isinstance(dims, (list, tuple)):  # torch's list form
            dims = {int(d): f'{name}_dim{d}' for d in dims}
        dims = _mapping(dims, f'{key}[{name!r}]')
        if not all(isinstance(d, int) and d >= 0 for d in dims):
            raise ValueError(f'{key}[{name!r}]: axes must be non-negative '
                             f'ints, got {list(dims)}')
        axes[name] = {int(d): str(n) for d, n in dims.items()}
    return axes


def _save_file(value) -> Optional[str]:
    if value is None:
        return None
    if not isinstance(value, str) or not value.endswith('.onnx') or \
            '/' in value or '\\' in value:
        raise ValueError('deploy_cfg.onnx_config.save_file must be a file '
                         f'name ending in .onnx, got {value!r}')
    return value


def _input_shape(value) -> Optional[Tuple[int, int]]:
    if value is None:
        return None
    if len(value) != 2 or not all(isinstance(v, int) and v > 0
                                  for v in value):
        raise ValueError('deploy_cfg.onnx_config.input_shape must be '
                         f'[width, height] of positive ints, got {value!r}')
    width, height = value
    return int(height), int(width)


def _shape(value, key: str) -> Shape:
    if not isinstance(value, (list, tuple)) or not value or not all(
            isinstance(v, int) and v > 0 for v in value):
        raise ValueError(f'{key} must be a list of positive ints, got '
                         f'{value!r}')
    return tuple(value)


def _model_inputs(value, input_names: List[str]) -> Dict[str, InputShapes]:
    key = 'deploy_cfg.backend_config.model_inputs'
    shapes: Dict[str, InputShapes] = {}
    for i, item in enumerate(value or []):
        item = _mapping(item, f'{key}[{i}]')
        for name, opt in item.get('opt_shapes', {}).items():  # OpenVINO
            shapes[name] = InputShapes(_shape(opt, f'{key}[{i}].opt_shapes'
                                              f'.{name}'))
        for name, prof in item.get('input_shapes', {}).items():  # TensorRT
            where = f'{key}[{i}].input_shapes.{name}'
            prof = _mapping(prof, where)
            lo, opt, hi = (_shape(prof.get(k), f'{where}.{k}')
                           for k in ('min_shape', 'opt_shape', 'max_shape'))
            if not len(lo) == len(opt) == len(hi) or not all(
                    a <= b <= c for a, b, c in zip(lo, opt, hi)):
                raise ValueError(f'{where}: expected min_shape <= opt_shape '
                                 f'<= max_shape, got {list(lo)}, '
                                 f'{list(opt)}, {list(hi)}')
            shapes[name] = InputShapes(opt, lo, hi)
    unknown = sorted(set(shapes) - set(input_names))
    if unknown:
        raise ValueError(f'{key} names input(s) {unknown} that '
                         f'onnx_config.input_names {input_names} lacks')
    return shapes


def _check_onnx_flags(onnx_cfg: Mapping) -> None:
    """Refuse the ``onnx_config`` settings a quantized export cannot
    honour."""
    kind = onnx_cfg.get('type', 'onnx')
    if kind != 'onnx':
        raise ValueError(f"deploy_cfg.onnx_config.type={kind!r}: only 'onnx' "
                         'is supported')
    if not onnx_cfg.get('export_params', True):
        raise ValueError('deploy_cfg.onnx_config.export_params=False is not '
                         'supported: the ONNX must carry the quantized '
                         'weights its scales were calibrated for')
    if onnx_cfg.get('keep_initializers_as_inputs', False):
        raise ValueError('deploy_cfg.onnx_config.keep_initializers_as_inputs'
                         '=True is not supported: Q/DQ weights are folded '
                         'initializers, not graph inputs')
