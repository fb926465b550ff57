"""The common export pipeline of every backend."""
import json
import os.path as osp
from dataclasses import dataclass, field
from typing import Dict, List, Optional

import onnx
import torch
from torch import fx, nn

from mmrazor_quant.structures.opsets import DEFAULT_OPSET, LOW_BIT_OPSET
from ..atomic import atomic_outputs
from ..bias_passes import unfuse_low_bit_bias
from ..dead_code import remove_dead_code
from ..deploy_model import build_deploy_model
from ..onnx_export import INPUT_NAME, OUTPUT_NAME, export_onnx
from ..qdq_fake_quantize import QDQFakeQuantize
from ..qparams_table import fake_quant_qparams, onnx_qparams

__all__ = ['BaseExporter', 'ExportResult', 'check_backend_scheme']


@dataclass
class ExportResult:
    """What an export wrote.

    Attributes:
        onnx_path (str): The model.
        files (dict): Every file written, by role (``'onnx'``,
            ``'qparams'``, ...).
        deploy_model (fx.GraphModule): The simulation the files implement.
        onnx_model (onnx.ModelProto): The exported model.
    """
    onnx_path: str
    files: Dict[str, str]
    deploy_model: fx.GraphModule
    onnx_model: onnx.ModelProto = field(repr=False)


class BaseExporter:
    """Build the deploy model, check the backend can run it, write the QDQ
    ONNX and a JSON of every tensor's qparams (``<stem>.qparams.json``).

    All files are written at once at the end: on any error, nothing is
    left behind (an older export at the same path is kept).

    Args:
        opset (int, optional): Target opset. Defaults to
            :data:`~mmrazor_quant.structures.opsets.LOW_BIT_OPSET` if a grid
            needs 4 bits, else
            :data:`~mmrazor_quant.structures.opsets.DEFAULT_OPSET`.
        dynamic_batch (bool): Symbolic batch axis. Defaults to True.
        clip_narrow_range (bool, optional): Override the backend's
            :attr:`clip_narrow_range`. ``False`` lets onnxruntime fuse 7-bit
            activations into int8 kernels, at the price of values above the
            calibrated range reaching 255 instead of clamping at 127.
            Defaults to None (the backend's choice).
        input_names, output_names, dynamic_axes: Graph tensor names and
            dynamic axes, as in mmdeploy's ``onnx_config`` (see
            :class:`~mmrazor_quant.deploy.onnx_export.TensorNames`).
            Default to ``['input']``, ``['output']`` and a dynamic batch.
    """
    #: Registry name of the backend.
    backend: str = 'base'
    #: Clip where a grid is narrower than its ONNX type (see
    #: :class:`QDQFakeQuantize`).
    clip_narrow_range: bool = True

    def __init__(self, opset: Optional[int] = None,
                 dynamic_batch: bool = True,
                 clip_narrow_range: Optional[bool] = None,
                 input_names: Optional[List[str]] = None,
                 output_names: Optional[List[str]] = None,
                 dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None
                 ) -> None:
        self.opset = opset
        self.dynamic_batch = dynamic_batch
        self.names = dict(input_names=input_names, output_names=output_names,
                          dynamic_axes=dynamic_axes)
        if clip_narrow_range is not None:
            self.clip_narrow_range = clip_narrow_range

    # -- hooks for backends ----------------------------------------------
    def prepare_model(self, qmodel: nn.Module) -> Optional[str]:
        """Bring the calibrated ``qmodel`` (an ``MMArchitectureQuant``) to
        the backend's arithmetic, in place, before it is exported and
        compared (e.g. onnxruntime's int32 bias grid).

        Returns:
            str, optional: A line for the log, or None. Defaults to
            nothing done.
        """
        return None

    def check_model(self, model: fx.GraphModule) -> None:
        """Raise ValueError if the backend cannot run ``model`` (beyond its
        schemes, which :meth:`check_scheme` checks first)."""

    def check_scheme(self, model: fx.GraphModule) -> None:
        """Raise ValueError naming each fake quant of ``model`` whose scheme
        the backend does not execute (see :func:`check_backend_scheme`)."""
        check_backend_scheme(model, self.backend)

    def side_files(self, onnx_model: onnx.ModelProto, model: fx.GraphModule,
                   stem: str) -> Dict[str, object]:
        """Extra JSON files, ``{path: content}``."""
        return {}

    def final_model(self, onnx_model: onnx.ModelProto) -> onnx.ModelProto:
        """The model written to the ``.onnx`` file: ``onnx_model`` with the
        bias of 4-bit layers moved out of the op (see
        :func:`unfuse_low_bit_bias`). Subclasses extend it."""
        model = onnx.ModelProto.FromString(onnx_model.SerializeToString())
        if unfuse_low_bit_bias(model):
            onnx.checker.check_model(model, full_check=True)
        return model

    def verify_loads(self, path: str) -> None:
        """Check that the backend's runtime loads ``path``."""

    # -- pipeline -------------------------------------------------------
    def _opset(self, model: nn.Module) -> int:
        if self.opset is not None:
            return self.opset
        four_bit = any(
            m.quant_max - m.quant_min < 16 for m in model.modules()
            if isinstance(m, QDQFakeQuantize))
        return LOW_BIT_OPSET if four_bit else DEFAULT_OPSET

    def export(self, qmodel: nn.Module, example_input: torch.Tensor,
               onnx_path: str) -> ExportResult:
        """Export a calibrated ``MMArchitectureQuant``.

        Args:
            qmodel (MMArchitectureQuant): The calibrated model.
            example_input (Tensor): A preprocessed input batch.
            onnx_path (str): Where to write the model; side files go beside
                it, named after its stem.

        Returns:
            ExportResult: The files written.

        Raises:
            RuntimeError: If fake quants were never calibrated.
            ValueError: If the backend or the opset cannot represent the
                model's quantization.
        """
        model = build_deploy_model(qmodel)
        self.check_scheme(model)
        self.check_model(model)
        onnx_model = export_onnx(
            model,
            example_input,
            opset=self._opset(model),
            dynamic_batch=self.dynamic_batch,
            clip_narrow_range=self.clip_narrow_range,
            **_names_with_model_defaults(self.names, qmodel))
        stem = osp.splitext(onnx_path)[0]
        files = {
            f'{stem}.qparams.json':
            dict(
                backend=self.backend,
                onnx_tensors=onnx_qparams(onnx_model),
                fake_quants=fake_quant_qparams(model))
        }
        files.update(self.side_files(onnx_model, model, stem))
        final = self.final_model(onnx_model)
        _restore_node_names(final, qmodel)
        # onnxruntime warns about every unused initializer it loads.
        remove_dead_code(final)
        paths = [onnx_path] + list(files)
        with atomic_outputs(paths) as tmps:
            onnx.save(final, tmps[0])
            self.verify_loads(tmps[0])
            for tmp, content in zip(tmps[1:], files.values()):
                with open(tmp, 'w') as f:
                    json.dump(content, f, indent=1)
        roles = {'onnx': onnx_path}
        roles.update({_role(p, stem): p for p in files})
        return ExportResult(onnx_path, roles, model, final)


