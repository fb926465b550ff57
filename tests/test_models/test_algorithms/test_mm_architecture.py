"""MMArchitectureQuant around real mmcls models, for every backend."""
import copy

import pytest
import torch
from mmcls.structures import ClsDataSample

from mmrazor_quant.registry import MODELS, register_all_modules
from ...skips import CLS_HEAD_SKIPS
from ...toys import openvino_w8a8, tiny_mbv2, tiny_resnet

register_all_modules(init_default_scope=False)

RESNET = tiny_resnet(width=16)
MOBILENET = tiny_mbv2(widen_factor=0.5)

W_LSQ = dict(qdtype='qint8', bit=8, is_symmetry=True, is_symmetric_range=True)
A_SCHEMES = {
    'mmrazor_quant.TorchNativeQuantizer': dict(qdtype='quint8', bit=8),
    'mmrazor_quant.OpenVINOQuantizer': dict(qdtype='quint8', bit=8,
                                            is_symmetry=True),
    'mmrazor_quant.TensorRTQuantizer': W_LSQ,
    'mmrazor_quant.AcademicQuantizer': dict(qdtype='quint8', bit=4),
}


def lsq_model(arch, quantizer_type):
    w_qscheme = dict(W_LSQ, bit=4) if 'Academic' in quantizer_type else W_LSQ
    global_qconfig = dict(
        w_observer=dict(type='mmrazor_quant.LSQPerChannelObserver'),
        a_observer=dict(type='mmrazor_quant.LSQObserver'),
        w_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.LearnableFakeQuantize'),
        w_qscheme=w_qscheme,
        a_qscheme=A_SCHEMES[quantizer_type])
    return MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=copy.deepcopy(arch),
            quantizer=dict(
                type=quantizer_type,
                global_qconfig=global_qconfig,
                tracer=dict(
                    type='mmrazor_quant.CustomTracer',
                    skipped_methods=CLS_HEAD_SKIPS))))


def samples(labels):
    return [ClsDataSample().set_gt_label(int(i)) for i in labels]


@pytest.mark.parametrize('arch', [RESNET, MOBILENET], ids=['resnet', 'mbv2'])
@pytest.mark.parametrize('quantizer_type', list(A_SCHEMES))
def test_three_modes_and_backprop(arch, quantizer_type):
    torch.manual_seed(0)
    model = lsq_model(arch, quantizer_type)
    inputs = torch.randn(4, 3, 32, 32)
    labels = torch.tensor([0, 1, 2, 3])

    model.train()
    logits = model(inputs, mode='tensor')  # first batch: LSQ static init
    assert logits.shape == (4, 10)
    fqs = [m for m in model.modules() if hasattr(m, 'observer_enabled')]
    assert fqs and all(fq.is_initialized for fq in fqs)
    for fq in fqs:
        fq.disable_observer()

    losses = model(inputs, samples(labels), mode='loss')
    assert set(losses) == {'loss'} and torch.isfinite(losses['loss'])
    losses['loss'].backward()
    weights = [p for n, p in model.named_parameters()
               if n.endswith('conv.weight') or n.endswith('fc.weight')
               or n.endswith('.weight') and p.dim() == 4]
    assert weights and all(p.grad is not None and p.grad.abs().sum() > 0
                           for p in weights)
    scales = [p for n, p in model.named_parameters() if n.endswith('scale')]
    assert scales and all(p.grad is not None for p in scales)
    assert sum(float(p.grad.abs().sum() > 0) for p in scales) == len(scales)

    model.eval()
    preds = model(inputs, samples(labels), mode='predict')
    assert len(preds) == 4
    torch.testing.assert_close(
        torch.stack([p.pred_label.score for p in preds]),
        torch.softmax(model(inputs, mode='tensor'), 1))

    # principle 3 (docs/architecture.md): the three graphs call the same
    # quantizer objects
    fq_names = [n for n, m in model.architecture.named_modules()
                if hasattr(m, 'observer_enabled')]
    for name in fq_names:
        owners = {id(gm.get_submodule(name)) for gm in model.qmodels.values()}
        assert owners == {id(model.architecture.get_submodule(name))}


