"""How far a quantized imported model is from the float file it came from,
as the evaluator of ``tools/ptq.py``: the file itself runs in onnxruntime
on each test batch, and the quantized simulation's outputs are compared
with it (SQNR in dB and the agreement of the last axis' argmax)."""
from typing import List, Optional, Sequence

import numpy as np
import torch
from mmengine.evaluator import BaseMetric
from mmengine.registry import METRICS

from mmrazor_quant.utils.sqnr import sqnr_from_sums

__all__ = ['FloatReferenceMetric']


@METRICS.register_module()
class FloatReferenceMetric(BaseMetric):
    """SQNR of the model's first output against the float ONNX file.

    Args:
        path (str): The float ``.onnx`` (the model's own file).
        input_names (Sequence[str], optional): Defaults to the file's.
        prefix (str, optional): Metric name prefix. Defaults to
            ``'float_ref'``.
    """
    default_prefix = 'float_ref'

    def __init__(self, path: str,
                 input_names: Optional[Sequence[str]] = None,
                 collect_device: str = 'cpu',
                 prefix: Optional[str] = None) -> None:
        super().__init__(collect_device, prefix)
        import onnxruntime as ort
        self.session = ort.InferenceSession(
            path, providers=['CPUExecutionProvider'])
        self.input_names = list(input_names or [
            i.name for i in self.session.get_inputs()])

    def process(self, data_batch: dict, data_samples: Sequence) -> None:
        inputs = data_batch['inputs']
        if isinstance(inputs, (list, tuple)):
            inputs = torch.stack(list(inputs))
        feed = {n: inputs[n].float().numpy() for n in self.input_names} \
            if isinstance(inputs, dict) else \
            {self.input_names[0]: inputs.float().numpy()}
        ref = self.session.run(None, feed)[0]
        ours = np.stack([s.detach().cpu().numpy() if isinstance(
            s, torch.Tensor) else np.asarray(s) for s in data_samples])
        ours = ours.reshape(ref.shape)
        self.results.append(dict(
            signal=float((ref.astype(np.float64)**2).sum()),
            noise=float(((ours - ref).astype(np.float64)**2).sum()),
            agree=float((ours.argmax(-1) == ref.argmax(-1)).mean()),
            n=len(ref)))

    def compute_metrics(self, results: List[dict]) -> dict:
        signal = sum(r['signal'] for r in results)
        noise = sum(r['noise'] for r in results)
        n = sum(r['n'] for r in results)
        agree = sum(r['agree'] * r['n'] for r in results) / max(n, 1)
        return dict(sqnr_db=sqnr_from_sums(signal, noise),
                    argmax_agreement=float(agree))
