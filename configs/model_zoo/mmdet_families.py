"""The mmdet families of the model zoo test beyond RetinaNet and YOLOX
(tested with the tuned digit detectors): mmdet's own COCO configs
(``mmdet::``), the smallest backbone each ships, at a small input (random
weights: the zoo checks capture, QAT and deploy parity, not accuracy)."""
_C = 'mmdet::'
P7_WHY = (
    "OpenVINO: the P7 level's head outputs are the bare biases (its head "
    "features are zeros; at 64 x 64 and 256 x 256 alike): P7 is the FPN's "
    'extra conv on ReLU(P6) (relu_before_extra_convs=True, not in ATSS), '
    'op not isolated further; onnxruntime: the regression and centerness '
    'outputs (no large prior bias, unlike the classification) carry the '
    'rounding of the 4 GroupNorm head convs on random weights, 20-29 dB'
)
# yapf: disable
families = dict(
    # the floor is onnxruntime's; OpenVINO stays below it (P7_WHY)
    fcos=dict(config=_C + 'fcos/fcos_r18_fpn_gn-head-center-normbbox-'
              'centeronreg-giou_8xb8-amp-lsj-200e_coco.py', hw=(64, 64),
              min_sqnr_db=15., why=P7_WHY),
    atss=dict(config=_C + 'atss/atss_r18_fpn_8xb8-amp-lsj-200e_coco.py',
              hw=(64, 64), min_sqnr_db=10.,
              why="the 1 x 1 P7 map's centerness output is ~0.01 in "
              'magnitude, one rounding flip of its GroupNorm head convs '
              'is the whole signal (the other outputs >= 25 dB in onnxruntime)'),
    gfl=dict(config=_C + 'gfl/gfl_r50_fpn_1x_coco.py', hw=(64, 64)),
    tood=dict(config=_C + 'tood/tood_r50_fpn_1x_coco.py', hw=(64, 64)),
    # FCOS's neck and GroupNorm head: as FCOS (P7_WHY)
    centernet=dict(config=_C + 'centernet/'
                   'centernet-update_r18_fpn_8xb8-amp-lsj-200e_coco.py',
                   hw=(64, 64), min_sqnr_db=15., why=P7_WHY),
    rtmdet=dict(config=_C + 'rtmdet/rtmdet_tiny_8xb32-300e_coco.py',
                hw=(64, 64)),
    paa=dict(config=_C + 'paa/paa_r50_fpn_1x_coco.py', hw=(64, 64)),
    vfnet=dict(config=_C + 'vfnet/vfnet_r50_fpn_1x_coco.py', hw=(64, 64)),
    yolov3=dict(config=_C + 'yolo/yolov3_mobilenetv2_8xb24-320-300e_coco.py',
                hw=(64, 64)),
    ssdlite=dict(config=_C + 'ssd/'
                 'ssdlite_mobilenetv2-scratch_8xb24-600e_coco.py',
                 hw=(64, 64)),
    detr=dict(config=_C + 'detr/detr_r18_8xb2-500e_coco.py', hw=(64, 64)),
    faster_rcnn=dict(config=_C + 'faster_rcnn/faster-rcnn_r50_fpn_1x_coco.py',
                     hw=(64, 64)),
)
