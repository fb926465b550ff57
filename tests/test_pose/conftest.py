"""mmpose's modules registered once; tiny RTMPose and SimpleBaseline built
from the repo's own configs; a batch of real keypoint digits."""
import copy
import os.path as osp
from typing import Optional

import pytest
import torch
from mmengine.config import Config

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
RTMPOSE = osp.join(REPO, 'configs/pose/rtmpose_t_digits.py')
SIMPLEBASELINE = osp.join(REPO, 'configs/pose/simplebaseline_r18_digits.py')
INPUT = 64


@pytest.fixture(scope='session', autouse=True)
def mmpose_modules():
    from mmpose.utils import register_all_modules
    register_all_modules(init_default_scope=False)


def rtmpose_cfg() -> dict:
    """RTMPose-t of configs/pose at an eighth of its width: CSPNeXt, the
    7x7 final conv, ScaleNorm + Linear, one GAU block and the two SimCC
    linears, as in the real head."""
    model = copy.deepcopy(Config.fromfile(RTMPOSE).model)
    model.backbone.update(widen_factor=0.125, deepen_factor=0.167)
    model.head.update(in_channels=128, gau_cfg=dict(
        model.head.gau_cfg, hidden_dims=32, s=16))
    return model


def simplebaseline_cfg() -> dict:
    """SimpleBaseline-R18 of configs/pose with 8 base channels and 16-wide
    deconvolutions."""
    model = copy.deepcopy(Config.fromfile(SIMPLEBASELINE).model)
    model.backbone.update(stem_channels=8, base_channels=8)
    model.head.update(in_channels=64, deconv_out_channels=(16, 16, 16))
    return model


def quant_cfg(arch: dict, backend: str = 'openvino', weight_bits: int = 8,
              asymmetric: bool = False, **kwargs) -> dict:
    """MMArchitectureQuant over ``arch`` with the PTQ configs' W8A8
    qconfig for ``backend`` (``asymmetric`` activations: RTMPose's
    OpenVINO config)."""
    signed = backend == 'tensorrt'
    a_qscheme = dict(qdtype='qint8' if signed else 'quint8', bit=8,
                     is_symmetry=not asymmetric,
                     is_symmetric_range=signed)
    return dict(
        type='mmrazor_quant.MMArchitectureQuant',
        architecture=arch,
        quantizer=dict(
            type=f'mmrazor_quant.{"TensorRT" if signed else "OpenVINO"}'
            'Quantizer',
            global_qconfig=dict(
                w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
                a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                w_qscheme=dict(qdtype='qint8', bit=weight_bits,
                               is_symmetry=True, is_symmetric_range=True),
                a_qscheme=a_qscheme),
            tracer=dict(type='mmrazor_quant.CustomTracer')),
        **kwargs)


@pytest.fixture(scope='session')
def digits_root(tmp_path_factory):
    """16 train and 16 val keypoint digits written to a temporary folder."""
    from mmrazor_quant.datasets import make_pose_digits_coco
    return make_pose_digits_coco(
        str(tmp_path_factory.mktemp('pose') / 'digits'), num_train=16,
        num_val=16)


@pytest.fixture(scope='session')
def digits_batch(digits_root):
    """The 16 val digits through the configs' test pipeline and data
    preprocessor: ``dict(inputs=(16, 3, 64, 64), data_samples=[...])``."""
    from mmengine.dataset import pseudo_collate
    from mmengine.registry import DefaultScope
    from mmpose.models import PoseDataPreprocessor

    from mmrazor_quant.datasets import PoseDigitsDataset
    cfg = Config.fromfile(RTMPOSE)
    with DefaultScope.overwrite_default_scope('mmpose'):
        dataset = PoseDigitsDataset(data_root=digits_root, split='val',
                                    test_mode=True,
                                    pipeline=cfg.val_pipeline)
        batch = pseudo_collate([dataset[i] for i in range(len(dataset))])
    preprocessor = PoseDataPreprocessor(mean=[0.] * 3, std=[255.] * 3)
    with torch.no_grad():
        return preprocessor(batch, False)


ARCHS = {'rtmpose': rtmpose_cfg, 'simplebaseline': simplebaseline_cfg}


@pytest.fixture(scope='session')
def calibrated(digits_batch):
    """``calibrated(arch, backend, weight_bits=8, asymmetric=None)``: the
    tiny model quantized for ``backend`` (asymmetric activations where its
    config has them, RTMPose for OpenVINO, unless ``asymmetric`` says) and
    calibrated on the 16 digits (observers off afterwards), built once per
    session; callers that train deep-copy it."""
    from mmrazor_quant.models.fake_quants.utils import disable_observer
    from mmrazor_quant.registry import MODELS
    cache = {}

    def get(arch: str, backend: str, weight_bits: int = 8,
            asymmetric: Optional[bool] = None):
        if asymmetric is None:
            asymmetric = (arch, backend) == ('rtmpose', 'openvino')
        key = arch, backend, weight_bits, asymmetric
        if key not in cache:
            torch.manual_seed(0)
            model = MODELS.build(quant_cfg(
                ARCHS[arch](), backend, weight_bits=weight_bits,
                asymmetric=asymmetric)).eval()
            with torch.no_grad():
                model(digits_batch['inputs'], mode='tensor')
            disable_observer(model)
            cache[key] = model
        return cache[key]

    return get
