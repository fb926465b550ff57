# Low-bit PTQ of the MNIST MobileNetV2 (base of the naive_* configs): as
# _lowbit_resnet18_mnist.py, the OpenVINO quantizer of the base replaced by
# the AcademicQuantizer.
_base_ = ['../ptq_openvino_mobilenetv2_mnist.py', './_base_/lowbit.py']

global_qconfig = _base_.lowbit_qconfig
model = dict(
    quantizer=dict(
        _delete_=True,
        type='mmrazor_quant.AcademicQuantizer',
        global_qconfig=global_qconfig,
        first_last_bit=8,
        tracer=_base_.model.quantizer.tracer))
test_cfg = dict(calibrate_steps=_base_.calibrate_steps, ptq_passes=[])