def test_state_dict_holds_each_tensor_once():
    model = lsq_model(RESNET, 'mmrazor_quant.OpenVINOQuantizer')
    keys = list(model.state_dict())
    assert all(k.startswith(('architecture.', 'data_preprocessor.'))
               for k in keys)
    assert any('act_fake_quants' in k for k in keys)


def _normalized(model, images):
    """``model``'s preprocessor applied to uint8 ``images``."""
    return model.data_preprocessor(dict(inputs=list(images)))['inputs']


def test_preprocessor_defaults_to_the_architectures_and_config_wins():
    """No ``data_preprocessor`` in the config: the wrapper runs the
    architecture's own (the configs of the detection, YOLO and pose PTQ
    bases rely on it); one in the config replaces it."""
    own = dict(type='mmcls.ClsDataPreprocessor', mean=[10., 20., 30.],
               std=[2., 4., 8.])
    arch = dict(copy.deepcopy(RESNET), data_preprocessor=own)
    images = torch.randint(0, 256, (2, 3, 8, 8), dtype=torch.uint8)
    mean = torch.tensor(own['mean']).view(1, 3, 1, 1)
    std = torch.tensor(own['std']).view(1, 3, 1, 1)

    model = MODELS.build(openvino_w8a8(arch))
    assert model.data_preprocessor is model.architecture.data_preprocessor
    torch.testing.assert_close(_normalized(model, images),
                               (images.float() - mean) / std)

    given = dict(type='mmcls.ClsDataPreprocessor', mean=[0.] * 3,
                 std=[1.] * 3)
    model = MODELS.build(dict(openvino_w8a8(arch), data_preprocessor=given))
    assert model.data_preprocessor is not \
        model.architecture.data_preprocessor
    torch.testing.assert_close(_normalized(model, images), images.float())


def test_unknown_forward_mode_is_an_error():
    with pytest.raises(ValueError, match='forward_modes must be'):
        MODELS.build(
            dict(
                type='mmrazor_quant.MMArchitectureQuant',
                architecture=copy.deepcopy(RESNET),
                forward_modes=('tensor', 'train'),
                quantizer=dict(type='mmrazor_quant.OpenVINOQuantizer',
                               global_qconfig={})))


def test_nan_activation_names_the_quantizer():
    model = lsq_model(RESNET, 'mmrazor_quant.OpenVINOQuantizer')
    model.eval()
    inputs = torch.randn(2, 3, 32, 32)
    inputs[0, 0, 0, 0] = float('nan')
    with pytest.raises(ValueError, match=r'inputs: observed NaN or inf'):
        model(inputs, mode='tensor')


def test_float_checkpoint_survives_init_weights(tmp_path):
    """Runner.train() calls init_weights() after building the model; the
    loaded float weights must stay."""
    from mmcls.models.backbones.resnet_cifar import ResNet_CIFAR  # noqa

    float_model = MODELS.build(copy.deepcopy(RESNET))
    with torch.no_grad():
        for p in float_model.parameters():
            p.fill_(0.0123)
    path = tmp_path / 'float.pth'
    torch.save(dict(state_dict=float_model.state_dict()), str(path))
    model = MODELS.build(
        dict(
            type='mmrazor_quant.MMArchitectureQuant',
            architecture=copy.deepcopy(RESNET),
            float_checkpoint=str(path),
            forward_modes=('tensor', ),
            quantizer=dict(
                type='mmrazor_quant.OpenVINOQuantizer',
                global_qconfig=dict(
                    w_observer=dict(
                        type='mmrazor_quant.PerChannelMinMaxObserver'),
                    a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
                    w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                    a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
                    w_qscheme=W_LSQ,
                    a_qscheme=A_SCHEMES['mmrazor_quant.OpenVINOQuantizer']))))
    model.init_weights()
    conv = model.architecture.backbone.conv1
    assert torch.all(conv.weight == 0.0123)
    assert torch.all(model.architecture.head.fc.weight == 0.0123)
