"""``export_and_check(runtime=...)``: a backend's export checked in another
runtime than its declared one (what ``tools/demo.py --export`` reports: the
OpenVINO export in onnxruntime as well as in OpenVINO)."""
import os.path as osp

import pytest
import torch

from mmrazor_quant.deploy.config_export import ExportSettings, export_and_check
from mmrazor_quant.deploy.from_config import preprocessed_batches
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils import load_config
from mmrazor_quant.utils.data_pipeline import add_test_pipeline

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG = 'configs/quantization/ptq/ptq_openvino_resnet18_mnist.py'


@pytest.fixture(scope='module')
def calibrated():
    register_all_modules(init_default_scope=False)
    cfg = add_test_pipeline(load_config(osp.join(REPO, CONFIG)))
    cfg.model.architecture.backbone.update(
        type='ResNet_CIFAR', stem_channels=8, base_channels=8)
    cfg.model.architecture.head.in_channels = 64
    cfg.model.float_checkpoint = None
    torch.manual_seed(0)
    model = MODELS.build(cfg.model).eval()
    with torch.no_grad():
        for inputs, _ in preprocessed_batches(model, cfg, 32):
            model(inputs, mode='tensor')
    return model, cfg


@pytest.mark.parametrize('runtime', [None, 'onnxruntime'])
def test_export_checked_in_the_runtime_asked_for(calibrated, runtime,
                                                 tmp_path):
    model, cfg = calibrated
    settings = ExportSettings(backend='openvino')
    _, report = export_and_check(model, cfg, settings,
                                 str(tmp_path / 'model.onnx'), num_samples=32,
                                 log=lambda line: None, runtime=runtime)
    # None: the backend's declared runtime
    assert report.runtime == (runtime or 'openvino')
    assert report.num_samples == 32
    assert report.agreement >= 0.98
    assert report.sqnr_db >= 35
