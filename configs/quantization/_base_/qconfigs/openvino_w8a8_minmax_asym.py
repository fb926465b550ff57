# ./openvino_w8a8_minmax.py with asymmetric u8 activations (NNCF's MIXED
# preset; ./openvino_w8a8_asym.py says why SiLU networks want them).
_base_ = ['./openvino_w8a8_minmax.py']

global_qconfig = dict(
    a_qscheme=dict(_delete_=True, qdtype='quint8', bit=8, is_symmetry=False))
quantizer = dict(global_qconfig=global_qconfig)
