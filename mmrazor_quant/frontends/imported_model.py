"""Models as users have them, as mmengine models the quantizers take.

:class:`OnnxModel` imports an ONNX file (:func:`.onnx_import.import_onnx`),
:class:`TorchModel` wraps a plain ``torch.nn.Module``; both are
``BaseModel`` s whose ``tensor`` and ``predict`` modes return the network's
outputs, so ``MMArchitectureQuant`` quantizes them with any backend
quantizer, the PTQ passes and loops run on them, and the exporters write
them, exactly as for an OpenMMLab model. No loss: QAT needs a model that
computes one.
"""
import importlib
from typing import Dict, List, Optional, Sequence, Union

import torch
from mmengine.model import BaseDataPreprocessor, BaseModel
from torch import nn

from mmrazor_quant.registry import MODELS

__all__ = ['ImportedModel', 'OnnxModel', 'TorchModel',
           'ImportedDataPreprocessor']


@MODELS.register_module()
class ImportedDataPreprocessor(BaseDataPreprocessor):
    """Batch what a calibration dataset yields: a tensor, a list of
    same-shaped tensors (stacked), or a list of dicts by input name
    (stacked per name); casts to float32 when the samples are not float.
    """

    def forward(self, data: dict, training: bool = False) -> dict:
        data = dict(data) if isinstance(data, dict) else dict(inputs=data)
        data['inputs'] = _batch(data['inputs'])
        # no labels: an empty list where OpenMMLab batches have samples
        data.setdefault('data_samples', [])
        return self.cast_data(data)


def _batch(inputs):
    if isinstance(inputs, torch.Tensor):
        return inputs if inputs.is_floating_point() else inputs.float()
    if isinstance(inputs, dict):
        return {k: _batch(v) for k, v in inputs.items()}
    if isinstance(inputs, (list, tuple)) and inputs and \
            isinstance(inputs[0], dict):
        return {k: _batch([s[k] for s in inputs]) for k in inputs[0]}
    if isinstance(inputs, (list, tuple)):
        tensors = [torch.as_tensor(t) for t in inputs]
        shapes = {tuple(t.shape) for t in tensors}
        if len(shapes) != 1:
            raise ValueError(f'a batch holds samples of shapes '
                             f'{sorted(shapes)}; give one shape per input')
        return _batch(torch.stack(tensors))
    raise TypeError(f'inputs of type {type(inputs).__name__}: expected a '
                    'tensor, a list of tensors or dicts by input name')


class ImportedModel(BaseModel):
    """A float network run as an mmengine model.

    Args:
        net (nn.Module): The network; called with the inputs in
            ``input_names`` order.
        input_names (list[str]): Its inputs; a batch whose ``inputs`` is a
            dict is read by these names. Defaults to ``['input']``.
        output_names (list[str], optional): Its outputs, for the export.
        dynamic_axes (dict, optional): ``{name: {axis: dim name}}`` of the
            inputs and outputs, for the export.
        data_preprocessor (dict, optional): Defaults to
            :class:`ImportedDataPreprocessor`.
    """

    def __init__(self,
                 net: nn.Module,
                 input_names: Optional[Sequence[str]] = None,
                 output_names: Optional[Sequence[str]] = None,
                 dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None,
                 data_preprocessor: Optional[dict] = None,
                 init_cfg: Optional[dict] = None) -> None:
        super().__init__(
            data_preprocessor=data_preprocessor or dict(
                type='mmrazor_quant.ImportedDataPreprocessor'),
            init_cfg=init_cfg)
        self.net = net.eval()
        self.input_names: List[str] = list(input_names or ['input'])
        self.output_names = list(output_names) if output_names else None
        self.dynamic_axes = dynamic_axes
        # weights are the user's: never re-initialised by Runner.train()
        self._is_init = True

    @property
    def onnx_config(self) -> dict:
        """mmdeploy-style ``onnx_config`` keys that keep the model's own
        input/output names and dynamic axes in the export."""
        cfg = dict(input_names=list(self.input_names))
        if self.output_names:
            cfg['output_names'] = list(self.output_names)
        if self.dynamic_axes:
            cfg['dynamic_axes'] = {k: dict(v)
                                   for k, v in self.dynamic_axes.items()}
        return cfg

    def forward(self,
                inputs: Union[torch.Tensor, Dict[str, torch.Tensor]],
                data_samples: Optional[list] = None,
                mode: str = 'tensor'):
        """Run the network (``tensor`` and ``predict`` alike).

        Raises:
            ValueError: On ``mode='loss'``, or an unknown mode.
        """
        if mode == 'loss':
            raise ValueError(
                f'{type(self).__name__} has no loss: it runs a network as '
                "given; quantize it with forward_modes=('tensor', ) (PTQ)")
        if mode not in ('tensor', 'predict'):
            raise ValueError(f'unknown mode {mode!r}')
        if len(self.input_names) > 1:
            return self.net(*[inputs[n] for n in self.input_names])
        return self.net(inputs)


