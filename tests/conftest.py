"""Suite-wide hooks: skips tests marked ``cuda`` on machines without a CUDA
GPU; marks the slow areas ``slow`` (``make test-fast`` leaves them out);
under pytest-xdist (``make test`` runs two workers), keeps the Slurm tests,
and the tests sharing a module's or a costly session fixture, on one worker
and shares the cores between the workers; prints the time spent
per test area at the end of a run."""
import os
import os.path as osp
from collections import defaultdict

import pytest
import torch

TESTS = osp.dirname(osp.abspath(__file__))
# Whole directories and files of the slow tier, relative to tests/ (single
# slow tests elsewhere carry ``@pytest.mark.slow`` themselves); chosen from
# measured durations, docs/testing.md.
SLOW_PATHS = (
    'test_zoo',  # 32 families of mmcls and mmpretrain, traced and exported
    'test_models/test_compile.py',  # torch.compile (dynamo, inductor)
    'test_engine/test_compile_runner.py',
    'test_slurm/test_slurm_launch.py',  # a Slurm cluster and 10 processes
    'test_engine/test_distributed_ptq.py',  # two ranks over gloo
    'test_models/test_observers/test_distributed_observers.py',
    'test_tools/test_mmrazor_verbatim.py',  # the tools end to end
    'test_tools/test_fp32_train.py',
    'test_detection/test_mmrazor_configs.py',
    'test_deploy/test_parity_matrix.py',  # every arch x algorithm
)


# Tests that ``make test`` leaves out and ``make test-all`` runs (marked
# ``extended``, and ``slow`` too): variants of a slow test whose code path a
# cheaper test of the default run already takes (another model of the same
# kind, the other fake quant through the same compiler, a second launcher
# run), chosen from measured durations so that ``make test`` fits its time
# on the slower CPUs (docs/testing.md). Node ids relative to tests/, without
# the ``@group`` suffix.
EXTENDED_TESTS = (
    'test_models/test_compile.py::'
    'test_compiled_equals_eager_through_switches[lsq]',
    'test_models/test_compile.py::test_no_graph_break[fake_quantize]',
    'test_engine/test_compile_runner.py::test_compiled_runner_matches_eager',
    'test_slurm/test_slurm_launch.py::test_lsq_qat_slurm_equals_dist_train',
    'test_zoo/test_mmcls_families.py::'
    'test_family_quantizes_trains_and_deploys[swin-mmcls]',
    'test_zoo/test_mmcls_families.py::'
    'test_family_quantizes_trains_and_deploys[efficientnet-mmcls]',
    'test_tools/test_mmrazor_verbatim.py::'
    'test_ptq_config_runs_and_exports_as_its_deploy_cfg[resnet50-tensorrt]',
    'test_tools/test_mmrazor_verbatim.py::'
    'test_ptq_config_runs_and_exports_as_its_deploy_cfg[resnet50-openvino]',
    'test_tools/test_mmrazor_verbatim.py::'
    'test_ptq_config_runs_and_exports_as_its_deploy_cfg[mbv2-tensorrt]',
    'test_tools/test_mmrazor_verbatim.py::'
    'test_ptq_config_runs_and_exports_as_its_deploy_cfg[mbv2-openvino]',
    'test_detection/test_mmrazor_configs.py::'
    'test_ptq_tool_runs_on_coco_folder[key1]',
    'test_deploy/test_parity_matrix.py::test_mobilenetv2_w4a4_opset21',
    'test_deploy/test_export_parity.py::'
    'test_every_opset_exports_its_own_qdq[19]',
    'test_deploy/test_export_parity.py::'
    'test_every_opset_exports_its_own_qdq[20]',
    'test_zoo/test_mmcls_families.py::'
    'test_family_quantizes_trains_and_deploys[deit-mmpretrain]',
    'test_configs/test_configs.py::test_imagenet_config_steps_on_random_'
    'images[quantization/ptq/ptq_tensorrt_resnet50_8xb32_in1k_calib32xb32.py]',
    'test_configs/test_configs.py::test_imagenet_config_steps_on_random_'
    'images[quantization/ptq/ptq_tensorrt_mbv2_8xb32_in1k_calib32xb32.py]',
)


# Session fixtures that take tens of seconds to build (CPU seconds on a
# 2-core VNNI Xeon): all their tests run on one pytest-xdist worker.
COSTLY_SESSION_FIXTURES = (
    'float_weights',  # test_deploy: ResNet and MobileNetV2 trained, 40 s
)


def _read_mim_metafiles_once():
    """Keep the metafiles mmengine reads for ``mmcls::``-style bases.

    For each such base ``Config.fromfile`` loads the codebase's
    ``.mim/model-index.yml`` and every ``metafile.yml`` it lists (mmcls:
    62 YAML files, mmdet: 200) to find one config's path: about half of a
    test's time where it only loads a config. The files belong to the
    installed packages and do not change during a run, so each is parsed
    once per process; what ``Config.fromfile`` returns is unchanged.
    """
    from mmengine.config import utils
    load = utils.load
    if getattr(load, 'reads_once', False):
        return
    parsed = {}

    def load_once(file, *args, **kwargs):
        if args or kwargs or not isinstance(file, str):
            return load(file, *args, **kwargs)
        if file not in parsed:
            parsed[file] = load(file)
        return parsed[file]

    load_once.reads_once = True
    utils.load = load_once


