# Mixed precision picked by mmrazor_quant.analysis (select_by_budget /
# select_by_accuracy) from the layer-wise sensitivity of the base config.
# Written by: python benchmarks/mixed_precision.py --write-config <this file>
# (layer-wise SNR at the logits on 2 calibration batches; budget 3, 8 bit).
_base_ = ['ptq_academic_w4a4_mobilenetv2_mnist.py']

model = dict(
    quantizer=dict(
        qconfig_mapping=dict(module_name=[
            ('backbone.layer1.0.conv.0.conv',
             dict(w_qscheme=dict(bit=8), a_qscheme=dict(bit=8))),
            ('backbone.layer2.0.conv.0.conv',
             dict(w_qscheme=dict(bit=8), a_qscheme=dict(bit=8))),
            ('backbone.layer3.0.conv.0.conv',
             dict(w_qscheme=dict(bit=8), a_qscheme=dict(bit=8))),
        ])))
