# AdamW, one epoch of linear warm-up, then cosine decay to zero, stepped per
# iteration. Sized for the 4,000 MNIST5k training digits at batch size 64
# (63 iterations per epoch): with so few steps AdamW converges far faster
# than SGD from scratch. A config that changes max_epochs moves the cosine's
# ``end`` with it: ``dict(_base_.param_scheduler[1], end=max_epochs)``
# (configs/fp32/vit_mnist.py).
max_epochs = 6

optim_wrapper = dict(
    optimizer=dict(type='AdamW', lr=3e-3, weight_decay=0.01))

param_scheduler = [
    dict(
        type='LinearLR',
        start_factor=0.1,
        by_epoch=True,
        begin=0,
        end=1,
        convert_to_iter_based=True),
    dict(
        type='CosineAnnealingLR',
        eta_min=0.0,
        by_epoch=True,
        begin=1,
        end=max_epochs,
        convert_to_iter_based=True),
]

train_cfg = dict(by_epoch=True, max_epochs=max_epochs, val_interval=1)
val_cfg = dict()
test_cfg = dict()
