# W8A8 for OpenVINO of the toy codebase's TallyNet, defined with its
# codebase adapter in examples/custom_codebase/toy_codebase (user code, not
# the library), on the MNIST digits of the library's ResNet-18 PTQ config
# (random float weights: the example shows the seam, not accuracy). Run from
# the repository root:
#   PYTHONPATH=examples/custom_codebase python tools/ptq.py \
#       examples/custom_codebase/configs/ptq_openvino_tally.py
# No input_shape: TallyNet reads its input size, and the adapter traces it
# at the size the test pipeline resizes to (18 x 20).
_base_ = ['../../../configs/quantization/ptq/ptq_openvino_resnet18_mnist.py']

# Importing the package registers TallyNet and its adapter TallyCodebase.
custom_imports = dict(imports=['toy_codebase'], allow_failed_imports=False)

test_pipeline = [
    dict(type='Resize', scale=(20, 18)),  # mmcv's (w, h)
    dict(type='PackClsInputs'),
]
test_dataloader = dict(dataset=dict(pipeline=test_pipeline))
test_cfg = dict(calibrate_dataloader=dict(dataset=dict(
    pipeline=test_pipeline)))

model = dict(
    _delete_=True,
    type='mmrazor_quant.MMArchitectureQuant',
    data_preprocessor=dict(
        type='mmcls.ClsDataPreprocessor', **_base_.data_preprocessor),
    architecture=dict(type='mmrazor_quant.TallyNet', in_channels=1),
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        global_qconfig=_base_.global_qconfig))
