"""Build a QDQ ONNX model with rknn-toolkit2 and run it in the toolkit's
x86 simulator; run by path in ``.venv-rknn``, never imported by the package
(it ships as package data, outside the importable modules).

Usage: ``.venv-rknn/bin/python worker.py JOB.json``. The job (written
by :mod:`mmrazor_quant.deploy.external_env`) holds:

* ``onnx``: the pre-quantized QDQ model; ``input_shape``: its fixed NCHW
  input shape; ``target_platform`` (e.g. ``'rk3588'``);
* ``encode`` (optional, default true): rewrite the model as the toolkit
  reads Q/DQ pairs first;
* ``rknn`` (optional): where to write the ``.rknn``;
* ``inputs`` (optional): an ``.npz`` of float32 NCHW inputs (key ``x``,
  any number of batches of ``input_shape``) and ``outputs``: where to
  write the simulator's outputs (key ``y``);
* ``result``: where to write the result JSON (``ok``, ``versions``,
  ``error``).

The model is first rewritten as the toolkit reads Q/DQ pairs
(``../toolkit_encoding.py``: zero-point-0 pairs at
``127/128`` of their scale, a Q/DQ pair before each residual add's conv);
``build(do_quantization=False)`` then keeps the model's own scales and
zero-points; the toolkit calibrates nothing. The simulator runs the model
built in this process: a ``.rknn`` loaded back with ``load_rknn`` only runs
on a board. Every file is written under a temporary name and renamed when
complete.

It imports only the standard library, numpy, onnx and rknn (its venv has no
real torch and an older numpy than the main one).
"""
import importlib.util
import json
import os
import os.path as osp
import sys
import traceback

import numpy as np


def _replace_into(path, write, suffix=''):
    """Write ``path`` through ``write(tmp)`` and rename it into place
    (``suffix``: an extension the writer insists on)."""
    tmp = f'{path}.part{suffix}'
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _check(ret, step):
    if ret != 0:
        raise RuntimeError(f'rknn-toolkit2 {step} failed (returned {ret}); '
                           'its log is above')


def _versions():
    from importlib.metadata import version
    return {name: version(name)
            for name in ('rknn-toolkit2', 'numpy', 'onnx')}


def _encoded(onnx_path, work_dir):
    """``onnx_path`` rewritten for the toolkit (in ``work_dir``) and the
    rewrite's counts."""
    import onnx
    path = osp.join(osp.dirname(osp.dirname(osp.abspath(__file__))),
                    'toolkit_encoding.py')
    spec = importlib.util.spec_from_file_location('rknn_toolkit_encoding',
                                                  path)
    encoding = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(encoding)
    model = onnx.load(onnx_path)
    counts = encoding.encode_for_rknn_toolkit(model)
    # The toolkit reads a model only from a path ending in '.onnx'.
    out = osp.join(work_dir, 'model_rknn_encoded.onnx')
    onnx.save(model, out)
    return out, counts


def run(job, result):
    """Build ``job['onnx']``; export and simulate as the job asks."""
    from rknn.api import RKNN
    onnx_path = job['onnx']
    if job.get('encode', True):
        onnx_path, result['encoding'] = _encoded(
            onnx_path, osp.dirname(osp.abspath(job['result'])))
    channels = job['input_shape'][1]
    rknn = RKNN(verbose=bool(job.get('verbose', False)))
    try:
        # Mean 0, std 1: the input is fed as preprocessed float32 and the
        # toolkit quantizes it with the model's own input Q/DQ pair.
        _check(rknn.config(mean_values=[[0] * channels],
                           std_values=[[1] * channels],
                           target_platform=job['target_platform']),
               'config')
        _check(rknn.load_onnx(model=onnx_path,
                              inputs=[job['input_name']],
                              input_size_list=[job['input_shape']]),
               'load_onnx')
        _check(rknn.build(do_quantization=False), 'build')
        if job.get('rknn'):
            _replace_into(job['rknn'],
                          lambda tmp: _check(rknn.export_rknn(tmp),
                                             'export_rknn'), '.rknn')
        if job.get('inputs'):
            x = np.load(job['inputs'])['x'].astype(np.float32)
            _check(rknn.init_runtime(), 'init_runtime')
            # The model is built for the job's shape (a batch of one, as
            # the exported .rknn): the samples run one at a time.
            batch = job['input_shape'][0]
            ys = []
            for start in range(0, len(x), batch):
                outs = rknn.inference(inputs=[x[start:start + batch]],
                                      data_format='nchw')
                if outs is None:
                    raise RuntimeError('rknn-toolkit2 inference returned '
                                       'None; its log is above')
                ys.append(np.asarray(outs[0], dtype=np.float32))
            y = np.concatenate(ys)

            def save(tmp):
                with open(tmp, 'wb') as f:
                    np.savez(f, y=y)
            _replace_into(job['outputs'], save)
    finally:
        rknn.release()


def main(job_path):
    with open(job_path) as f:
        job = json.load(f)
    result = dict(ok=True)
    try:
        result['versions'] = _versions()
        run(job, result)
    except Exception as e:  # reported to the caller through result.json
        traceback.print_exc()
        result.update(ok=False, error=f'{type(e).__name__}: {e}')

    def write(tmp):
        with open(tmp, 'w') as f:
            json.dump(result, f, indent=1)
    _replace_into(job['result'], write)
    return 0 if result['ok'] else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1]))
