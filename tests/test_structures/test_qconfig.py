"""global_qconfig validation names the key at fault."""
import pytest

from mmrazor_quant.registry import register_all_modules
from mmrazor_quant.structures.quantization import QConfigHandler

register_all_modules(init_default_scope=False)


def qconfig(**changes):
    cfg = dict(
        w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
        a_observer=dict(type='mmrazor_quant.MovingAverageMinMaxObserver'),
        w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
        w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                       is_symmetric_range=True),
        a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True,
                       averaging_constant=0.1))
    cfg.update(changes)
    return cfg


def test_valid_qconfig_infers_per_channel_from_observer():
    handler = QConfigHandler(qconfig())
    assert handler.w_qscheme.is_per_channel is True
    assert handler.a_qscheme.is_per_channel is False
    assert handler.a_qscheme.observer_kwargs == {'averaging_constant': 0.1}
    fq = handler.build_activation_fake_quant()
    assert fq.observer.averaging_constant == 0.1
    assert handler.build_weight_fake_quant().is_per_channel


def test_unknown_observer_type_lists_valid_names():
    with pytest.raises(ValueError,
                       match=r"global_qconfig.a_observer.type='NoSuch"
                       r"Observer' is not a registered BaseObserver.*"
                       r'MinMaxObserver'):
        QConfigHandler(qconfig(a_observer=dict(type='NoSuchObserver')))


def test_missing_and_unknown_keys():
    cfg = qconfig()
    del cfg['a_qscheme']
    with pytest.raises(KeyError, match=r"missing \['a_qscheme'\]"):
        QConfigHandler(cfg)
    with pytest.raises(KeyError, match=r"unknown keys \['w_qshceme'\]"):
        QConfigHandler(qconfig(w_qshceme={}))


@pytest.mark.parametrize('bit', [1, 17])
def test_bits_out_of_range_name_the_key(bit):
    with pytest.raises(ValueError,
                       match=r'global_qconfig.w_qscheme: qscheme.bit'):
        QConfigHandler(qconfig(w_qscheme=dict(qdtype='qint8', bit=bit)))


def test_per_channel_observer_on_per_tensor_scheme():
    with pytest.raises(ValueError,
                       match='PerChannelMinMaxObserver is per-channel but '
                       'global_qconfig.w_qscheme sets is_per_channel=False'):
        QConfigHandler(
            qconfig(w_qscheme=dict(qdtype='qint8', is_per_channel=False)))


def test_backend_rejects_schemes_it_cannot_run():
    from mmrazor_quant.models.quantizers import TensorRTQuantizer
    with pytest.raises(ValueError,
                       match=r"TensorRTQuantizer cannot execute this "
                       r"qconfig:\n  global_qconfig.a_qscheme.qdtype must be "
                       r"one of \('qint8',\), got 'quint8'"):
        TensorRTQuantizer(global_qconfig=qconfig())


def test_structures_import_nothing_from_models():
    """structures sit below models: no module under structures/ imports
    mmrazor_quant.models (the old qconfig -> fake_quants.base circle)."""
    import ast
    from pathlib import Path

    import mmrazor_quant.structures as structures
    offenders = []
    for path in Path(structures.__file__).parent.rglob('*.py'):
        for node in ast.walk(ast.parse(path.read_text())):
            names = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            offenders += [f'{path.name}: {n}' for n in names
                          if n.startswith('mmrazor_quant.models')]
    assert offenders == []
