# OpenVINO in mmdeploy's schema: the Q/DQ ONNX of ./onnx_qdq.py, read by
# OpenVINO; a config sets the optimal shape in `backend_config.model_inputs`.
_base_ = ['./onnx_qdq.py']

deploy_cfg = dict(backend_config=dict(type='openvino'))
