"""The mmseg families of the model zoo test.

Each entry: mmseg's own config (``mmseg::``, with its ``test_cfg``: whole
or slide inference) and the ``(H, W)`` input it is checked at (small: the
zoo checks capture, QAT and deploy parity of random-weight models, not
accuracy). The smallest shipped backbone of each family.
"""
_C = 'mmseg::'
FLOAT32_WHY = (
    'float32 summation order: the simulation agrees with itself in float64 '
    'only about as well as the runtimes agree with it (figure at the end), '
    'so a runtime adding in another order flips roundings at the next '
    'quantize; no op departs beyond that')
# yapf: disable
families = dict(
    fcn=dict(config=_C + 'fcn/fcn_r18-d8_4xb2-80k_cityscapes-512x1024.py',
             hw=(64, 64)),
    pspnet=dict(config=_C + 'pspnet/'
                'pspnet_r18-d8_4xb2-80k_cityscapes-512x1024.py', hw=(64, 64)),
    deeplabv3=dict(config=_C + 'deeplabv3/'
                   'deeplabv3_r18-d8_4xb2-80k_cityscapes-512x1024.py',
                   hw=(64, 64)),
    deeplabv3plus=dict(config=_C + 'deeplabv3plus/'
                       'deeplabv3plus_r18-d8_4xb2-80k_cityscapes-512x1024.py',
                       hw=(64, 64)),
    upernet=dict(config=_C + 'upernet/upernet_r18_4xb4-80k_ade20k-512x512.py',
                 hw=(64, 64)),
    ocrnet=dict(config=_C + 'ocrnet/ocrnet_hr18s_4xb4-80k_ade20k-512x512.py',
                hw=(64, 64),
                min_sqnr_db=25., why=FLOAT32_WHY),
    bisenetv1=dict(config=_C + 'bisenetv1/'
                   'bisenetv1_r18-d32_4xb4-160k_cityscapes-1024x1024.py',
                   hw=(64, 64)),
    bisenetv2=dict(config=_C + 'bisenetv2/'
                   'bisenetv2_fcn_4xb4-160k_cityscapes-1024x1024.py',
                   hw=(64, 64)),
    stdc=dict(config=_C + 'stdc/stdc1_4xb12-80k_cityscapes-512x1024.py',
              hw=(64, 64)),
    ddrnet=dict(config=_C + 'ddrnet/'
                'ddrnet_23-slim_in1k-pre_2xb6-120k_cityscapes-1024x1024.py',
                hw=(128, 128)),
    pidnet=dict(config=_C + 'pidnet/pidnet-s_2xb6-120k_1024x1024-cityscapes.py',
                hw=(128, 128),
                min_sqnr_db=25., why=FLOAT32_WHY),
    cgnet=dict(config=_C + 'cgnet/cgnet_fcn_4xb4-60k_cityscapes-680x680.py',
               hw=(64, 64)),
    erfnet=dict(config=_C + 'erfnet/erfnet_fcn_4xb4-160k_cityscapes-512x1024.py',
                hw=(64, 64)),
    # the head's image pooling is a 49 x 49 AvgPool on the stride-8 map
    lraspp=dict(config=_C + 'mobilenet_v3/'
                'mobilenet-v3-d8-s_lraspp_4xb4-320k_cityscapes-512x1024.py',
                hw=(400, 400)),
    unet=dict(config=_C + 'unet/unet-s5-d16_deeplabv3_4xb4-40k_drive-64x64.py',
              hw=(64, 64),
              min_sqnr_db=25., why=FLOAT32_WHY),
    segnext=dict(config=_C + 'segnext/'
                 'segnext_mscan-t_1xb16-adamw-160k_ade20k-512x512.py',
                 hw=(64, 64),
                 min_sqnr_db=25., why=FLOAT32_WHY),
    # the random-weight MiT amplifies single rounding flips: float32
    # against float64 alone gives 26.5 dB
    segformer=dict(config=_C + 'segformer/'
                   'segformer_mit-b0_8xb2-160k_ade20k-512x512.py',
                   hw=(64, 64),
                   min_sqnr_db=20., why=(
                       "OpenVINO's LayerNormalization: it normalises in "
                       'another order than torch, so a few codes of its '
                       'quantizer land one step off (0.01-0.02 % of them, '
                       'op by op on the same int8 inputs; every conv, '
                       'matmul and GELU exact), and the random-weight MiT '
                       'amplifies each flip as it amplifies float32 '
                       'rounding (float64 floor at the end). Against the '
                       'float64 simulation onnxruntime is exact through '
                       'the first stage and OpenVINO leaves it at the '
                       'first LayerNorms (132 and 69 dB): 22.5 dB at the '
                       'output, onnxruntime 26.4 dB')),
)
