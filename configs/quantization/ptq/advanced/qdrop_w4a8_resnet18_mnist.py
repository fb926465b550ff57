# W4A8 PTQ of the fp32 MNIST resnet18 with QDrop (block reconstruction,
# activations dropped with p = 0.5). Other methods: set test_cfg.ptq_passes
# to [dict(type='adaround', iters=300)] or [dict(type='brecq', iters=300)];
# [] is naive PTQ.
#   python tools/ptq.py configs/quantization/ptq/advanced/qdrop_w4a8_resnet18_mnist.py
_base_ = ['./_lowbit_resnet18_mnist.py']

model = dict(
    quantizer=dict(
        global_qconfig=dict(
            w_qscheme=dict(bit=4), a_qscheme=dict(bit=8))))