@MODELS.register_module()
class OnnxModel(ImportedModel):
    """An ONNX file, imported (:func:`.onnx_import.import_onnx`).

    Submodules keep the ONNX node names (``net.<node name>``, ``.`` as
    ``/``, the leading ``/`` dropped: ``/backbone/conv1/Conv`` is
    ``net.backbone/conv1/Conv``); :attr:`onnx_info` maps them back.

    Args:
        path (str): The ``.onnx`` file.
        normalize (bool): Run the fx normalisation (linear layers, pooling,
            LayerNorm, scalars as scalars). Defaults to True.
        data_preprocessor (dict, optional): See :class:`ImportedModel`.

    Example:
        >>> model = dict(type='mmrazor_quant.MMArchitectureQuant',
        ...              architecture=dict(type='mmrazor_quant.OnnxModel',
        ...                                path='model.onnx'),
        ...              quantizer=..., forward_modes=('tensor', ))
    """

    def __init__(self,
                 path: str,
                 normalize: bool = True,
                 data_preprocessor: Optional[dict] = None,
                 init_cfg: Optional[dict] = None) -> None:
        from .onnx_import import import_onnx
        net, info = import_onnx(path, normalize)
        super().__init__(net, info.input_names, info.output_names,
                         info.dynamic_axes, data_preprocessor, init_cfg)
        self.path = path
        self.onnx_info = info

    def onnx_name(self, module_name: str) -> str:
        """The ONNX node name behind a submodule name of this model
        (``net.conv/Conv`` or ``architecture.net.conv/Conv``); the name
        itself when it has none."""
        key = module_name.split('net.', 1)[-1]
        return self.onnx_info.onnx_name(key)

    def restore_node_names(self, onnx_model) -> int:
        """Rename, in place, each node of an export of this model that a
        submodule produced (``/conv/Conv/Conv``, the exporter's module path
        and op) to the name of its node in the imported file
        (``/conv/Conv``); a fused module takes the first of its names.
        Names already used stay. Returns how many were renamed."""
        nodes = self.onnx_info.nodes
        used = {n.name for n in onnx_model.graph.node}
        renamed = 0
        for node in onnx_model.graph.node:
            prefix = node.name.rsplit('/', 1)[0].lstrip('/')
            if prefix.startswith('net/'):
                prefix = prefix[len('net/'):]
            if prefix not in nodes:
                continue
            name = self.onnx_info.fused.get(prefix, [None])[0] or \
                self.onnx_info.onnx_name(prefix)
            if name in used:
                continue
            used.discard(node.name)
            used.add(name)
            node.name = name
            renamed += 1
        return renamed


@MODELS.register_module()
class TorchModel(ImportedModel):
    """A plain ``torch.nn.Module``: given, or built by a dotted factory.

    Args:
        module (nn.Module | str): The network, or the dotted path of a
            function or class that returns it (e.g.
            ``'torchvision.models.mobilenet_v3_small'``).
        kwargs (dict, optional): Arguments of the factory.
        checkpoint (str, optional): A state dict to load (strict).
        input_names, output_names, dynamic_axes: See
            :class:`ImportedModel`.
        data_preprocessor (dict, optional): See :class:`ImportedModel`.

    Raises:
        ValueError: If ``module`` cannot be imported or does not give an
            ``nn.Module``.
    """

    def __init__(self,
                 module: Union[nn.Module, str],
                 kwargs: Optional[dict] = None,
                 checkpoint: Optional[str] = None,
                 input_names: Optional[Sequence[str]] = None,
                 output_names: Optional[Sequence[str]] = None,
                 dynamic_axes: Optional[Dict[str, Dict[int, str]]] = None,
                 data_preprocessor: Optional[dict] = None,
                 init_cfg: Optional[dict] = None) -> None:
        net = _build_module(module, kwargs or {})
        if checkpoint:
            from mmrazor_quant.utils.checkpoint import read_checkpoint
            state = read_checkpoint(checkpoint, 'model.checkpoint')
            state = state.get('state_dict', state)
            net.load_state_dict(state, strict=True)
        super().__init__(net, input_names, output_names, dynamic_axes,
                         data_preprocessor, init_cfg)


def _build_module(module, kwargs: dict) -> nn.Module:
    if isinstance(module, str):
        path, _, attr = module.rpartition('.')
        try:
            factory = getattr(importlib.import_module(path), attr)
        except (ImportError, AttributeError, ValueError) as e:
            raise ValueError(f'TorchModel: module={module!r} cannot be '
                             f'imported ({e})') from e
        module = factory(**kwargs)
    if not isinstance(module, nn.Module):
        raise ValueError(f'TorchModel: module must be an nn.Module or the '
                         f'dotted path of a factory of one, got '
                         f'{type(module).__name__}')
    return module
