# Low-bit PTQ of the MNIST ResNet-18 (base of the naive_* configs):
# AcademicQuantizer (fake quants on conv/linear inputs and weights, first and
# last layer at 8 bit) with the shared low-bit qconfig; no PTQ pass.
_base_ = ['../ptq_academic_resnet18_mnist.py', './_base_/lowbit.py']

global_qconfig = _base_.lowbit_qconfig
model = dict(
    quantizer=dict(global_qconfig=global_qconfig, first_last_bit=8))
test_cfg = dict(calibrate_steps=_base_.calibrate_steps, ptq_passes=[])
