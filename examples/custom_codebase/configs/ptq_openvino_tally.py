# W8A8 for OpenVINO of the toy codebase's TallyNet, defined with its
# codebase adapter in examples/custom_codebase/toy_codebase (user code, not
# the library). No input_shape: TallyNet reads its input size, and the
# adapter traces it at the size the test pipeline resizes to (18 x 20).
custom_imports = dict(imports=['toy_codebase'], allow_failed_imports=False)
default_scope = 'mmrazor_quant'

test_pipeline = [
    dict(type='Resize', scale=(20, 18)),  # mmcv's (w, h)
    dict(type='mmcls.PackClsInputs'),
]
test_dataloader = dict(
    batch_size=16,
    num_workers=0,
    dataset=dict(type='mmrazor_quant.MNIST5k', split='test',
                 pipeline=test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=False))

model = dict(
    type='mmrazor_quant.MMArchitectureQuant',
    architecture=dict(type='mmrazor_quant.TallyNet', in_channels=1),
    forward_modes=('tensor', 'loss'),
    quantizer=dict(
        type='mmrazor_quant.OpenVINOQuantizer',
        global_qconfig=dict(
            w_observer=dict(type='mmrazor_quant.PerChannelMinMaxObserver'),
            a_observer=dict(type='mmrazor_quant.MinMaxObserver'),
            w_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
            a_fake_quant=dict(type='mmrazor_quant.FakeQuantize'),
            w_qscheme=dict(qdtype='qint8', bit=8, is_symmetry=True,
                           is_symmetric_range=True),
            a_qscheme=dict(qdtype='quint8', bit=8, is_symmetry=True))))
