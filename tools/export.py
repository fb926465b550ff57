"""Export a quantized checkpoint for a backend and check it against the
simulation.

    python tools/export.py CONFIG CHECKPOINT --backend openvino
"""
import argparse
import os.path as osp

import torch
from mmengine.config import Config, DictAction

from mmrazor_quant.deploy import (align_bias_to_int32_grid_, check_parity,
                                  export_model)
from mmrazor_quant.deploy.from_config import (load_quantized_model,
                                              preprocessed_batches)
from mmrazor_quant.utils.quiet import quiet_stack_warnings

RUNTIME = dict(onnxruntime='onnxruntime', openvino='openvino',
               tensorrt='onnxruntime')


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Export to ONNX')
    parser.add_argument('config', help='quantization config file path')
    parser.add_argument('checkpoint', help='quantized checkpoint')
    parser.add_argument('--backend', required=True,
                        choices=sorted(RUNTIME), help='deploy target')
    parser.add_argument('--opset', type=int, help='ONNX opset (default: '
                        '17, or 21 for 4-bit grids)')
    parser.add_argument('--out', help='the .onnx to write (default: beside '
                        'the checkpoint, named after the backend)')
    parser.add_argument('--implicit', action='store_true',
                        help='tensorrt: float ONNX + ranges JSON')
    parser.add_argument('--float-bias', action='store_true',
                        help='onnxruntime: keep the biases off the int32 '
                        'grid its int8 kernels use (the runtime then drifts '
                        'from the checkpoint\'s simulation)')
    parser.add_argument('--no-verify', action='store_true',
                        help='skip the parity check')
    parser.add_argument('--num-samples', type=int, default=256,
                        help='test samples for the parity check')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override settings of the config')
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    quiet_stack_warnings()
    cfg = Config.fromfile(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    model = load_quantized_model(cfg, args.checkpoint)
    batches = list(preprocessed_batches(model, cfg, args.num_samples))
    inputs = torch.cat([x for x, _ in batches])
    labels = torch.cat([s.gt_label.label[:1] for _, samples in batches
                        for s in samples])
    if args.backend == 'onnxruntime' and not args.float_bias:
        # The simulation this export matches: see docs/deploy.md.
        print(align_bias_to_int32_grid_(model).format())
    out = args.out or osp.splitext(args.checkpoint)[0] + \
        f'_{args.backend}.onnx'
    kwargs = dict(opset=args.opset)
    if args.implicit:
        kwargs['implicit'] = True
    result = export_model(model, inputs[:2], out, args.backend, **kwargs)
    for role, path in result.files.items():
        print(f'wrote {role:8s}: {path}')
    if args.no_verify:
        return
    if args.implicit:
        print('implicit mode: the float ONNX is not compared (TensorRT '
              'applies the ranges at build time)')
        return
    report = check_parity(result.deploy_model, out, inputs,
                          RUNTIME[args.backend], labels=labels)
    print(report.format())


if __name__ == '__main__':
    main()
