# W8A8 post-training quantization of the fp32 MNIST MobileNetV2 for RKNN
# (Rockchip's NPU): the OpenVINO config's calibration with RKNNQuantizer's
# placement (outputs, where rknn-toolkit2 fuses) and schemes: per-channel
# symmetric int8 weights, per-tensor asymmetric int8 activations
# (asymmetric_quantized-8). --export rknn builds the .rknn with these qparams
# (make rknn-env) and checks it in the toolkit's simulator.
#   python tools/ptq.py configs/quantization/ptq/ptq_rknn_mobilenetv2_mnist.py --export rknn --num-samples 1000
_base_ = ['./ptq_openvino_mobilenetv2_mnist.py']

model = dict(
    quantizer=dict(
        type='mmrazor_quant.RKNNQuantizer',
        global_qconfig=dict(
            a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False))))
