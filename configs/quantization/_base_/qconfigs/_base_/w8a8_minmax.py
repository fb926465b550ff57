# ./w8a8.py with activation ranges from the calibration set's minimum and
# maximum (no moving average): what the small MNIST and digit models use.
_base_ = ['./w8a8.py']

global_qconfig = dict(a_observer=dict(type='mmrazor_quant.MinMaxObserver'))
quantizer = dict(global_qconfig=global_qconfig)
