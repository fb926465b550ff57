"""The toy codebase's adapter: which models are its, the size to trace
them at, and a traceable stand-in for the loss's loop over data samples."""
import contextlib
from typing import Iterator, List, Sequence

import torch
import torch.fx
import torch.nn.functional as F

from mmrazor_quant.models.codebases import BaseCodebase
from mmrazor_quant.registry import CODEBASES
from .models import TallyNet


def labels_of(data_samples: Sequence) -> torch.Tensor:
    """The targets of a batch; one graph node, run for real each call."""
    return torch.cat([s.gt_label.label for s in data_samples])


torch.fx.wrap('labels_of')


def _traceable_loss(self, logits, data_samples):
    return dict(loss=F.cross_entropy(logits, labels_of(data_samples)))


@contextlib.contextmanager
def tally_rewrites() -> Iterator[None]:
    """Swap ``TallyNet.loss`` for its traceable version meanwhile."""
    original = TallyNet.__dict__['loss']
    TallyNet.loss = _traceable_loss
    try:
        yield
    finally:
        TallyNet.loss = original


@CODEBASES.register_module()
class TallyCodebase(BaseCodebase):
    """Models of the ``toy_codebase`` package: classifiers traced at
    12 x 12 unless the test pipeline says otherwise; the head's ``predict``
    (a loop over data samples) stays out of every graph."""
    packages = ('toy_codebase', )
    task = 'classification'
    default_input_hw = (12, 12)
    skipped_methods = ('toy_codebase.models.TallyHead.predict', )

    def tracer_rewrites(self):
        return tally_rewrites()

    def gt_labels(self, data_samples: Sequence) -> torch.Tensor:
        return labels_of(data_samples)

    def dummy_data_samples(self, inputs, tensor_outputs) -> List:
        from mmcls.structures import ClsDataSample
        num_classes = tensor_outputs.shape[-1]
        return [ClsDataSample().set_gt_label(i % num_classes)
                for i in range(len(inputs))]
