"""Evaluate an exported ONNX model on the config's test set with the
config's metric (as tools/test.py does for the PyTorch model).

    python tools/test_deployed.py CONFIG MODEL.onnx --backend openvino
"""
import argparse

import torch
from mmengine.config import DictAction

from mmrazor_quant.deploy.from_config import (
    build_test_evaluator,
    preprocessed_batches,
)
from mmrazor_quant.deploy.runtimes import load_runtime, runtime_names
from mmrazor_quant.registry import MODELS, register_all_modules
from mmrazor_quant.utils.config_checks import load_config
from mmrazor_quant.utils.quiet import quiet_stack_warnings


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description='Test an exported model')
    parser.add_argument('config', help='the config the model came from')
    parser.add_argument('model', help='the exported .onnx')
    parser.add_argument('--backend', default='onnxruntime',
                        choices=runtime_names(), help='runtime')
    parser.add_argument('--cfg-options', nargs='+', action=DictAction,
                        help='override settings of the config')
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    quiet_stack_warnings()
    cfg = load_config(args.config)
    if args.cfg_options:
        cfg.merge_from_dict(args.cfg_options)
    register_all_modules(init_default_scope=False)
    from mmengine.registry import init_default_scope
    init_default_scope(cfg.get('default_scope', 'mmcls'))
    preprocessor = MODELS.build(cfg.model.data_preprocessor)
    holder = torch.nn.Module()
    holder.data_preprocessor = preprocessor
    run = load_runtime(args.backend, args.model)
    evaluator = build_test_evaluator(cfg)
    for inputs, samples in preprocessed_batches(holder, cfg):
        scores = torch.from_numpy(run(inputs.numpy())).softmax(1)
        for sample, score in zip(samples, scores):
            sample.set_pred_score(score).set_pred_label(score.argmax())
        evaluator.process([s.to_dict() for s in samples])
    metrics = evaluator.evaluate(len(evaluator.metrics[0].results))
    for name, value in metrics.items():
        print(f'{name}: {value:.2f}')


if __name__ == '__main__':
    main()
