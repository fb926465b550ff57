# The segmentation demo (tools/demo.py --task seg): Fast-SCNN and SegFormer
# MiT-B0 from mmseg's own model configs, trained on the 64x64 digit
# canvases, then PTQ for OpenVINO and TensorRT, LSQ QAT at W8A8 and W4A8,
# with the drop each may lose against fp32 (in points of mIoU, mmseg's
# IoUMetric over the 11 classes, background included).
metric = 'mIoU'
data = 'segmentation digit canvases, 400 validation canvases (64x64), mIoU in points'
fp32 = {
    'Fast-SCNN': 'configs/segmentation/fastscnn_digits.py',
    'SegFormer-B0': 'configs/segmentation/segformer_mit-b0_digits.py',
}
_ptq = 'configs/quantization/ptq/segmentation/'
_qat = 'configs/quantization/qat/segmentation/'
runs = [
    dict(model=model, method=method, backend=backend, bits=bits,
         config=path + name.format(stem), allowed=allowed)
    for model, stem in (('Fast-SCNN', 'fastscnn'),
                        ('SegFormer-B0', 'segformer_mit-b0'))
    for method, backend, bits, path, name, allowed in (
        ('PTQ', 'openvino', 'W8A8', _ptq, 'ptq_openvino_{}_digits.py', 1.0),
        ('PTQ', 'tensorrt', 'W8A8', _ptq, 'ptq_tensorrt_{}_digits.py', 1.0),
        ('LSQ QAT', 'openvino', 'W8A8', _qat, 'lsq_openvino_{}_digits.py',
         0.5),
        ('LSQ QAT', 'academic', 'W4A8', _qat,
         'lsq_academic_w4a8_{}_digits.py', 2.0),
    )
]
