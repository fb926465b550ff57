# Mixed precision picked by mmrazor_quant.analysis from the layer-wise
# sensitivity of the base config (tools/analyze.py).
_base_ = ['ptq_academic_w4a4_mobilenetv2_mnist.py']

model = dict(
    quantizer=dict(
        qconfig_mapping=dict(module_name=[   (   'backbone.layer1.0.conv.0.conv',
                {'a_qscheme': {'bit': 8}, 'w_qscheme': {'bit': 8}}),
            (   'backbone.layer2.0.conv.0.conv',
                {'a_qscheme': {'bit': 8}, 'w_qscheme': {'bit': 8}}),
            (   'backbone.layer3.0.conv.0.conv',
                {'a_qscheme': {'bit': 8}, 'w_qscheme': {'bit': 8}})])))
