# The pose demo (tools/demo.py --task pose): RTMPose-t and SimpleBaseline-R18
# trained on the keypoint digits, then each quantization config with the
# drop it may lose against fp32, in AP points (mmpose's COCO keypoint AP on
# 0..1, shown times `scale`).
metric = 'coco/AP'
scale = 100
data = 'keypoint digits, 500 validation digits, COCO keypoint AP in points'
fp32 = {
    'RTMPose-t': 'configs/pose/rtmpose_t_digits.py',
    'SimpleBaseline-R18': 'configs/pose/simplebaseline_r18_digits.py',
}
_ptq = 'configs/quantization/ptq/pose/'
_lsq = 'configs/quantization/qat/pose/'
runs = [
    dict(model='RTMPose-t', method='PTQ', backend='openvino', bits='W8A8',
         config=_ptq + 'ptq_openvino_rtmpose_t_digits.py', allowed=1.0),
    dict(model='RTMPose-t', method='PTQ', backend='tensorrt', bits='W8A8',
         config=_ptq + 'ptq_tensorrt_rtmpose_t_digits.py', allowed=1.0),
    dict(model='RTMPose-t', method='LSQ QAT', backend='openvino',
         bits='W8A8', config=_lsq + 'lsq_openvino_rtmpose_t_digits.py',
         allowed=0.5),
    dict(model='RTMPose-t', method='LSQ QAT', backend='academic',
         bits='W4A8',
         config=_lsq + 'lsq_academic_w4a8_rtmpose_t_digits.py',
         allowed=5.0),
    dict(model='SimpleBaseline-R18', method='PTQ', backend='openvino',
         bits='W8A8',
         config=_ptq + 'ptq_openvino_simplebaseline_r18_digits.py',
         allowed=1.0),
    dict(model='SimpleBaseline-R18', method='PTQ', backend='tensorrt',
         bits='W8A8',
         config=_ptq + 'ptq_tensorrt_simplebaseline_r18_digits.py',
         allowed=1.0),
    dict(model='SimpleBaseline-R18', method='LSQ QAT', backend='openvino',
         bits='W8A8',
         config=_lsq + 'lsq_openvino_simplebaseline_r18_digits.py',
         allowed=0.5),
    dict(model='SimpleBaseline-R18', method='LSQ QAT', backend='academic',
         bits='W4A8',
         config=_lsq + 'lsq_academic_w4a8_simplebaseline_r18_digits.py',
         allowed=5.0),
]
