"""Bad model files: each a clear error naming the file and what is wrong,
raised before anything is converted or written."""
import os.path as osp
import shutil

import onnx
import pytest
from onnx import TensorProto, helper

from mmrazor_quant.apis.front_door import quantize_file
from mmrazor_quant.frontends.onnx_import import import_onnx
from mmrazor_quant.frontends.onnx_loader import (
    SUPPORTED_OPSETS,
    OnnxImportError,
)


def test_truncated_file(toy_onnx, tmp_path):
    data = open(toy_onnx, 'rb').read()
    path = tmp_path / 'cut.onnx'
    path.write_bytes(data[:len(data) // 2])
    with pytest.raises(OnnxImportError, match='cut.onnx: .*truncated'):
        import_onnx(str(path))


def test_empty_and_missing_file(tmp_path):
    (tmp_path / 'empty.onnx').write_bytes(b'')
    with pytest.raises(OnnxImportError, match='empty'):
        import_onnx(str(tmp_path / 'empty.onnx'))
    with pytest.raises(FileNotFoundError, match='nothing.onnx'):
        import_onnx(str(tmp_path / 'nothing.onnx'))


def test_external_data_outside_the_folder(toy_onnx, tmp_path):
    """A tensor whose data file lies in the parent folder is refused, even
    though the file exists there."""
    model = onnx.load(toy_onnx)
    tensor = max(model.graph.initializer, key=lambda t: len(t.raw_data))
    (tmp_path / 'weights.bin').write_bytes(tensor.raw_data)
    folder = tmp_path / 'model'
    folder.mkdir()
    onnx.external_data_helper.set_external_data(tensor, '../weights.bin')
    tensor.ClearField('raw_data')
    onnx.save(model, str(folder / 'model.onnx'))
    with pytest.raises(OnnxImportError,
                       match=f"{tensor.name}.*'../weights.bin'.*outside"):
        import_onnx(str(folder / 'model.onnx'))


def _single_op_model(op_type: str, opset: int) -> onnx.ModelProto:
    x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [2, 4])
    node = helper.make_node(op_type, ['x'], ['y'], name='/head/argmax_1')
    graph = helper.make_graph([node], 'g', [x], [y])
    return helper.make_model(graph,
                             opset_imports=[helper.make_opsetid('', opset)])


def test_unknown_op_names_node_and_type(tmp_path):
    # Hardmax is standard ONNX, but the importer has no conversion for it
    path = str(tmp_path / 'hardmax.onnx')
    onnx.save(_single_op_model('Hardmax', 13), path)
    with pytest.raises(OnnxImportError,
                       match=r'no conversion for 1 node\(s\): '
                       r'/head/argmax_1 \(Hardmax\)'):
        import_onnx(path)


@pytest.mark.parametrize('opset', [SUPPORTED_OPSETS[1] + 1])
def test_opset_out_of_range(tmp_path, opset):
    path = str(tmp_path / 'new.onnx')
    onnx.save(_single_op_model('Relu', opset), path)
    with pytest.raises(OnnxImportError,
                       match=f'opset {opset} is outside the importer.s '
                       f'range {SUPPORTED_OPSETS[0]}-{SUPPORTED_OPSETS[1]}'):
        import_onnx(path)


def test_nothing_written_on_bad_model(toy_onnx, calib_dir, tmp_path):
    data = open(toy_onnx, 'rb').read()
    bad = tmp_path / 'cut.onnx'
    bad.write_bytes(data[:1000])
    out = tmp_path / 'out' / 'model_int8.onnx'
    with pytest.raises(OnnxImportError):
        quantize_file(str(bad), calib_dir, 'openvino', str(out))
    assert not osp.exists(out) and not osp.exists(out.parent)
    shutil.rmtree(tmp_path, ignore_errors=True)
