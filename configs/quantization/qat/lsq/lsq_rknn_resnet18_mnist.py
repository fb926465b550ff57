# W8A8 LSQ quantization-aware training of the fp32 MNIST ResNet-18 for RKNN
# (Rockchip's NPU): the OpenVINO LSQ config with RKNNQuantizer's placement
# and schemes (asymmetric int8 activations with learned scales and
# zero-points, per-channel symmetric int8 weights), then the .rknn built
# with the learned qparams (make rknn-env) and checked in the simulator.
#   python tools/train.py configs/quantization/qat/lsq/lsq_rknn_resnet18_mnist.py
#   python tools/export.py configs/quantization/qat/lsq/lsq_rknn_resnet18_mnist.py work_dirs/lsq_rknn_resnet18_mnist/epoch_1.pth --backend rknn --num-samples 1000
_base_ = ['./lsq_openvino_resnet18_mnist.py']

model = dict(
    quantizer=dict(
        type='mmrazor_quant.RKNNQuantizer',
        global_qconfig=dict(
            a_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=False))))
