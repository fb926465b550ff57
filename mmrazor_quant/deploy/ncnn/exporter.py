"""Exporter for ncnn: the int8 ``.param``/``.bin`` with this project's
scales, the float32 graph and the ``ncnn2table`` calibration table beside
it."""
import json
import os.path as osp
from typing import Dict, Optional

import numpy as np
import torch
from torch import nn

from mmrazor_quant.backends import get_backend
from mmrazor_quant.registry import EXPORTERS
from ..atomic import atomic_outputs
from ..deploy_model import build_deploy_model
from ..exporters.base import BaseExporter, ExportResult
from ..qparams_table import fake_quant_qparams
from .model_writer import NCNNModel, build_ncnn_model
from .runtime import blob_names, import_ncnn, load_net

__all__ = ['NCNNExporter']


@EXPORTERS.register_module()
class NCNNExporter(BaseExporter):
    """Write, beside the requested ``<stem>.onnx`` path (no ONNX is
    written: ncnn reads its own format):

    * ``<stem>.param`` and ``<stem>.bin``: the int8 ncnn model. Every conv
      and linear whose input is quantized is an ``int8_scale_term=1``
      layer holding the int8 weight codes, ``1 / s_w`` per output channel
      and ``1 / s_in`` (ncnn's scales are multipliers); the other layers
      are float32;
    * ``<stem>.table``: the same scales in ``ncnn2table``'s format
      (``<layer>_param_0 <1/s_w>...`` and ``<layer> <1/s_in>``);
    * ``<stem>_fp32.param`` / ``<stem>_fp32.bin``: the float32 graph with
      the same layer names and the on-grid weights, which ncnn's own
      ``ncnn2int8`` turns into the int8 model with the table;
    * ``<stem>.qparams.json``: every fake quant's scheme and qparams.

    The files are checked to load and run in ncnn before any is written
    (all or none). :attr:`ExportResult.deploy_model` is the deploy model
    written; the ``ncnn`` runtime's simulation computes it as ncnn's int8
    layers do (:func:`~.arithmetic.ncnn_deploy_model`), which the parity
    pipeline compares the runtime with.

    Args:
        verify (bool): Load the files in ncnn and run one sample before
            writing them (needs the ``ncnn`` wheel, ``make ncnn``).
            Defaults to True.
        **kwargs: ONNX options of the other exporters (``opset``, tensor
            names): accepted and unused.
    """
    backend = 'ncnn'

    def __init__(self, verify: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.verify = verify

    def check_quantizer(self, qmodel: nn.Module) -> None:
        """Raise ValueError if ``qmodel`` was quantized for another
        deploy target (its placement and schemes are that target's)."""
        quantizer = getattr(qmodel, 'quantizer', None)
        if quantizer is None or get_backend(
                self.backend).accepts_quantizer(quantizer):
            return
        raise ValueError(
            f'ncnn: the model was quantized by {type(quantizer).__name__} '
            f'(backend {quantizer.backend!r}), whose placement and schemes '
            "are that target's; quantize it with NCNNQuantizer (symmetric "
            'int8 on the inputs of conv and linear) to export it to ncnn')

    def prepare_model(self, qmodel: nn.Module) -> Optional[str]:
        self.check_quantizer(qmodel)
        return None

    def export(self, qmodel: nn.Module, example_input: torch.Tensor,
               onnx_path: str) -> ExportResult:
        """Export a calibrated ``MMArchitectureQuant`` (see the class).

        Raises:
            ValueError: If it was quantized for another backend, if a fake
                quant's scheme is not one ncnn's ``BackendSpec`` declares
                (each named), or (:class:`~.model_writer.NCNNExportError`)
                an op or a placement ncnn cannot run, named with its layer.
            ImportError: If ``verify`` and ncnn is not installed.
        """
        self.check_quantizer(qmodel)
        if self.verify:
            import_ncnn()  # before any work: a missing runtime is clear
        stem = osp.splitext(onnx_path)[0]
        if stem == onnx_path or onnx_path.endswith(('.param', '.bin')):
            raise ValueError('ncnn: give the .onnx path of the export (the '
                             '.param, .bin and .table go beside it, named '
                             f'after its stem), got {onnx_path!r}')
        model = build_deploy_model(qmodel)
        shape = tuple(example_input.shape[1:])
        int8 = build_ncnn_model(model, shape)
        fp32 = build_ncnn_model(model, shape, int8=False)
        texts = {
            f'{stem}.param': int8.param_text(),
            f'{stem}.table': int8.table_text(),
            f'{stem}_fp32.param': fp32.param_text(),
            f'{stem}.qparams.json': json.dumps(
                dict(backend=self.backend,
                     fake_quants=fake_quant_qparams(model)), indent=1),
        }
        blobs = {f'{stem}.bin': int8.bin_bytes(),
                 f'{stem}_fp32.bin': fp32.bin_bytes()}
        paths = list(texts) + list(blobs)
        with atomic_outputs(paths) as tmps:
            tmp = dict(zip(paths, tmps))
            for path, text in texts.items():
                with open(tmp[path], 'w') as f:
                    f.write(text)
            for path, data in blobs.items():
                with open(tmp[path], 'wb') as f:
                    f.write(data)
            if self.verify:
                self._verify(int8, tmp[f'{stem}.param'], tmp[f'{stem}.bin'],
                             example_input[:1])
        roles: Dict[str, str] = {
            'param': f'{stem}.param', 'bin': f'{stem}.bin',
            'table': f'{stem}.table', 'fp32_param': f'{stem}_fp32.param',
            'fp32_bin': f'{stem}_fp32.bin',
            'qparams': f'{stem}.qparams.json'}
        return ExportResult(f'{stem}.param', roles, model, None)

    @staticmethod
    def _verify(model: NCNNModel, param: str, weights: str,
                sample: torch.Tensor) -> None:
        """Load the written files in ncnn and run ``sample``."""
        ncnn = import_ncnn()
        net = load_net(param, bin_path=weights)
        inputs, outputs = blob_names(param)
        data = np.ascontiguousarray(sample[0].numpy(), dtype=np.float32)
        ex = net.create_extractor()
        ex.input(inputs[0], ncnn.Mat(data))
        for name in outputs:
            ret, mat = ex.extract(name)
            if ret != 0 or np.array(mat).size == 0:
                raise RuntimeError(f'ncnn: the exported model does not run '
                                   f'(extracting {name} returned {ret})')
        del ex, net
