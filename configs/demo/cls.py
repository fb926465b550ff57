# The classification demo of `make demo` (tools/demo.py --task cls): the
# fp32 models it trains, then each quantization config with the drop it may
# lose against fp32 (in points of `metric`).
metric = 'accuracy/top1'
fp32 = {
    'ResNet-18': 'configs/fp32/resnet18_mnist.py',
    'MobileNetV2': 'configs/fp32/mobilenetv2_mnist.py',
    'ViT': 'configs/fp32/vit_mnist.py',
}
_ptq = 'configs/quantization/ptq/'
_lsq = 'configs/quantization/qat/lsq/'
runs = [
    dict(model='ResNet-18', method='PTQ', backend='native', bits='W8A8',
         config=_ptq + 'ptq_native_resnet18_mnist.py', allowed=0.5),
    dict(model='ResNet-18', method='PTQ', backend='openvino', bits='W8A8',
         config=_ptq + 'ptq_openvino_resnet18_mnist.py', allowed=0.5),
    dict(model='ResNet-18', method='PTQ', backend='tensorrt', bits='W8A8',
         config=_ptq + 'ptq_tensorrt_resnet18_mnist.py', allowed=0.5),
    dict(model='ResNet-18', method='PTQ', backend='academic', bits='W8A8',
         config=_ptq + 'ptq_academic_resnet18_mnist.py', allowed=0.5),
    dict(model='MobileNetV2', method='PTQ', backend='openvino', bits='W8A8',
         config=_ptq + 'ptq_openvino_mobilenetv2_mnist.py', allowed=0.5),
    dict(model='ResNet-18', method='LSQ QAT', backend='openvino',
         bits='W8A8', config=_lsq + 'lsq_openvino_resnet18_mnist.py',
         allowed=0.3),
    dict(model='ResNet-18', method='LSQ QAT', backend='academic',
         bits='W4A4', config=_lsq + 'lsq_academic_w4a4_resnet18_mnist.py',
         allowed=1.5),
    dict(model='ViT', method='PTQ', backend='openvino', bits='W8A8',
         config=_ptq + 'ptq_openvino_vit_mnist.py', allowed=1.0),
    dict(model='ViT', method='LSQ QAT', backend='openvino', bits='W8A8',
         config=_lsq + 'lsq_openvino_vit_mnist.py', allowed=1.0),
]
