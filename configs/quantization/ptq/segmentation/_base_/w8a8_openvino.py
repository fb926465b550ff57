# The W8A8 OpenVINO quantizer (../../../_base_/qconfigs/openvino_w8a8.py)
# and the 8-batch PTQ loop of the digit-segmentation configs, in one base
# (keys their fp32 bases do not have). No tracer skips of their own: the
# mmseg adapter keeps the losses and the per-sample post-processing out of
# the graphs. The loop calibrates on calibrate_dataloader of
# configs/_base_/datasets/digit_canvas_seg.py.
_base_ = ['../../../_base_/qconfigs/openvino_w8a8.py', '../../_base_/calib8.py']
