"""Graph-wise / layer-wise analysis and automatic mixed precision on a toy
net whose ``conv3`` has large weight outliers."""
import pytest
import torch
from mmengine.config import Config

from mmrazor_quant.analysis import (
    PARTS,
    find_quantized_layers,
    graphwise_error,
    layerwise_sensitivity,
    mixed_precision_rules,
    rank_layers,
    select_by_accuracy,
    select_by_budget,
    weight_statistics,
    write_mixed_precision_config,
)
from .toy import HARD, LAYERS, build, inputs

W8 = dict(w_qscheme=dict(bit=8), a_qscheme=dict(bit=8))


def test_layers_and_their_input_fake_quants():
    gm, _ = build()
    layers = find_quantized_layers(gm)
    assert [layer.name for layer in layers] == list(LAYERS)
    assert all(layer.input_fake_quant is not None for layer in layers)
    assert layers[0].input_name == 'act_fake_quants.inputs'


@pytest.mark.parametrize('part', PARTS[:1] + PARTS[2:])
def test_layerwise_ranks_the_outlier_layer_first(part):
    gm, _ = build(bit=4)
    records = layerwise_sensitivity(gm, inputs(), parts=(part, ))
    assert [r.name for r in records] == list(LAYERS)
    for metric in ('snr', 'cosine', 'mse'):
        assert rank_layers(records, metric)[0] == HARD
    # the same net without outliers: HARD is not special
    gm, _ = build(hard=False, bit=4)
    records = layerwise_sensitivity(gm, inputs(), parts=(part, ))
    assert rank_layers(records)[0] != HARD


def test_layerwise_restores_the_fake_quant_switches():
    gm, model = build()
    model.conv1.weight_fake_quant.disable_fake_quant()
    layerwise_sensitivity(gm, inputs(1), parts=PARTS)
    assert not model.conv1.weight_fake_quant.fake_quant_enabled[0]
    assert model.conv2.weight_fake_quant.fake_quant_enabled[0]
    assert not model.conv2.weight_fake_quant.observer_enabled[0]


def test_graphwise_error_jumps_at_the_outlier_layer():
    gm, _ = build(bit=8)
    records = graphwise_error(gm, inputs())
    kinds = {r.name: r.kind for r in records}
    assert [n for n, k in kinds.items() if k == 'layer'] == list(LAYERS)
    assert kinds['act_fake_quants.inputs'] == 'activation'
    assert [r.index for r in records] == sorted(r.index for r in records)
    snr = [r.snr for r in records if r.kind == 'layer']
    drops = {LAYERS[i]: snr[i - 1] - snr[i] for i in range(1, len(snr))}
    assert max(drops, key=drops.get) == HARD
    assert drops[HARD] > 5.0  # dB; the other layers lose about 1-2 dB
    # without outliers no such jump
    gm, _ = build(hard=False, bit=8)
    snr = [r.snr for r in graphwise_error(gm, inputs()) if r.kind == 'layer']
    assert snr[LAYERS.index(HARD) - 1] - snr[LAYERS.index(HARD)] < 3.0


def test_weight_statistics_flag_the_outliers():
    gm, _ = build()
    stats = {s.name: s for s in weight_statistics(gm)}
    assert max(stats, key=lambda n: stats[n].range_ratio) == HARD
    assert stats[HARD].noise_snr < min(
        s.noise_snr for n, s in stats.items() if n != HARD)


def test_budget_one_keeps_exactly_the_outlier_layer_at_8_bit():
    gm, _ = build(bit=4)
    sensitivity = layerwise_sensitivity(gm, inputs())
    rules = select_by_budget(sensitivity, 1)
    assert rules == [(HARD, W8)]
    assert select_by_budget(sensitivity, 0) == []
    mixed_gm, model = build(bit=4, module_name=rules)
    bits = {layer.name: (layer.weight_fake_quant.qscheme.bit,
                         layer.input_fake_quant.qscheme.bit)
            for layer in find_quantized_layers(mixed_gm)}
    assert bits == {n: (8, 8) if n == HARD else (4, 4) for n in LAYERS}
    # and the model outputs get closer to the float ones
    before = graphwise_error(gm, inputs())[-1]
    after = graphwise_error(mixed_gm, inputs())[-1]
    assert before.name == after.name == 'fc'
    assert after.snr > before.snr + 3.0


def test_budget_float_keeps_the_layer_float():
    gm, _ = build(bit=4)
    rules = select_by_budget(layerwise_sensitivity(gm, inputs(1)), 1,
                             bit='float')
    assert rules == [(HARD, None)]
    mixed_gm, model = build(bit=4, module_name=rules)
    assert not hasattr(model.conv3, 'weight_fake_quant')
    assert [layer.name for layer in find_quantized_layers(mixed_gm)] == [
        n for n in LAYERS if n != HARD
    ]


def test_bad_budget_and_bit():
    with pytest.raises(ValueError, match='max_layers must be an int >= 0'):
        select_by_budget([], -1)
    with pytest.raises(ValueError, match="bit must be an int in"):
        mixed_precision_rules(['conv1'], bit=1)


def test_unknown_layer_name_is_an_error_naming_it():
    rules = mixed_precision_rules(['conv9'])
    with pytest.raises(ValueError, match='"conv9" matches no module'):
        build(module_name=rules)


def test_select_by_accuracy_stops_at_the_tolerated_drop():
    gm, _ = build(bit=4)
    sensitivity = layerwise_sensitivity(gm, inputs(1))
    ranked = rank_layers(sensitivity)
    calls = []

    def evaluate(rules):  # +1 point per layer kept at 8 bit
        calls.append([name for name, _ in rules])
        return 95.0 + len(rules)

    rules, history = select_by_accuracy(
        sensitivity, evaluate, reference=98.0, max_drop=1.0)
    assert [name for name, _ in rules] == ranked[:2]
    assert history == [(0, 95.0), (1, 96.0), (2, 97.0)]
    rules, history = select_by_accuracy(
        sensitivity, evaluate, reference=98.0, max_drop=0.0, max_layers=1)
    assert len(rules) == 1 and history[-1] == (1, 96.0)


def test_written_config_holds_the_rules(tmp_path):
    base = tmp_path / 'base.py'
    base.write_text(
        "model = dict(type='X', quantizer=dict(type='Q', "
        "global_qconfig=dict(a=1)))\n")
    rules = [('backbone.conv1.conv', W8), ('head.fc', None)]
    path = write_mixed_precision_config(
        str(base), rules, str(tmp_path / 'sub' / 'mixed.py'))
    cfg = Config.fromfile(path)
    assert cfg.model.quantizer.global_qconfig == dict(a=1)
    assert [tuple(r) for r in cfg.model.quantizer.qconfig_mapping.module_name
            ] == rules


def test_uncalibrated_model_is_an_error():
    from mmrazor_quant.models.quantizers import AcademicQuantizer
    from .toy import ChainNet, qconfig
    gm = AcademicQuantizer(global_qconfig=qconfig()).prepare(
        ChainNet(), ('tensor', ))['tensor']
    with pytest.raises(RuntimeError, match='never calibrated'):
        graphwise_error(gm, inputs(1))
    with pytest.raises(ValueError, match='at least one input'):
        layerwise_sensitivity(gm, [])
    with pytest.raises(TypeError, match='MMArchitectureQuant'):
        graphwise_error(torch.nn.Linear(2, 2), inputs(1))
