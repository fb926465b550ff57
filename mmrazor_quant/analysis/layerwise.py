"""Layer-wise analysis: quantize one layer at a time, everything else
float, and measure the error at the model outputs."""
from typing import List, Sequence

from mmengine.utils import ProgressBar
from torch import Tensor, nn

from mmrazor_quant.models.fake_quants.utils import disable_fake_quant
from mmrazor_quant.models.utils import tensor_graph_module
from .graphwise import LayerError, analysis_mode
from .layers import find_quantized_layers, run_batches
from .metrics import ErrorAccumulator

__all__ = ['layerwise_sensitivity', 'PARTS']

#: What of a layer is quantized in a layer-wise run.
PARTS = ('weight', 'activation', 'both')


def layerwise_sensitivity(model: nn.Module,
                          inputs: Sequence[Tensor],
                          parts: Sequence[str] = ('both', ),
                          show_progress: bool = False) -> List[LayerError]:
    r"""How much quantizing each layer alone hurts the model outputs.

    For each quantized layer (see :func:`~.layers.find_quantized_layers`)
    and each part in ``parts``, only that layer's fake quants are on —
    ``'weight'``: its weight fake quant; ``'activation'``: the fake quant on
    its input; ``'both'`` — and the outputs are compared with those of the
    float model (every fake quant off) on the same batches. Costs
    ``(1 + layers * len(parts)) * len(inputs)`` forwards.

    A layer whose input fake quant is shared (backends that quantize a
    tensor once for all its consumers) quantizes that tensor for every
    consumer in the ``'activation'``/``'both'`` runs.

    Args:
        model (nn.Module): A calibrated ``MMArchitectureQuant`` or quantized
            GraphModule.
        inputs (Sequence[Tensor]): Preprocessed input batches.
        parts (Sequence[str]): Subset of :data:`PARTS`. Defaults to
            ``('both',)``.
        show_progress (bool): Show a progress bar. Defaults to False.

    Returns:
        list[LayerError]: One record per layer and part (``kind`` is the
        part), in graph order; ``extra['fake_quants']`` names the fake
        quants that were on.

    Raises:
        ValueError: If ``parts`` has an unknown entry or ``inputs`` is
            empty.
        RuntimeError: If the model is not calibrated.
    """
    unknown = [p for p in parts if p not in PARTS]
    if unknown or not parts:
        raise ValueError(f'parts must be a non-empty subset of {PARTS}, '
                         f'got {tuple(parts)}')
    if len(inputs) == 0:
        raise ValueError('layerwise_sensitivity needs at least one input '
                         'batch')
    gm = tensor_graph_module(model)
    layers = find_quantized_layers(gm)
    bar = ProgressBar(len(inputs) * (1 + len(layers) * len(parts))) \
        if show_progress else None
    records = []
    try:
        with analysis_mode(gm):
            disable_fake_quant(gm)
            reference = list(run_batches(gm, inputs, bar))
            for index, layer in enumerate(layers):
                for part in parts:
                    fake_quants = layer.fake_quants(part)
                    for fq in fake_quants:
                        fq.enable_fake_quant()
                    acc = ErrorAccumulator()
                    for ref, out in zip(reference,
                                        run_batches(gm, inputs, bar)):
                        acc.update(ref, out)
                    for fq in fake_quants:
                        fq.disable_fake_quant()
                    records.append(
                        LayerError(
                            layer.name,
                            part,
                            index,
                            **acc.result(),
                            extra=dict(fake_quants=[
                                fq.name for fq in fake_quants
                            ])))
    finally:
        if bar is not None:
            bar.file.write('\n')
    return records