def pytest_configure(config):
    _read_mim_metafiles_once()
    workers = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '0'))
    if workers > 1:
        # Each worker gets its share of the cores, and so do the tools and
        # ranks it starts: spinning OpenMP threads of two workers on the
        # same cores would slow both.
        threads = str(max(1, (os.cpu_count() or 1) // workers))
        os.environ['OMP_NUM_THREADS'] = threads
        torch.set_num_threads(int(threads))


def _slow_paths():
    paths = [osp.join(TESTS, p) for p in SLOW_PATHS]
    missing = [p for p in paths if not osp.exists(p)]
    if missing:
        raise pytest.UsageError(
            f'tests/conftest.py SLOW_PATHS names missing paths: {missing}')
    return tuple(p.rstrip(os.sep) for p in paths)


def _extended_tests(config, items) -> set:
    """The collected items ``EXTENDED_TESTS`` names. When whole files are
    collected, a name that matches none of their tests is an error: a
    renamed test would otherwise move back into ``make test`` unnoticed."""
    by_id = {}
    for item in items:
        rel = osp.relpath(str(item.path), TESTS).replace(os.sep, '/')
        by_id[f'{rel}::{item.name}'] = item
    found = {by_id[n] for n in EXTENDED_TESTS if n in by_id}
    if any('::' in arg for arg in config.args):
        return found
    collected_files = {n.split('::')[0] for n in by_id}
    missing = [
        n for n in EXTENDED_TESTS
        if n.split('::')[0] in collected_files and n not in by_id
    ]
    if missing:
        raise pytest.UsageError(
            f'tests/conftest.py EXTENDED_TESTS names missing tests: {missing}')
    return found


def _fixture_groups(items) -> dict:
    """``{item: group}`` for the tests that share a costly fixture build.

    ``--dist loadgroup`` deals ungrouped tests out one at a time, so the
    tests of one module alternate between the workers and each worker would
    build the module's module-scoped fixtures (an export, a calibrated
    model) again. The tests of a module that uses one form a group, and so
    do all tests of ``COSTLY_SESSION_FIXTURES`` (groups that share a test
    merge); tests with their own ``xdist_group`` keep it.
    """
    parent = {}

    def root(key):
        while parent.setdefault(key, key) != key:
            key = parent[key]
        return key

    first_key = {}
    for item in items:
        info = getattr(item, '_fixtureinfo', None)
        if info is None or item.get_closest_marker('xdist_group'):
            continue
        keys = []
        for name, defs in info.name2fixturedefs.items():
            scope = defs[-1].scope if defs else 'function'
            if scope in ('class', 'module'):
                keys.append(osp.relpath(str(item.path), TESTS))
            elif scope == 'session' and name in COSTLY_SESSION_FIXTURES:
                keys.append(name)
        if keys:
            for key in keys:
                parent[root(key)] = root(keys[0])
            first_key[item] = keys[0]
    # A group is named after its session fixture, else its module.
    names = {}
    for key in sorted(parent, key=lambda k: k not in COSTLY_SESSION_FIXTURES):
        names.setdefault(root(key), key)
    return {item: names[root(key)] for item, key in first_key.items()}


def _name_xdist_groups(config, items):
    """Append ``@<group>`` to the node id of each ``xdist_group`` test, as
    pytest-xdist's ``--dist loadgroup`` does: its own renaming (of
    ``item._nodeid``) no longer reaches the node id in pytest 9.2, which
    keeps it in ``item._id``, and without the suffix the groups are
    ignored."""
    # ``loadgroup`` is an option of pytest-xdist's workers only.
    if not getattr(config.option, 'loadgroup', False) or not items or \
            not hasattr(items[0], '_id'):
        return
    from _pytest.nodeid import NodeId
    for item in items:
        names = sorted({str(m.args[0] if m.args else m.kwargs.get(
            'name', 'default')) for m in item.iter_markers('xdist_group')})
        if names and '@' not in item.nodeid.rsplit(']', 1)[-1]:
            item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(names)}")


# Before pytest-xdist's own hook, which reads the xdist_group marks.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    slow_paths = _slow_paths()
    slow = pytest.mark.slow
    # One test Slurm cluster at a time (its daemons use fixed ports).
    slurm = pytest.mark.xdist_group('slurm')
    extended = _extended_tests(config, items)
    for item in items:
        if 'test_slurm' in item.nodeid.split('/'):
            item.add_marker(slurm)
        path = str(item.path)
        if any(path == p or path.startswith(p + os.sep) for p in slow_paths):
            item.add_marker(slow)
        if item in extended:
            item.add_marker(slow)
            item.add_marker(pytest.mark.extended)
    for item, group in _fixture_groups(items).items():
        item.add_marker(pytest.mark.xdist_group(group))
    _name_xdist_groups(config, items)
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason='needs a CUDA GPU')
    for item in items:
        if item.get_closest_marker('cuda') is not None:
            item.add_marker(skip)


def _area(nodeid: str) -> str:
    """``tests/test_deploy`` for ``tests/test_deploy/test_x.py::test_y``."""
    parts = nodeid.split('::')[0].split('/')
    return '/'.join(parts[:2])


def pytest_terminal_summary(terminalreporter):
    # Setup, call and teardown of every test, from the reports (under xdist
    # the workers' reports reach the controller with their durations).
    seconds = defaultdict(float)
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, 'when', None) and hasattr(report, 'duration'):
                seconds[_area(report.nodeid)] += report.duration
    if not seconds:
        return
    write = terminalreporter.write_line
    terminalreporter.section('time per test area (sum of test durations)')
    for area, sec in sorted(seconds.items(), key=lambda kv: -kv[1]):
        write(f'{sec:8.1f} s  {area}')
    write(f'{sum(seconds.values()):8.1f} s  total')
