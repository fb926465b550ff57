"""The mmpose families of the model zoo test.

Each entry: mmpose's own config (``mmpose::``, with its
``test_cfg.flip_test=True``) and the ``(H, W)`` input it is checked at:
small for fully convolutional heads, the codec's input size where the head
or backbone is built for one (SimCC's flattened features, ViT's position
embedding). Random weights: the zoo checks capture, QAT and deploy parity,
not accuracy.
"""
_BODY = 'mmpose::body_2d_keypoint/'
# yapf: disable
families = dict(
    hrnet=dict(config=_BODY + 'topdown_heatmap/coco/'
               'td-hm_hrnet-w32_8xb64-210e_coco-256x192.py', hw=(96, 64)),
    simplebaseline=dict(config=_BODY + 'topdown_heatmap/coco/'
                        'td-hm_res50_8xb64-210e_coco-256x192.py',
                        hw=(96, 64)),
    mobilenetv2=dict(config=_BODY + 'topdown_heatmap/coco/'
                     'td-hm_mobilenetv2_8xb64-210e_coco-256x192.py',
                     hw=(96, 64)),
    litehrnet=dict(config=_BODY + 'topdown_heatmap/coco/'
                   'td-hm_litehrnet-18_8xb64-210e_coco-256x192.py',
                   hw=(96, 64)),
    rtmpose_s=dict(config=_BODY + 'rtmpose/coco/'
                   'rtmpose-s_8xb256-420e_coco-256x192.py', hw=(256, 192)),
    # OpenVINO 29.9 dB, onnxruntime 29.7 dB, the simulation in float32
    # against float64 29.9 dB: the runtimes sit at the float32 floor
    rtmpose_m=dict(config=_BODY + 'rtmpose/coco/'
                   'rtmpose-m_8xb256-420e_coco-256x192.py', hw=(256, 192),
                   min_sqnr_db=25., why=(
                       'float32 summation order: the simulation agrees with '
                       'itself in float64 only about as well as the '
                       'runtimes agree with it (figure at the end), so a '
                       'runtime adding in another order flips roundings at '
                       'the next quantize; no op departs beyond that')),
    simcc=dict(config=_BODY + 'simcc/coco/'
               'simcc_mobilenetv2_wo-deconv-8xb64-210e_coco-256x192.py',
               hw=(256, 192)),
    vitpose=dict(config=_BODY + 'topdown_heatmap/coco/'
                 'td-hm_ViTPose-small_8xb64-210e_coco-256x192.py',
                 hw=(256, 192)),
    hand=dict(config='mmpose::hand_2d_keypoint/topdown_heatmap/onehand10k/'
              'td-hm_mobilenetv2_8xb64-210e_onehand10k-256x256.py',
              hw=(64, 64)),
    face=dict(config='mmpose::face_2d_keypoint/topdown_heatmap/wflw/'
              'td-hm_hrnetv2-w18_8xb64-60e_wflw-256x256.py', hw=(64, 64)),
)
