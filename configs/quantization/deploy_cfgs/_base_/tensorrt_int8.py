# TensorRT in explicit int8 mode, in mmdeploy's schema: the Q/DQ ONNX of
# ./onnx_qdq.py carries the quantization, TensorRT builds int8 kernels from
# it. A config sets the optimization profile in `backend_config.model_inputs`.
_base_ = ['./onnx_qdq.py']

deploy_cfg = dict(
    backend_config=dict(
        type='tensorrt',
        common_config=dict(
            fp16_mode=False,
            max_workspace_size=1 << 30,
            int8_mode=True,
            explicit_quant_mode=True)))
