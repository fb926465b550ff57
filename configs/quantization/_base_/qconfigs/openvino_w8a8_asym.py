# ./openvino_w8a8.py with asymmetric u8 activations (NNCF's MIXED preset,
# which NNCF's YOLO examples use). SiLU/Swish outputs reach -0.28: a
# symmetric grid puts their zero-point at 128, where OpenVINO's CPU
# FakeQuantize, rounding x / s + zero_point in float32, loses ties the
# simulation rounds exactly, and the YOLO-style networks multiply such
# one-step flips layer after layer (docs/detection.md). Asymmetric, the
# zero-point is a few steps and the grid twice as fine.
_base_ = ['./openvino_w8a8.py']

global_qconfig = dict(
    a_qscheme=dict(
        _delete_=True, qdtype='quint8', bit=8, is_symmetry=False,
        averaging_constant=0.1))
quantizer = dict(global_qconfig=global_qconfig)
