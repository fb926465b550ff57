"""A backend's quantization scheme is written once, in a ``_base_`` file.

``configs/quantization/_base_/qconfigs/<backend>_w8a8*.py`` hold each
backend's W8A8 scheme (its quantizer and ``global_qconfig``); model configs
inherit one and state only what differs. These tests pin the scheme files
to the backends' own W8A8 schemes, check that a config naming a scheme file
quantizes with it, and that no config spells out a scheme file's qconfig
inline.
"""
import glob
import os.path as osp
import re

import pytest
from mmengine.config import Config

from mmrazor_quant.backends.base import get_backend
from mmrazor_quant.registry import MODELS, register_all_modules

REPO = osp.dirname(osp.dirname(osp.dirname(osp.abspath(__file__))))
CONFIG_DIR = osp.join(REPO, 'configs')
SCHEME_DIR = osp.join(CONFIG_DIR, 'quantization', '_base_', 'qconfigs')
SCHEMES = sorted(
    osp.basename(p)[:-3] for p in glob.glob(osp.join(SCHEME_DIR, '*.py')))
QUANT_CONFIGS = sorted(
    osp.relpath(p, CONFIG_DIR) for p in glob.glob(
        osp.join(CONFIG_DIR, 'quantization', '**', '*.py'), recursive=True)
    if not {'_base_', 'deploy_cfgs'} & set(
        osp.relpath(p, CONFIG_DIR).split(osp.sep)))
QCONFIG_KEYS = ('w_observer', 'a_observer', 'w_fake_quant', 'a_fake_quant',
                'w_qscheme', 'a_qscheme')


def scheme_cfg(scheme: str) -> Config:
    return Config.fromfile(osp.join(SCHEME_DIR, scheme + '.py'))


def own_schemes(name: str) -> list:
    """The scheme files a config names in its own ``_base_`` list."""
    with open(osp.join(CONFIG_DIR, name)) as f:
        text = f.read()
    return re.findall(r"qconfigs/(\w+)\.py'", text)


def test_every_backend_scheme_is_used():
    assert SCHEMES, SCHEME_DIR
    used = {s for name in QUANT_CONFIGS for s in own_schemes(name)}
    for name in glob.glob(osp.join(CONFIG_DIR, '**', '_base_', '*.py'),
                          recursive=True):
        with open(name) as f:
            used |= set(re.findall(r"qconfigs/(\w+)\.py'", f.read()))
    assert set(SCHEMES) <= used, sorted(set(SCHEMES) - used)


@pytest.mark.parametrize('scheme', SCHEMES)
def test_scheme_is_the_backends_w8a8(scheme):
    backend = get_backend(scheme.split('_')[0])
    cfg = scheme_cfg(scheme)
    qconfig = cfg.global_qconfig.to_dict()
    # The quantizer carries the same dict the file exports.
    assert cfg.quantizer.type == 'mmrazor_quant.' + backend.quantizer
    assert cfg.quantizer.global_qconfig.to_dict() == qconfig
    assert set(qconfig) == set(QCONFIG_KEYS)
    # Weights: exactly the backend's W8A8 weight grid.
    assert qconfig['w_qscheme'] == backend.w8a8['w_qscheme']
    # Activations: the backend's dtype and width; symmetric unless the
    # scheme's name says asymmetric.
    w8a8_act = backend.w8a8['a_qscheme']
    act = qconfig['a_qscheme']
    assert (act['qdtype'], act['bit']) == (w8a8_act['qdtype'],
                                           w8a8_act['bit'])
    assert act['is_symmetry'] is (not scheme.endswith('_asym'))
    assert ('lsq' in scheme) is (
        qconfig['w_fake_quant']['type'] ==
        'mmrazor_quant.LearnableFakeQuantize')


@pytest.mark.parametrize('scheme', SCHEMES)
def test_scheme_builds_its_backends_quantizer(scheme):
    register_all_modules(init_default_scope=False)
    backend = get_backend(scheme.split('_')[0])
    quantizer = MODELS.build(scheme_cfg(scheme).quantizer.to_dict())
    assert type(quantizer).__name__ == backend.quantizer


@pytest.mark.parametrize(
    'name', [n for n in QUANT_CONFIGS if own_schemes(n)])
def test_config_quantizes_with_its_scheme(name):
    """A config that names a scheme file keeps its quantizer type and
    qconfig; it may only add tracer settings."""
    (scheme, ) = own_schemes(name)
    expected = scheme_cfg(scheme).quantizer.to_dict()
    quantizer = Config.fromfile(osp.join(CONFIG_DIR,
                                         name)).model.quantizer.to_dict()
    assert quantizer['type'] == expected['type']
    assert quantizer['global_qconfig'] == expected['global_qconfig']
    assert set(quantizer) - {'tracer'} == set(expected) - {'tracer'}


def test_no_config_writes_a_scheme_inline():
    """A complete qconfig written in a config for a backend is not one that
    backend's scheme file already holds (the config inherits that file)."""
    schemes = {
        s: scheme_cfg(s).quantizer.to_dict()
        for s in SCHEMES
    }
    inline = []
    for name in QUANT_CONFIGS:
        with open(osp.join(CONFIG_DIR, name)) as f:
            text = f.read()
        if not all(f'{key}=' in text for key in QCONFIG_KEYS):
            continue
        quantizer = Config.fromfile(osp.join(CONFIG_DIR,
                                             name)).model.quantizer.to_dict()
        inline += [(name, s) for s, q in schemes.items()
                   if (q['type'], q['global_qconfig']) == (
                       quantizer['type'], quantizer['global_qconfig'])]
    assert not inline, inline

