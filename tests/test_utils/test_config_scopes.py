"""A config inheriting from a codebase that is not installed, or from a
scope mmengine does not know, fails at load time naming the entry."""
import pytest

from mmrazor_quant.utils import config_scopes, load_config
from mmrazor_quant.utils.config_scopes import base_entries


def _write(path, text):
    path.write_text(text)
    return str(path)


def test_uninstalled_codebase_names_the_entry_and_the_install(tmp_path):
    # mmtrack is a scope mmengine knows; it is not installed here
    cfg = _write(tmp_path / 'a.py',
                 "_base_ = ['mmtrack::sort/sort_faster-rcnn.py']\n")
    with pytest.raises(ModuleNotFoundError) as info:
        load_config(cfg)
    message = str(info.value)
    assert "`_base_` entry 'mmtrack::sort/sort_faster-rcnn.py'" in message
    assert "codebase 'mmtrack' (pip package 'mmtrack'), which is not " \
        'installed: install it with `pip install mmtrack`' in message
    assert info.value.name == 'mmtrack'


def test_missing_pinned_codebase_points_at_make_codebases(
        tmp_path, monkeypatch):
    # mmseg absent: what a machine without `make codebases` sees
    real = config_scopes.importlib.util.find_spec
    monkeypatch.setattr(
        config_scopes.importlib.util, 'find_spec',
        lambda name, *a: None if name == 'mmseg' else real(name, *a))
    base = _write(tmp_path / 'base.py',
                  "_base_ = 'mmseg::_base_/models/fast_scnn.py'\n")
    cfg = _write(tmp_path / 'child.py', "_base_ = ['./base.py']\nx = 1\n")
    with pytest.raises(ModuleNotFoundError,
                       match=r"config '.*base\.py': `_base_` entry "
                       r"'mmseg::_base_/models/fast_scnn\.py' inherits from "
                       r"the codebase 'mmseg' \(pip package 'mmsegmentation'"
                       r"\), which is not installed: install it with `make "
                       r'codebases`.* or `pip install mmsegmentation`'):
        load_config(cfg)
    assert base_entries(base) == ['mmseg::_base_/models/fast_scnn.py']


def test_unknown_scope_lists_the_known_ones(tmp_path):
    cfg = _write(tmp_path / 'a.py', "_base_ = ['mmfoo::fcn/x.py']\n")
    with pytest.raises(ValueError,
                       match=r"`_base_` entry 'mmfoo::fcn/x\.py' names the "
                       r"scope 'mmfoo', which mmengine cannot load configs "
                       r'from; known scopes: .*mmseg'):
        load_config(cfg)


def test_installed_scope_loads(tmp_path):
    cfg = _write(tmp_path / 'a.py',
                 "_base_ = ['mmseg::_base_/models/fast_scnn.py']\n")
    assert load_config(cfg).model.type == 'EncoderDecoder'
