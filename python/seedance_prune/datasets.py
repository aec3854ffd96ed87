"""Data that Debian ships, so accuracy is measured without downloads.

- `digits()`: scikit-learn's 1,797 8×8 handwritten digits (python3-sklearn), a fixed split.
- `fashion_mnist()`: the 60,000 + 10,000 28×28 Fashion-MNIST images (dataset-fashion-mnist,
  IDX files under /usr/share/datasets/fashion-mnist).
Both return (train_x, train_y, test_x, test_y) tensors, images as N×1×H×W floats in [0, 1].
"""
import gzip
import os

import numpy as np
import torch

FASHION_MNIST_DIR = "/usr/share/datasets/fashion-mnist"


class DataUnavailable(RuntimeError):
    """The Debian package holding a dataset is not installed; the message names it."""


def digits(test_share=0.25, seed=0):
    try:
        from sklearn.datasets import load_digits
    except ImportError as e:
        raise DataUnavailable("digits needs scikit-learn: apt-get install python3-sklearn") from e
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    y = torch.tensor(d.target, dtype=torch.long)
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(seed))
    n_test = int(len(y) * test_share)
    test, train = order[:n_test], order[n_test:]
    return x[train], y[train], x[test], y[test]


def _idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if data[:2] != b"\0\0" or data[2] != 0x08:
        raise DataUnavailable(f"{path}: not an IDX file of unsigned bytes")
    dims = data[3]
    shape = tuple(int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(dims))
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def fashion_mnist(root=None):
    root = root or os.environ.get("SEEDANCE_FASHION_MNIST", FASHION_MNIST_DIR)
    names = ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
             "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
    missing = [n for n in names if not os.path.exists(os.path.join(root, n))]
    if missing:
        raise DataUnavailable(f"Fashion-MNIST not found in {root} (missing {missing[0]}): "
                              "apt-get install dataset-fashion-mnist")
    tx, ty, vx, vy = (_idx(os.path.join(root, n)) for n in names)

    def images(a):
        return torch.from_numpy(a.copy()).float().unsqueeze(1) / 255.0

    def labels(a):
        return torch.from_numpy(a.astype(np.int64))

    return images(tx), labels(ty), images(vx), labels(vy)
