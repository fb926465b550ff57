"""mmpretrain (mmcls's successor): its adapter, and MMRazor's ImageNet PTQ
config rewritten onto ``mmpretrain::`` bases run through the tools as a
user runs it (``configs/quantization/ptq/mmpretrain/``). The zoo's families
under ``mmpretrain::`` are in tests/test_zoo."""
import re

import pytest
import torch

from mmrazor_quant.models.codebases import (
    MMClsCodebase,
    MMPretrainCodebase,
    codebase_of,
)
from ..int8_host import int8_weight_bits
from ..test_tools.test_mmrazor_verbatim import (  # noqa: F401 (fixture)
    check_scales,
    graph_dims,
    imagenet_dir,
    run_tool,
    small_run_options,
)

CONFIG = ('configs/quantization/ptq/mmpretrain/'
          'ptq_openvino_resnet18_8xb32_in1k_calib32xb32.py')


def _classifier(scope: str):
    from mmengine.hub import get_config
    from mmengine.registry import init_default_scope

    from mmrazor_quant.registry import MODELS
    cfg = get_config(f'{scope}::resnet/resnet18_8xb16_cifar10.py')
    init_default_scope(scope)
    return MODELS.build(cfg.model)


def test_mmpretrain_models_get_their_own_adapter():
    """mmpretrain's classifier is not mmcls's: its own adapter, whose data
    samples carry ``gt_label`` as a tensor and ``pred_score``."""
    model = _classifier('mmpretrain')
    adapter = codebase_of(model)
    assert type(adapter) is MMPretrainCodebase
    assert type(codebase_of(_classifier('mmcls'))) is MMClsCodebase
    x = torch.zeros(3, 3, 32, 32)
    samples = adapter.dummy_data_samples(x, torch.zeros(3, 10))
    assert adapter.gt_labels(samples).tolist() == [0, 1, 2]
    model.eval()
    with torch.no_grad():
        logits = model(x, mode='tensor')
        predicted = model(x, samples, mode='predict')
    assert torch.allclose(adapter.pred_scores(predicted), logits.softmax(-1))
    # Default skips, so a config need not list mmpretrain's head methods.
    assert adapter.skipped_methods == (
        'mmpretrain.models.heads.ClsHead._get_loss',
        'mmpretrain.models.heads.ClsHead._get_predictions')


@pytest.mark.slow  # the tools end to end, as test_mmrazor_verbatim
def test_mmrazor_imagenet_config_on_mmpretrain_runs_and_exports(
        imagenet_dir, tmp_path, monkeypatch, capsys):  # noqa: F811
    """tools/ptq.py --export and tools/test.py on the mmpretrain config, at
    32x32 on a JPEG folder in ImageNet's layout."""
    work_dir = tmp_path / 'work'
    options = small_run_options(imagenet_dir, ptq=True) + [
        f'test_cfg.calibrate_dataloader.dataset.data_root={imagenet_dir}',
        'test_cfg.calibrate_dataloader.batch_size=2',
        'test_cfg.calibrate_dataloader.num_workers=0',
        'test_cfg.calibrate_dataloader.dataset.pipeline.1.scale=36',
        'test_cfg.calibrate_dataloader.dataset.pipeline.2.crop_size=32',
        'model.quantizer.global_qconfig.w_qscheme.bit='
        f'{int8_weight_bits()}']
    run_tool('ptq', [CONFIG, '--work-dir', str(work_dir), '--export',
                     '--num-samples', '4', '--cfg-options'] + options,
             monkeypatch)
    out = capsys.readouterr().out
    checkpoint = str(work_dir / 'model_ptq.pth')
    assert check_scales(checkpoint) > 20
    assert graph_dims(str(work_dir / 'end2end.onnx')) == {
        'input': ['batch', 3, 'height', 'width'], 'output': ['batch', 1000]}
    assert 'parity with the simulation (openvino, 4 samples)' in out, out
    sqnr = re.search(r'output SQNR\s*:\s*(\S+) dB', out)
    assert sqnr and float(sqnr.group(1)) > 25, out

    run_tool('test', [CONFIG, checkpoint, '--work-dir', str(work_dir),
                      '--cfg-options', 'test_cfg.only_val=True'] + options,
             monkeypatch)
    top1 = re.search(r'accuracy/top1: ([\d.]+)', capsys.readouterr().out)
    assert top1 and 0 <= float(top1.group(1)) <= 100


def test_mmpretrain_imports_without_torchvision_ops():
    """torchvision is installed without its C++ ops (mk/codebases.sh):
    mmpretrain.models imports, the ops it does not use stay absent."""
    import mmpretrain.models  # noqa: F401
    import torchvision
    from torchvision.extension import _has_ops
    assert not _has_ops()
    assert torchvision.ops.box_iou(
        torch.tensor([[0., 0., 2., 2.]]),
        torch.tensor([[1., 1., 3., 3.]])).item() == pytest.approx(1 / 7)
