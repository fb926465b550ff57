"""Every config under ``configs/`` resolves completely.

``canonical(cfg)`` is a config after ``_base_`` inheritance, ``{{_base_.x}}``
substitution and ``_delete_``, as sorted JSON (tuples kept apart from lists,
the checkout's path written ``<repo>``). Refactoring the ``_base_`` layering
must leave every user-facing config's canonical form unchanged; dump it
before and compare after::

    python tests/test_configs/test_resolved_configs.py dump /tmp/before
    # ... move shared parts into bases ...
    python tests/test_configs/test_resolved_configs.py compare /tmp/before
"""
import glob
import json
import os.path as osp
import sys

import pytest
from mmengine.config import Config

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(REPO, 'configs')
# Every Python file under configs/: user-facing configs, deploy configs and
# the ``_base_`` fragments (a fragment may need its child's keys, so only
# the others must resolve on their own).
ALL_FILES = sorted(
    osp.relpath(p, CONFIG_DIR)
    for p in glob.glob(osp.join(CONFIG_DIR, '**', '*.py'), recursive=True))
USER_FACING = [f for f in ALL_FILES if '_base_' not in f.split(osp.sep)]
RUNNER_KEYS = {
    'model', 'model_wrapper_cfg', 'deploy_cfg', 'train_dataloader',
    'val_dataloader', 'test_dataloader', 'train_cfg', 'val_cfg', 'test_cfg',
    'optim_wrapper', 'param_scheduler', 'default_hooks', 'custom_hooks',
    'val_evaluator', 'test_evaluator'
}


def _plain(value):
    """JSON-ready: dicts with sorted keys, tuples tagged, paths repo-free."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {'__tuple__': [_plain(v) for v in value]}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return value.replace(REPO, '<repo>')
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return {'__repr__': repr(value)}


def canonical(name: str) -> str:
    """The resolved config ``configs/<name>`` as canonical JSON."""
    cfg = Config.fromfile(osp.join(CONFIG_DIR, name))
    return json.dumps(_plain(cfg.to_dict()), sort_keys=True, indent=1)


def _dump_name(name: str) -> str:
    return name.replace(osp.sep, '__') + '.json'


# 122 configs, about 30 s on two cores.
pytestmark = pytest.mark.slow


@pytest.mark.parametrize('name', USER_FACING)
def test_config_resolves_completely(name):
    resolved = json.loads(canonical(name))
    assert '_base_' not in resolved
    # No `_delete_` marker survives in what the Runner and the tools read
    # (one left behind means a key was meant to replace a base's key that
    # is not there). Helper keys such as ``pose_train_dataloader`` keep
    # theirs until a config merges them.
    for key in RUNNER_KEYS & set(resolved):
        assert '"_delete_"' not in json.dumps(resolved[key]), (name, key)


def dump(out_dir: str) -> None:
    import os
    os.makedirs(out_dir, exist_ok=True)
    for name in USER_FACING:
        with open(osp.join(out_dir, _dump_name(name)), 'w') as f:
            f.write(canonical(name))
    print(f'{len(USER_FACING)} configs written to {out_dir}')


def compare(before_dir: str) -> int:
    """Lists the configs whose resolved form differs from ``before_dir``."""
    import difflib
    changed, missing = [], []
    for name in USER_FACING:
        path = osp.join(before_dir, _dump_name(name))
        if not osp.exists(path):
            missing.append(name)
            continue
        with open(path) as f:
            before = f.read()
        after = canonical(name)
        if before != after:
            old, new = json.loads(before), json.loads(after)
            keys = sorted(k for k in set(old) | set(new)
                          if old.get(k) != new.get(k))
            changed.append(f'{name} {keys}')
            sys.stdout.writelines(difflib.unified_diff(
                before.splitlines(True), after.splitlines(True),
                'before/' + name, 'after/' + name, n=2))
    print(f'{len(USER_FACING)} configs: {len(changed)} changed, '
          f'{len(missing)} new {missing}')
    print('\n'.join(f'changed (top-level keys): {c}' for c in changed))
    return 1 if changed else 0


if __name__ == '__main__':
    command, directory = sys.argv[1:3]
    sys.exit(dump(directory) if command == 'dump' else compare(directory))