def check_backend_scheme(model: fx.GraphModule, backend: str) -> None:
    """Raise ValueError naming each fake quant of the deploy model
    ``model`` whose scheme the registered ``backend`` does not execute: its
    declaration's ``BackendSpec`` (the quantizer's ``scheme``) is the one
    source of what it runs. A backend without a spec (onnxruntime runs any
    QDQ model) accepts every scheme.

    Args:
        model (fx.GraphModule): A deploy model.
        backend (str): A registered backend's name.
    """
    from mmrazor_quant.backends import all_backends
    declared = all_backends().get(backend)
    spec = None if declared is None else declared.scheme()
    if spec is None:
        return
    spec.check_fake_quants(
        ((fq.name or name, name.endswith('weight_fake_quant'), fq.qscheme)
         for name, fq in model.named_modules()
         if isinstance(fq, QDQFakeQuantize)), backend)


def _architecture(qmodel: nn.Module) -> Optional[nn.Module]:
    return getattr(qmodel, 'architecture', None)


def _names_with_model_defaults(names: Dict[str, object],
                               qmodel: nn.Module) -> Dict[str, object]:
    """``names`` with each unset one taken from the architecture's own
    ``onnx_config`` (a model imported from ONNX keeps its input/output
    names and dynamic axes)."""
    own = getattr(_architecture(qmodel), 'onnx_config', None) or {}
    merged = dict(names)
    # mmdeploy's default names ('input', 'output') give way to the model's
    defaults = dict(input_names=[INPUT_NAME], output_names=[OUTPUT_NAME])
    for key, value in own.items():
        if merged.get(key) is None or merged[key] == defaults.get(key):
            merged[key] = value
    return merged


def _restore_node_names(onnx_model: onnx.ModelProto,
                        qmodel: nn.Module) -> None:
    """Give exported nodes the names of the architecture's own file (see
    ``OnnxModel.restore_node_names``), where it has one."""
    restore = getattr(_architecture(qmodel), 'restore_node_names', None)
    if restore is not None:
        restore(onnx_model)


def _role(path: str, stem: str) -> str:
    return path[len(stem) + 1:].rsplit('.', 1)[0]


def quantized_tensors(model: nn.Module) -> List[QDQFakeQuantize]:
    """The fake quants of a deploy model."""
    return [m for m in model.modules() if isinstance(m, QDQFakeQuantize)]
