"""configs/demo/seg.py: every run names an existing config of its model,
with the issue's targets."""
import os.path as osp

from mmengine.config import Config

from mmrazor_quant.utils import load_config

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))


def test_every_run_loads_and_points_at_its_float_model():
    demo = Config.fromfile(osp.join(REPO, 'configs', 'demo', 'seg.py'))
    assert demo.metric == 'mIoU'
    assert len(demo.runs) == 8
    allowed = {'PTQ': 1.0, 'LSQ QAT': 0.5}
    for run in demo.runs:
        cfg = load_config(osp.join(REPO, run['config']))
        stem = osp.splitext(osp.basename(demo.fp32[run['model']]))[0]
        # tools/demo.py writes the float model there
        assert cfg.model.float_checkpoint == \
            f'work_dirs/fp32/{stem}/float.pth'
        if run['bits'] == 'W8A8':
            assert run['allowed'] == allowed[run['method']]
