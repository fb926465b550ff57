"""The make-up of the graph OpenVINO's CPU plugin executes.

``compiled.get_runtime_model()`` lists the layers the plugin runs after its
transformations and fusions, each with its ``layerType``, its
``runtimePrecision`` and, once a call has run at a shape, the oneDNN or JIT
``primitiveType`` it picked for that shape. Two exports of one model that
compile to the same counts run the same kernels; a residual ``Add`` left out
of its conv shows up as an extra eltwise (``Subgraph``/``Eltwise``) layer, a
conv reading a zero-point input as a kernel of another precision.

The fused post-ops of a kernel (a sum, a clamp, a per-channel multiply) are
not in that runtime info; oneDNN prints them when it creates the primitive
(``ONEDNN_VERBOSE=profile_create``): :func:`onednn_primitives` runs one call
in a child process with it and counts the primitives by kind,
implementation, memory descriptors, attributes (post-op values left out)
and problem size.
"""
import collections
import json
import os
import re
import subprocess
import sys
from typing import Counter, Dict, Sequence, Tuple

__all__ = ['RUNTIME_KEYS', 'runtime_layers', 'precisions_of',
           'layer_differences', 'onednn_primitives']

#: What a layer is counted by: type, precision and the kernel picked.
RUNTIME_KEYS = ('layerType', 'runtimePrecision', 'primitiveType')
#: Layers that execute nothing: their counts follow the model's parameters.
NOT_EXECUTED = ('Const', 'Input', 'Parameter', 'Output', 'Result')

Layer = Tuple[str, ...]


def runtime_layers(compiled,
                   keys: Sequence[str] = RUNTIME_KEYS,
                   executed_only: bool = True) -> Counter[Layer]:
    """Counts of the compiled model's runtime layers by ``keys``.

    Args:
        compiled (openvino.CompiledModel): The compiled model; for the
            ``primitiveType`` of a model with a dynamic shape, after a call
            at the shape of interest (before it, most are ``undef``).
        keys (Sequence[str]): The runtime info fields counted. Defaults to
            ``RUNTIME_KEYS``.
        executed_only (bool): Leave out constants, inputs and outputs.
            Defaults to True.

    Returns:
        Counter: ``(value of each key, ...)`` -> number of layers.
    """
    counts: Counter[Layer] = collections.Counter()
    for op in compiled.get_runtime_model().get_ordered_ops():
        info = op.get_rt_info()
        if executed_only and info['layerType'].astype(str) in NOT_EXECUTED:
            continue
        counts[tuple(info[k].astype(str) for k in keys)] += 1
    return counts


def precisions_of(compiled, layer_type: str) -> Dict[str, int]:
    """How many of the compiled model's ``layer_type`` layers (e.g.
    ``'Deconvolution'``) run at each runtime precision (``{'u8': 2}``)."""
    layers = runtime_layers(compiled, keys=('layerType', 'runtimePrecision'))
    return {precision: count for (kind, precision), count in layers.items()
            if kind == layer_type}


def layer_differences(ours: Counter[Layer],
                      theirs: Counter[Layer]) -> Dict[Layer, Tuple[int,
                                                                   int]]:
    """``layer -> (ours, theirs)`` for every layer counted differently."""
    return {layer: (ours[layer], theirs[layer])
            for layer in sorted(set(ours) | set(theirs))
            if ours[layer] != theirs[layer]}


#: One call of a model in a child process that oneDNN's verbose mode is
#: on in from its start (the CPU plugin's oneDNN reads it once); the
#: ``exec`` mode fails there on the input's reorder, ``profile_create``
#: does not.
_CALL = """
import json, sys
import numpy as np
import openvino as ov
path, shape, config = sys.argv[1], json.loads(sys.argv[2]), json.loads(
    sys.argv[3])
compiled = ov.Core().compile_model(path, 'CPU', config)
x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
compiled.create_infer_request().infer([x])
"""
#: The values of an eltwise post-op (``eltwise_linear:12.04``): they follow
#: the qparams, not the kernel.
_ELTWISE_VALUES = re.compile(
    r'(eltwise_[a-z_]+)(?::-?\d[\d.]*(?:e[-+]?\d+)?)+')


def onednn_primitives(path: str, shape: Sequence[int],
                      config: Dict[str, object]) -> Counter[Layer]:
    """The oneDNN primitives OpenVINO's CPU plugin creates to compile
    ``path`` with ``config`` and call it once at input ``shape``.

    Args:
        path (str): A model file (``.onnx`` or ``.xml``).
        shape (Sequence[int]): The input's shape for the call.
        config (dict): The ``compile_model`` configuration.

    Returns:
        Counter: ``(kind, implementation, memory descriptors, attributes,
        problem)`` -> number created (eltwise post-op values left out).

    Raises:
        subprocess.CalledProcessError: If the call fails.
    """
    env = dict(os.environ, ONEDNN_VERBOSE='profile_create')
    out = subprocess.run(
        [sys.executable, '-c', _CALL, path, json.dumps(list(shape)),
         json.dumps(config)],
        env=env, capture_output=True, text=True, check=True).stdout
    counts: Counter[Layer] = collections.Counter()
    for line in out.splitlines():
        fields = line.split(',')
        # onednn_verbose,v1,primitive,create:...,cpu,kind,impl,prop,mds,
        # attrs,aux,problem,ms
        if len(fields) < 13 or not fields[3].startswith('create:'):
            continue
        kind, impl, _, mds, attrs, _, problem = fields[5:12]
        counts[(kind, impl, mds, _ELTWISE_VALUES.sub(r'\1', attrs),
                problem)] += 1
    return counts
