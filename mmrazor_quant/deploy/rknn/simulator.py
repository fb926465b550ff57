"""rknn-toolkit2 from the main venv: build a QDQ ONNX model into a
``.rknn`` and run it in the toolkit's x86 simulator, through the worker
script in the toolkit's own venv (``make rknn-env``)."""
import os
import os.path as osp
import tempfile
from typing import List, Optional, Sequence, Tuple

import numpy as np

from mmrazor_quant.registry import RUNTIMES
from ..external_env import ExternalEnv
from ..runtimes import BaseRuntime, Runner

__all__ = ['RKNN_ENV', 'build_rknn', 'RKNNSimulatorRuntime']

#: The toolkit's venv (``.venv-rknn`` at the repository root, or
#: ``$MMRAZOR_QUANT_RKNN_VENV``).
RKNN_ENV = ExternalEnv(name='RKNN', venv='.venv-rknn',
                       make_target='rknn-env',
                       env_var='MMRAZOR_QUANT_RKNN_VENV')
#: The worker script, run by the toolkit's venv (package data, not a
#: module of this package).
_WORKER = osp.join(osp.dirname(osp.abspath(__file__)), 'scripts',
                   'worker.py')
#: The chip the toolkit builds for unless told otherwise.
DEFAULT_PLATFORM = 'rk3588'


def _input_name(onnx_path: str) -> str:
    import onnx
    model = onnx.load(onnx_path, load_external_data=False)
    inits = {i.name for i in model.graph.initializer}
    return next(i.name for i in model.graph.input if i.name not in inits)


def build_rknn(onnx_path: str,
               input_shape: Sequence[int],
               target_platform: str = DEFAULT_PLATFORM,
               rknn_path: Optional[str] = None,
               inputs: Optional[np.ndarray] = None,
               encode: bool = True) -> Tuple[dict, Optional[np.ndarray]]:
    """Build ``onnx_path`` with rknn-toolkit2, keeping its qparams.

    Args:
        onnx_path (str): A QDQ ONNX model.
        input_shape (Sequence[int]): The fixed NCHW input shape to build for.
        target_platform (str): The chip. Defaults to ``'rk3588'``.
        rknn_path (str, optional): Write the ``.rknn`` there (under a
            temporary name, renamed when complete). Defaults to None.
        inputs (np.ndarray, optional): Float32 NCHW inputs to run in the
            simulator, batches of ``input_shape`` concatenated. Defaults to
            None.
        encode (bool): Write the model as the toolkit reads Q/DQ pairs
            first (:mod:`~mmrazor_quant.deploy.rknn.toolkit_encoding`), so
            that the ``.rknn`` holds its qparams; False hands the toolkit
            the model as it is. Defaults to True.

    Returns:
        tuple: The worker's result (``versions``, ``encoding``) and the
        simulator's outputs (None without ``inputs``).

    Raises:
        ToolchainMissing: If ``.venv-rknn`` is not built.
        ToolchainError: If the toolkit fails (its log is quoted).
    """
    with tempfile.TemporaryDirectory(prefix='mmrq_rknn_') as tmp:
        # The toolkit reads a model only from a path ending in '.onnx'.
        model = osp.join(tmp, 'model.onnx')
        os.symlink(osp.abspath(onnx_path), model)
        job = dict(onnx=model,
                   input_name=_input_name(onnx_path),
                   input_shape=[int(d) for d in input_shape],
                   target_platform=target_platform,
                   encode=encode,
                   rknn=osp.abspath(rknn_path) if rknn_path else None)
        if inputs is not None:
            np.savez(osp.join(tmp, 'inputs.npz'),
                     x=np.ascontiguousarray(inputs, dtype=np.float32))
            job.update(inputs=osp.join(tmp, 'inputs.npz'),
                       outputs=osp.join(tmp, 'outputs.npz'))
        result = RKNN_ENV.run(_WORKER, job, tmp)
        outputs = None
        if inputs is not None:
            outputs = np.load(job['outputs'])['y']
    return result, outputs


@RUNTIMES.register_module()
class RKNNSimulatorRuntime(BaseRuntime):
    """rknn-toolkit2's x86 simulator running the QDQ ONNX an ``.rknn`` was
    built from: for each batch, one toolkit process builds the file for a
    batch of one, as the exporter built the ``.rknn``, and runs the samples
    one by one. The NPU multiplies s8 activations by s8 weights.
    """
    name = 'rknn_simulator'

    def load(self, path: str,
             target_platform: str = DEFAULT_PLATFORM) -> Runner:
        """A function running ``path``.

        Args:
            path (str): The ``.onnx`` the ``.rknn`` was built from.
            target_platform (str): The chip. Defaults to ``'rk3588'``.

        Raises:
            ToolchainMissing: If ``.venv-rknn`` is not built (at load time).
        """
        RKNN_ENV.python

        def run(x: np.ndarray) -> List[np.ndarray]:
            _, y = build_rknn(path, (1, ) + tuple(x.shape[1:]),
                              target_platform, inputs=x)
            return [y]

        return run
