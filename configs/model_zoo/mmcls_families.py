"""The mmcls/mmpretrain architecture families of the model zoo test.

Each entry: mmcls's own ImageNet config (``mmcls::``; mmpretrain's is the
same path under ``mmpretrain::`` unless ``pretrain_config`` names it), the
small input it is checked at, and model overrides that keep the suite fast
on 2 cores or make the model accept the small input (fixed-size heads,
image-size arguments). Random weights: the zoo checks capture, QAT and deploy parity,
not accuracy.
"""
# yapf: disable
families = dict(
    resnet50=dict(config='mmcls::resnet/resnet50_8xb32_in1k.py', size=64),
    resnext=dict(config='mmcls::resnext/resnext50-32x4d_8xb32_in1k.py',
                 size=64),
    seresnet=dict(config='mmcls::seresnet/seresnet50_8xb32_in1k.py',
                  size=64),
    wide_resnet=dict(config='mmcls::wrn/wide-resnet50_8xb32_in1k.py',
                     size=64),
    res2net=dict(config='mmcls::res2net/res2net50-w14-s8_8xb32_in1k.py',
                 size=64),
    regnet=dict(config='mmcls::regnet/regnetx-400mf_8xb128_in1k.py',
                size=64),
    vgg=dict(config='mmcls::vgg/vgg11_8xb32_in1k.py', size=224),
    densenet=dict(config='mmcls::densenet/densenet121_4xb256_in1k.py',
                  size=64),
    inception_v3=dict(config='mmcls::inception_v3/inception-v3_8xb32_in1k.py',
                      size=96),
    hrnet=dict(config='mmcls::hrnet/hrnet-w18_4xb32_in1k.py', size=64),
    cspnet=dict(config='mmcls::cspnet/cspresnet50_8xb32_in1k.py', size=64),
    repvgg=dict(config='mmcls::repvgg/repvgg-A0_8xb32_in1k.py',
                size=64),
    mobileone=dict(config='mmcls::mobileone/mobileone-s0_8xb32_in1k.py',
                   size=64),
    mobilenet_v2=dict(config='mmcls::mobilenet_v2/mobilenet-v2_8xb32_in1k.py',
                      size=64),
    mobilenet_v3=dict(
        config='mmcls::mobilenet_v3/mobilenet-v3-small_8xb128_in1k.py',
        size=64),
    shufflenet_v1=dict(
        config='mmcls::shufflenet_v1/shufflenet-v1-1x_16xb64_in1k.py',
        size=64),
    shufflenet_v2=dict(
        config='mmcls::shufflenet_v2/shufflenet-v2-1x_16xb64_in1k.py',
        size=64),
    efficientnet=dict(config='mmcls::efficientnet/efficientnet-b0_8xb32_in1k.py',
                      size=64),
    efficientnet_v2=dict(
        config='mmcls::efficientnet_v2/efficientnetv2-b0_8xb32_in1k.py',
        size=64),
    convnext=dict(config='mmcls::convnext/convnext-tiny_32xb128_in1k.py',
                  size=64),
    convnext_v2=dict(
        config='mmcls::convnext_v2/convnext-v2-atto_32xb32_in1k.py', size=64),
    van=dict(config='mmcls::van/van-tiny_8xb128_in1k.py', size=64),
    poolformer=dict(config='mmcls::poolformer/poolformer-s12_32xb128_in1k.py',
                    size=64),
    edgenext=dict(config='mmcls::edgenext/edgenext-xxsmall_8xb256_in1k.py',
                  size=64),
    deit=dict(config='mmcls::deit/deit-tiny_pt-4xb256_in1k.py',
              pretrain_config='mmpretrain::deit/deit-tiny_4xb256_in1k.py',
              size=64, model=dict(backbone=dict(img_size=64))),
    swin=dict(config='mmcls::swin_transformer/swin-tiny_16xb64_in1k.py',
              size=64, model=dict(backbone=dict(img_size=64,
                                                pad_small_map=True))),
    twins=dict(config='mmcls::twins/twins-pcpvt-small_8xb128_in1k.py',
               size=64),
    mlp_mixer=dict(config='mmcls::mlp_mixer/mlp-mixer-base-p16_64xb64_in1k.py',
                   size=64, model=dict(backbone=dict(img_size=64))),
    mobilevit=dict(config='mmcls::mobilevit/mobilevit-xxsmall_8xb128_in1k.py',
                   size=64),
    efficientformer=dict(
        config='mmcls::efficientformer/efficientformer-l1_8xb128_in1k.py',
        size=224, model=dict(head=dict(distillation=False))),
    levit=dict(config='mmcls::levit/levit-128s_8xb256_in1k.py', size=224,
               model=dict(head=dict(distillation=False))),
    tinyvit=dict(config='mmcls::tinyvit/tinyvit-5m_8xb256_in1k.py', size=64,
                 model=dict(backbone=dict(img_size=(64, 64)))),
)
# yapf: enable
