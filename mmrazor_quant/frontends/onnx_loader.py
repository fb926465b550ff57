"""Read an ONNX file the way the importer needs it, refusing bad files.

Every check runs before anything is converted or written, and each error
names the file and what is wrong with it: external data that points
outside the model's folder, a truncated or otherwise unreadable file, an
opset outside :data:`SUPPORTED_OPSETS`, a node whose op the importer has
no converter for (node name and op type).
"""
import os
import os.path as osp
from typing import List, Tuple

__all__ = ['SUPPORTED_OPSETS', 'load_onnx_model', 'check_supported_ops',
           'OnnxImportError']

#: Opsets of the default ONNX domain the importer converts (inclusive).
#: 9 is the oldest torch.onnx and Paddle2ONNX write; 21 the newest opset
#: onnx2torch 1.5.15 registers converters for.
SUPPORTED_OPSETS: Tuple[int, int] = (9, 21)


class OnnxImportError(ValueError):
    """An ONNX file the importer cannot take (a ``ValueError``)."""


def _check_external_data(model, path: str) -> None:
    """Raise if a tensor's external data lies outside the model's folder."""
    from onnx.external_data_helper import _get_all_tensors
    folder = osp.realpath(osp.dirname(osp.abspath(path)))
    for tensor in _get_all_tensors(model):
        if tensor.data_location != 1:  # onnx.TensorProto.EXTERNAL
            continue
        location = next((e.value for e in tensor.external_data
                         if e.key == 'location'), '')
        target = osp.realpath(osp.join(folder, location))
        if osp.isabs(location) or \
                osp.commonpath([folder, target]) != folder:
            raise OnnxImportError(
                f'{path}: tensor {tensor.name!r} keeps its data at '
                f'{location!r}, outside the model\'s folder {folder}; '
                'external data must sit next to the model file')
        if not osp.isfile(target):
            raise OnnxImportError(
                f'{path}: tensor {tensor.name!r} keeps its data in '
                f'{location!r}, which does not exist')


def load_onnx_model(path: str):
    """Load ``path`` (and its external data) as an ``onnx.ModelProto``.

    Raises:
        FileNotFoundError: If ``path`` is not a file.
        OnnxImportError: If the file is truncated or not ONNX, its external
            data points outside its folder, or ``onnx.checker`` rejects it.
    """
    import onnx
    from google.protobuf.message import DecodeError
    if not osp.isfile(path):
        raise FileNotFoundError(f'ONNX model {path!r} does not exist')
    if os.path.getsize(path) == 0:
        raise OnnxImportError(f'{path}: the file is empty')
    try:
        model = onnx.load(path, load_external_data=False)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise OnnxImportError(
            f'{path}: not a readable ONNX model (truncated or not ONNX: '
            f'{type(e).__name__}: {e})') from e
    if not model.graph.node or not model.graph.output:
        raise OnnxImportError(
            f'{path}: the file holds no graph (truncated or not ONNX)')
    _check_external_data(model, path)
    from onnx.external_data_helper import load_external_data_for_model
    load_external_data_for_model(model, osp.dirname(osp.abspath(path)))
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as e:
        first = str(e).strip().splitlines()[0]
        raise OnnxImportError(f'{path}: onnx.checker rejects the model: '
                           f'{first}') from e
    check_opset(model, path)
    return model


def default_opset(model) -> int:
    """The model's opset of the default ONNX domain."""
    for entry in model.opset_import:
        if entry.domain in ('', 'ai.onnx'):
            return entry.version
    raise OnnxImportError('the model imports no opset of the default ONNX '
                       'domain')


def check_opset(model, path: str) -> None:
    """Raise if the default-domain opset is outside :data:`SUPPORTED_OPSETS`.
    """
    opset = default_opset(model)
    low, high = SUPPORTED_OPSETS
    if not low <= opset <= high:
        raise OnnxImportError(
            f'{path}: opset {opset} is outside the importer\'s range '
            f'{low}-{high}; convert it with onnx.version_converter first')


def check_supported_ops(model, path: str) -> None:
    """Raise naming every node whose op the importer cannot convert.

    Raises:
        OnnxImportError: Listing node names and op types (domain too when not
            the default one).
    """
    from onnx import defs
    from onnx2torch.node_converters.registry import get_converter
    opsets = {e.domain if e.domain != 'ai.onnx' else '': e.version
              for e in model.opset_import}
    missing: List[str] = []
    for node in model.graph.node:
        domain = node.domain if node.domain != 'ai.onnx' else ''
        try:
            get_converter(node.op_type, opsets.get(domain, 1), domain)
        except (NotImplementedError, defs.SchemaError):
            op = f'{domain}.{node.op_type}' if domain else node.op_type
            missing.append(f'{node.name or "(unnamed)"} ({op})')
    if missing:
        raise OnnxImportError(
            f'{path}: the importer has no conversion for '
            f'{len(missing)} node(s): {", ".join(missing[:10])}'
            + (' ...' if len(missing) > 10 else ''))
