"""Quantization error analysis: where a quantized model loses accuracy
(graph-wise and layer-wise), per-tensor statistics, plots, and automatic
mixed precision from the layer-wise sensitivity."""
from .graphwise import LayerError, analysis_mode, graphwise_error, worst_first
from .layers import QuantLayer, find_graph_fake_quants, find_quantized_layers
from .layerwise import PARTS, layerwise_sensitivity
from .metrics import (
                     HIGHER_IS_BETTER,
                     METRICS,
                     ErrorAccumulator,
                     cosine,
                     mse,
                     snr_db,
)
from .mixed_precision import (
                     float_layers_evaluator,
                     high_precision_qconfig,
                     mixed_precision_rules,
                     rank_layers,
                     select_by_accuracy,
                     select_by_budget,
                     write_mixed_precision_config,
)
from .plots import format_table, plot_histograms, plot_layer_errors, write_csv
from .statistics import (
                     TensorStats,
                     activation_samples,
                     noise_histogram,
                     tensor_statistics,
                     weight_statistics,
)

__all__ = [
    'LayerError', 'analysis_mode', 'graphwise_error', 'worst_first',
    'QuantLayer', 'find_graph_fake_quants', 'find_quantized_layers',
    'PARTS', 'layerwise_sensitivity',
    'HIGHER_IS_BETTER', 'METRICS', 'ErrorAccumulator', 'cosine', 'mse',
    'snr_db', 'float_layers_evaluator', 'high_precision_qconfig',
    'mixed_precision_rules', 'rank_layers', 'select_by_accuracy',
    'select_by_budget', 'write_mixed_precision_config', 'format_table',
    'plot_histograms', 'plot_layer_errors', 'write_csv', 'TensorStats',
    'activation_samples', 'noise_histogram', 'tensor_statistics',
    'weight_statistics'
]
