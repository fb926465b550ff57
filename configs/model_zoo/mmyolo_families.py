"""The mmyolo families of the model zoo test: every detector family mmyolo
ships, its smallest COCO config (``mmyolo::``), checked at a small input
(random weights: the zoo checks capture, QAT and deploy parity, not
accuracy)."""
_C = 'mmyolo::'
ZERO_HEAD = ('NOT a parity check of the network: the head initialises its '
             'prediction convs with zero weights (init_weights), so at '
             'random init the outputs are their biases in every runtime')
# yapf: disable
families = dict(
    yolov5=dict(config=_C + 'yolov5/yolov5_n-v61_syncbn_fast_8xb16-300e_coco.py',
                hw=(64, 64)),
    # 96 x 96: the first epochs' ATSS assigner takes the 9 nearest priors
    # of each level, and the stride-32 level has 3 x 3 of them only from 96
    yolov6=dict(config=_C + 'yolov6/yolov6_n_syncbn_fast_8xb32-300e_coco.py',
                hw=(96, 96), why=ZERO_HEAD),
    yolov7=dict(config=_C + 'yolov7/yolov7_tiny_syncbn_fast_8x16b-300e_coco.py',
                hw=(64, 64), min_sqnr_db=20.,
                why="OpenVINO's int8 Conv + LeakyReLU(0.1) pairs (most "
                'likely their fusion; the SiLU YOLOs do not depart): the '
                'pairs\' outputs leave the simulation from the 5th conv '
                'on, 37 dB, falling to 22 dB by the neck (onnxruntime '
                '> 125 dB)'),
    yolov8=dict(config=_C + 'yolov8/yolov8_n_syncbn_fast_8xb16-500e_coco.py',
                hw=(64, 64)),
    yolox=dict(config=_C + 'yolox/yolox_nano_fast_8xb8-300e_coco.py',
               hw=(64, 64)),
    ppyoloe=dict(config=_C + 'ppyoloe/ppyoloe_plus_s_fast_8xb8-80e_coco.py',
                 hw=(96, 96),  # as YOLOv6 (ATSS in the first epochs)
                 why=ZERO_HEAD),
    rtmdet=dict(config=_C + 'rtmdet/rtmdet_tiny_syncbn_fast_8xb32-300e_coco.py',
                hw=(64, 64)),
)
