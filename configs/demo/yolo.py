# The YOLO demo (tools/demo.py --task yolo): mmyolo's YOLOv5-n and
# RTMDet-tiny trained on the 96x96 digit canvases, then each quantization
# config with the drop it may lose against fp32, in mAP points (mmdet's COCO
# bbox mAP on 0..1, shown times `scale`).
metric = 'coco/bbox_mAP'
scale = 100
data = 'digit canvases, 200 validation canvases, COCO bbox mAP in points'
fp32 = {
    'YOLOv5-n': 'configs/yolo/yolov5_n_digits.py',
    'RTMDet-tiny': 'configs/yolo/rtmdet_tiny_digits.py',
}
_ptq = 'configs/quantization/ptq/yolo/'
_qat = 'configs/quantization/qat/yolo/'
runs = [
    dict(model=model, method=method, backend=backend, bits=bits,
         config=folder + name + stem, allowed=allowed)
    for model, stem in (('YOLOv5-n', 'yolov5_n_digits.py'),
                        ('RTMDet-tiny', 'rtmdet_tiny_digits.py'))
    for method, backend, bits, folder, name, allowed in (
        ('PTQ', 'openvino', 'W8A8', _ptq, 'ptq_openvino_', 1.0),
        ('PTQ', 'tensorrt', 'W8A8', _ptq, 'ptq_tensorrt_', 1.0),
        ('LSQ QAT', 'openvino', 'W8A8', _qat, 'lsq_openvino_', 0.5),
        ('LSQ QAT', 'academic', 'W4A8', _qat, 'lsq_academic_w4a8_', 3.0),
    )
]
