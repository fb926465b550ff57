"""Advanced post-training quantization passes.

Each pass is a function ``pass(model, data, **kwargs)`` registered in
``TASK_UTILS`` and selected from ``PTQLoop(ptq_passes=[...])``:

* :func:`equalize_cross_layer` - cross-layer equalization (before
  calibration);
* :func:`correct_bias` - empirical bias correction;
* :func:`fast_correct_bias` - bias correction of the weight grids' mean
  shift from the float inputs' means (no quantized pass);
* :func:`adaround`, :func:`brecq`, :func:`qdrop` - learned rounding by
  layer / block reconstruction (after calibration).
"""
from mmrazor_quant.models.utils import tensor_graph_module
from .bias_correction import correct_bias, output_channel_means
from .equalization import (
                           equalize_cross_layer,
                           find_equalization_pairs,
                           output_channel_ranges,
)
from .fast_bias_correction import fast_correct_bias
from .graph_utils import find_units
from .pipeline import PTQPass, build_ptq_passes, collect_inputs, run_ptq_passes
from .reconstruction import (
                           adaround,
                           bake_rounding,
                           brecq,
                           qdrop,
                           reconstruct,
                           sample_inputs,
)

__all__ = [
    'equalize_cross_layer', 'find_equalization_pairs',
    'output_channel_ranges', 'correct_bias', 'output_channel_means',
    'fast_correct_bias',
    'adaround', 'brecq', 'qdrop', 'reconstruct', 'bake_rounding',
    'sample_inputs', 'find_units', 'tensor_graph_module', 'PTQPass',
    'build_ptq_passes', 'collect_inputs', 'run_ptq_passes'
]
