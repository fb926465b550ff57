"""Export a quantized checkpoint for a backend and check it against the
simulation.

    python tools/export.py CONFIG CHECKPOINT    # as model.deploy_cfg says
    python tools/export.py CONFIG CHECKPOINT --backend openvino --work-dir DIR

The config's ``model.deploy_cfg`` (mmdeploy's schema, as MMRazor's configs
carry it) gives the backend, opset, tensor names, dynamic axes, input shape
and file name; each flag below overrides its part.
"""
import argparse
import json

from mmengine.config import DictAction

from mmrazor_quant.backends import backend_names
from mmrazor_quant.deploy.config_export import (
    ExportSettings,
    deploy_config_of,
    export_and_check,
    resolve_output_path,
)
from mmrazor_quant.deploy.from_config import load_quantized_model
from mmrazor_quant.utils.config_checks import load_config
from mmrazor_quant.utils.quiet import quiet_stack_warnings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Export to ONNX')
    parser.add_argument('config', help='quantization config file path')
    parser.add_argument('checkpoint', help='quantized checkpoint')
    parser.add_argument('--backend', help='a registered deploy target ('
                        + ', '.join(backend_names(deployable=True)) +
                        ', or one the config\'s custom_imports registers; '
                        'default: model.deploy_cfg\'s)')
    parser.add_argument('--opset', type=int, help='ONNX opset (default: '
                        'deploy_cfg\'s, else 17, or 21 for 4-bit grids)')
    parser.add_argument('--shape', type=int, nargs=2, metavar=('H', 'W'),
                        help='height and width of the exported example '
                        'and parity inputs (default: deploy_cfg\'s, else '
                        'the data\'s)')
    parser.add_argument('--input-names', nargs='+', help='graph input name')
    parser.add_argument('--output-names', nargs='+',
                        help='graph output names, or names of output groups')
    parser.add_argument('--dynamic-axes', type=json.loads,
                        help='JSON {name: {axis: axis_name}}, e.g. '
                        '\'{"input": {"0": "batch"}}\'')
    out = parser.add_mutually_exclusive_group()
    out.add_argument('--out', help='the .onnx to write; a directory is '
                     'taken as --work-dir')
    out.add_argument('--work-dir', help='directory to write into (file '
                     'named after deploy_cfg\'s save_file, else '
                     '<config>_<backend>.onnx); default: beside the '
                     'checkpoint')
    parser.add_argument('--implicit', action='store_true', default=None,
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


def _dynamic_axes(value):
    # JSON keys are strings; torch and mmdeploy use int axes.
    if value is None:
        return None
    return {name: {int(axis): dim for axis, dim in dims.items()}
            for name, dims in value.items()}


def main() -> None:
    args = parse_args()
    quiet_stack_warnings()
    cfg = load_config(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    settings = ExportSettings.resolve(
        deploy_config_of(cfg), backend=args.backend, opset=args.opset,
        input_hw=tuple(args.shape) if args.shape else None,
        input_names=args.input_names, output_names=args.output_names,
        dynamic_axes=_dynamic_axes(args.dynamic_axes),
        implicit=args.implicit,
        exporter_options=dict(float_bias=True) if args.float_bias else None)
    out = resolve_output_path(settings, args.config, args.checkpoint,
                              args.out, args.work_dir)
    model = load_quantized_model(cfg, args.checkpoint)
    export_and_check(model, cfg, settings, out, args.num_samples,
                     verify=not args.no_verify)


if __name__ == '__main__':
    main()
