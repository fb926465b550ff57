# W8A8 post-training quantization of the fp32 MNIST MobileNetV2 for ncnn:
# per-channel symmetric int8 weights and per-tensor symmetric int8
# activations, both on [-127, 127] without zero-point, on the inputs of the
# convs and the linear (the layers ncnn runs in int8), rounding half away
# from zero; deployed as ncnn's int8 .param/.bin with these scales.
#   python tools/ptq.py configs/quantization/ptq/ptq_ncnn_mobilenetv2_mnist.py --export ncnn
_base_ = ['./ptq_openvino_mobilenetv2_mnist.py']

# the OpenVINO config's qconfig with signed activations on [-127, 127]
global_qconfig = dict(
    a_qscheme=dict(qdtype='qint8', is_symmetric_range=True))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.NCNNQuantizer', global_qconfig=global_qconfig))
