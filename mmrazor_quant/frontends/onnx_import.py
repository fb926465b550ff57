"""ONNX file -> float ``torch.fx.GraphModule`` that the quantizers take.

The converter is onnx2torch (pinned in ``setup.py``'s ``onnx`` extra; see
docs/onnx_models.md for why): it converts each ONNX node to one module
named after the node. :func:`import_onnx` checks the file
(:mod:`.onnx_loader`), runs the pre-passes (:mod:`.onnx_prepasses`),
converts, and normalises the graph (:mod:`.fx_normalize`).
"""
import logging
from typing import Tuple

from torch import fx

from .fx_normalize import normalize_graph
from .onnx_graph_info import OnnxGraphInfo
from .onnx_loader import check_supported_ops, load_onnx_model
from .onnx_prepasses import prepare_onnx

__all__ = ['import_onnx', 'convert_onnx']


def _module_names(model) -> list:
    """The converter's module name of each node, in graph order."""
    from onnx2torch.onnx_graph import OnnxGraph
    return list(OnnxGraph(model.graph).nodes)


def _export_opset_reachable() -> None:
    """Let onnx2torch's modules read the export opset under torch 2.13.

    They read it from the ``symbolic_helper`` onnx2torch imported; when
    ``torch.onnx.symbolic_helper`` was imported before onnx2torch, that is
    torch's deprecated stand-in, which holds neither ``GLOBALS`` nor the
    old private attribute, and every export of a Shape/Reshape/Slice module
    fails. Point it at the TorchScript exporter's own module.
    """
    from onnx2torch.utils import common
    if not hasattr(common.symbolic_helper, 'GLOBALS'):
        from torch.onnx._internal.torchscript_exporter import symbolic_helper
        common.symbolic_helper = symbolic_helper


def convert_onnx(model, normalize: bool = True
                 ) -> Tuple[fx.GraphModule, OnnxGraphInfo]:
    """Convert a checked ``onnx.ModelProto``: pre-passes, onnx2torch, then
    (``normalize``) the fx normalisation. Returns the float GraphModule in
    eval mode and the ONNX info behind it."""
    from onnx2torch import convert
    _export_opset_reachable()
    model = prepare_onnx(model)
    info = OnnxGraphInfo.from_model(model, _module_names(model))
    named = all(n.isidentifier() for n in info.input_names)
    # onnx2torch logs every converter it registers at DEBUG
    logging.getLogger('onnx2torch').setLevel(logging.WARNING)
    gm = convert(model, save_input_names=named)
    gm.eval()
    if normalize:
        info.fused = normalize_graph(gm, info)
    return gm, info


def import_onnx(path: str, normalize: bool = True
                ) -> Tuple[fx.GraphModule, OnnxGraphInfo]:
    """Check and convert the ONNX file at ``path``.

    Raises:
        FileNotFoundError, OnnxImportError: See
            :func:`.onnx_loader.load_onnx_model`; also an op the converter
            does not know (node name and op type).
    """
    model = load_onnx_model(path)
    check_supported_ops(model, path)
    return convert_onnx(model, normalize)
