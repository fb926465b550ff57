"""Backend rule tables: where a backend quantizes activations."""
from dataclasses import dataclass, field
from typing import FrozenSet, Mapping

from .op_kinds import OpKind

__all__ = ['QuantRules', 'InputSelector']


class InputSelector:
    """Which inputs of an op a backend quantizes."""
    #: only the first tensor input (conv/linear data input, pooling input)
    FIRST = 'first'
    #: every tensor input (eltwise ops, matmul, concat)
    ALL = 'all'
    #: inputs of an add that do not come straight from a conv/linear; if all
    #: do, every input but the first (TensorRT fuses one conv into the add)
    RESIDUAL = 'residual'
    #: inputs of an add other than the output of a conv/linear that only
    #: the add reads (seen through identity modules), which stays float:
    #: OpenVINO fuses the add into that conv as a sum post-op, where a fake
    #: quant would lose its rounding; of several such convs, the first
    SUM = 'sum'


@dataclass(frozen=True)
class QuantRules:
    """Where activations are quantized, as a backend executes them.

    Two styles cover the backends here and can be mixed:

    * input quantization (OpenVINO, TensorRT, academic): a fake quant sits
      on the inputs of the ops in ``quantized_inputs``; one fake quant per
      tensor is shared by all the consumers that quantize it, consumers that
      do not quantize keep the float tensor;
    * output quantization (torch native / fbgemm): a fake quant sits on the
      outputs of the ops in ``quantized_outputs`` and every consumer sees
      the quantized tensor; with ``fold_activations`` it moves past a
      following ReLU/ReLU6/clamp (the backend fuses them).

    Args:
        quantized_inputs (Mapping[str, str]): Op kind to
            :class:`InputSelector`. Defaults to empty.
        quantized_outputs (FrozenSet[str]): Op kinds whose outputs are
            quantized. Defaults to empty.
        fold_activations (bool): Quantize after a following activation.
            Defaults to False.
        share_input_qparams (FrozenSet[str]): Op kinds whose output is
            re-quantized with the fake quant of their (quantized) input,
            like torch's quantized average pooling. Defaults to empty.
        quantize_model_input (bool): Quantize the model's image input
            itself (output style). Defaults to False.
        grid_preserving (FrozenSet[str]): Op kinds whose output stays on
            the grid of a quantized input, so a second fake quant after them
            is redundant and removed. Defaults to max pooling, shape ops and
            ReLU-like activations.
        quantize_before (FrozenSet[str]): Op kinds a quantized input's fake
            quant moves above, onto their input, when nothing else reads
            that input and every reader of their output quantizes it: the
            op then runs on the quantized tensor (max pooling and reshapes
            commute with a per-tensor grid, so the values are the same).
            Defaults to empty.
        scale_shifts_unquantized (bool): An add or mul whose other operand
            is a constant (a number or a module attribute: a scale-shift)
            quantizes no input, whatever ``quantized_inputs`` says: OpenVINO
            runs it as a post-op of the op before it, and NNCF places no
            fake quant there. Defaults to False.
    """
    quantized_inputs: Mapping[str, str] = field(default_factory=dict)
    quantized_outputs: FrozenSet[str] = frozenset()
    fold_activations: bool = False
    share_input_qparams: FrozenSet[str] = frozenset()
    quantize_model_input: bool = False
    grid_preserving: FrozenSet[str] = frozenset(
        {OpKind.MAXPOOL, OpKind.SHAPE, OpKind.ACTIVATION})
    quantize_before: FrozenSet[str] = frozenset()
    scale_shifts_unquantized: bool = False

    def __post_init__(self) -> None:
        allowed = {InputSelector.FIRST, InputSelector.ALL,
                   InputSelector.RESIDUAL, InputSelector.SUM}
        for kind, selector in self.quantized_inputs.items():
            if selector not in allowed:
                raise ValueError(f'quantized_inputs[{kind!r}] must be one of '
                                 f'{sorted(allowed)}, got {selector!r}')

    def as_table(self) -> str:
        """A Markdown table of the rules (for docs and ``list_modules``)."""
        rows = ['| op kind | quantized |', '| --- | --- |']
        if self.quantize_model_input:
            rows.append('| model input | output |')
        for kind, sel in sorted(self.quantized_inputs.items()):
            rows.append(f'| {kind} | inputs ({sel}) |')
        for kind in sorted(self.quantized_outputs):
            fold = ' (after a following ReLU)' if self.fold_activations else ''
            rows.append(f'| {kind} | output{fold} |')
        for kind in sorted(self.share_input_qparams):
            rows.append(f'| {kind} | output, with its input\'s qparams |')
        for kind in sorted(self.quantize_before):
            rows.append(f'| {kind} | its input, for consumers that quantize '
                        'its output |')
        return '\n'.join(rows)
