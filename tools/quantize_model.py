"""Quantize a model file in one command: an ONNX file (or a torch module by
dotted factory path), a calibration folder, a backend; writes the int8
ONNX, checks it against the simulation in onnxruntime and OpenVINO, and
lists the operations that stay float.

    python tools/quantize_model.py model.onnx --calib calib/ \\
        --backend openvino --out work_dirs/model_int8.onnx
    python tools/quantize_model.py model.onnx --calib images/ \\
        --image-size 48 320 --mean 127.5 127.5 127.5 --std 127.5 127.5 127.5
"""
import argparse

from mmrazor_quant.backends import backend_names


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('model', help='.onnx file, or the dotted path of a '
                        'function returning a torch.nn.Module')
    parser.add_argument('--calib', required=True,
                        help='calibration folder (.npy/.npz/.bin/images)')
    parser.add_argument('--backend', default='openvino',
                        choices=backend_names(deployable=True))
    parser.add_argument('--out', help='the .onnx to write (default: '
                        '<model>_<backend>_int8.onnx beside the model)')
    parser.add_argument('--shape', type=int, nargs='+',
                        help='shape of one sample (needed for .bin)')
    parser.add_argument('--dtype', default='float32')
    parser.add_argument('--image-size', type=int, nargs=2,
                        metavar=('H', 'W'), help='read images at this size')
    parser.add_argument('--mean', type=float, nargs=3, default=None)
    parser.add_argument('--std', type=float, nargs=3, default=None)
    parser.add_argument('--bgr', action='store_true',
                        help='the model takes BGR images')
    parser.add_argument('--float-nodes', nargs='*', default=[],
                        help='node names kept float')
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--calib-steps', type=int)
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    from mmrazor_quant.apis.front_door import quantize_file
    dataset = dict(dtype=args.dtype)
    if args.shape:
        dataset['shape'] = args.shape
    if args.image_size:
        dataset['image'] = dict(size=tuple(args.image_size),
                                color='BGR' if args.bgr else 'RGB')
        if args.mean:
            dataset['image']['mean'] = args.mean
        if args.std:
            dataset['image']['std'] = args.std
    quantize_file(args.model, args.calib, args.backend, args.out,
                  args.float_nodes, args.batch_size, args.calib_steps,
                  **dataset)


if __name__ == '__main__':
    main()
