"""A model with two inputs through the front door: the calibration folder
read by input name (one subfolder each), bias correction, export with both
names and a dynamic batch, and parity in onnxruntime and OpenVINO."""
import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from mmrazor_quant.apis.front_door import (
    export_model,
    load_model,
    quantize_model,
)


class _TwoInputs(nn.Module):

    def __init__(self):
        super().__init__()
        self.image_conv = nn.Conv2d(3, 8, 3, padding=1)
        self.aux_conv = nn.Conv2d(3, 8, 3, padding=1)
        self.head = nn.Linear(8, 4)

    def forward(self, image, aux):
        x = torch.relu(self.image_conv(image)) + torch.relu(
            self.aux_conv(aux))
        return self.head(x.mean((2, 3)))


def _two_input_onnx(tmp_path):
    torch.manual_seed(0)
    path = str(tmp_path / 'two.onnx')
    example = (torch.randn(1, 3, 16, 16), torch.randn(1, 3, 16, 16))
    torch.onnx.export(_TwoInputs().eval(), example, path,
                      input_names=['image', 'aux'], output_names=['scores'],
                      dynamic_axes={n: {0: 'n'}
                                    for n in ('image', 'aux', 'scores')},
                      opset_version=17, dynamo=False)
    return path


def _calib_folder(tmp_path, n=16):
    rng = np.random.default_rng(1)
    for name, offset in (('image', 0.), ('aux', 2.)):
        folder = tmp_path / 'calib' / name
        folder.mkdir(parents=True)
        for i in range(n):
            sample = rng.standard_normal((3, 16, 16), np.float32) + offset
            np.save(folder / f'{i:03d}.npy', sample)
    return str(tmp_path / 'calib')


def test_two_inputs_quantize_export_and_agree(tmp_path):
    model = load_model(_two_input_onnx(tmp_path))
    calib = _calib_folder(tmp_path)
    # the folder's subfolders are read by the model's input names
    qmodel = quantize_model(model, calib, backend='openvino')
    result, parity = export_model(qmodel, str(tmp_path / 'out.onnx'),
                                  backend='openvino', parity_data=calib)
    assert set(parity) == {'onnxruntime', 'openvino'}
    for runtime, report in parity.items():
        assert report.num_samples == 16
        assert report.sqnr_db >= 35, (runtime, report)
    exported = onnx.load(result.onnx_path)
    assert [i.name for i in exported.graph.input] == ['image', 'aux']
    assert [o.name for o in exported.graph.output] == ['scores']
    # each input is quantized by a QuantizeLinear of its own
    q_inputs = {n.input[0]: n for n in exported.graph.node
                if n.op_type == 'QuantizeLinear'}
    assert {'image', 'aux'} <= set(q_inputs)
    session = ort.InferenceSession(result.onnx_path,
                                   providers=['CPUExecutionProvider'])
    feeds = {n: np.zeros((3, 3, 16, 16), np.float32) for n in ('image',
                                                              'aux')}
    assert session.run(None, feeds)[0].shape == (3, 4)
