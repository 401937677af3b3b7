#!/usr/bin/python3
"""Writes scikit-learn's 8x8 digits (1,797 images, shipped by Debian's python3-sklearn) as .npy
files: a shuffled 4/5 training split and a held-out 1/5. Pixels are scaled to [0, 1]."""
import gzip
import os
import sys

import numpy as np

SOURCE = "/usr/lib/python3/dist-packages/sklearn/datasets/data/digits.csv.gz"
out = sys.argv[1] if len(sys.argv) > 1 else "build/examples/digits"
os.makedirs(out, exist_ok=True)
with gzip.open(SOURCE, "rt") as f:
    data = np.loadtxt(f, delimiter=",")
x = (data[:, :64] / 16.0).astype(np.float32)
y = data[:, 64].astype(np.int32)
order = np.random.default_rng(0).permutation(len(y))
x, y = x[order], y[order]
split = len(y) * 4 // 5
onehot = np.eye(10, dtype=np.float32)[y]
np.save(os.path.join(out, "train_x.npy"), x[:split])
np.save(os.path.join(out, "train_y.npy"), y[:split])
np.save(os.path.join(out, "test_x.npy"), x[split:])
np.save(os.path.join(out, "test_onehot.npy"), onehot[split:])
print(f"digits: {split} training and {len(y) - split} held-out images in {out}")
