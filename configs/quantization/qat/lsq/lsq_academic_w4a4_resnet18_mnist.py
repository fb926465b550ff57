# W4A4 LSQ quantization-aware training of the fp32 MNIST ResNet-18 in the
# papers' setting (AcademicQuantizer: fake quants on conv/linear inputs and
# weights; the first conv and the classifier kept at 8 bit, as LSQ does):
# the OpenVINO LSQ config's grids at 4 bits and its fine-tuning, for two
# epochs at lr 1e-3 (4-bit needs a second epoch to recover).
#   python tools/train.py configs/quantization/qat/lsq/lsq_academic_w4a4_resnet18_mnist.py
_base_ = ['./lsq_openvino_resnet18_mnist.py']

global_qconfig = dict(w_qscheme=dict(bit=4), a_qscheme=dict(bit=4))

model = dict(
    quantizer=dict(
        type='mmrazor_quant.AcademicQuantizer',
        global_qconfig=global_qconfig,
        first_last_bit=8))

max_epochs = 2
optim_wrapper = dict(optimizer=dict(lr=1e-3))
param_scheduler = [dict(_base_.param_scheduler[0], end=max_epochs)]
train_cfg = dict(max_epochs=max_epochs)
