"""Tiny data shared by the bad-input tests (RELIABILITY.md is their index).

The messages these tests match name rows, counts and class sizes of exactly these arrays, so the
draws and their order are fixed.
"""

import numpy as np

# Ordinal and binary problems of 24 labeled points (metrics, fit, baselines, thresholds, data).
_RNG = np.random.default_rng(0)
X_L = _RNG.uniform(size=(24, 3)).astype(np.float32)
Y_L = np.arange(24) % 3                    # 3 ordinal classes, 8 points each
Y_B = np.arange(24) % 2                    # binary, 0 = negative, 1 = positive
X_U = _RNG.uniform(size=(30, 3)).astype(np.float32)
SCORES = _RNG.normal(size=24).astype(np.float32)
TINY = dict(num_steps=8, num_frequencies=4, unlabeled_batch_size=8, chunk_size=8, block_group=4)

# A binary problem of 30 labeled points, 15 per class (folds, the baselines and their CV).
_RNG_30 = np.random.default_rng(0)
Y_30 = np.arange(30) % 2
X_L_30 = _RNG_30.uniform(size=(30, 2)).astype(np.float32)
X_U_30 = _RNG_30.uniform(size=(10, 2)).astype(np.float32)
GRID_30 = {"lam": [1.0], "sigma": [1.0], "gamma": [0.5]}

# A binary problem of 60 points in 3 dimensions (the ROC-SVM and its estimator).
_RNG_ROC = np.random.default_rng(0)
X_ROC = _RNG_ROC.random((60, 3))
Y_ROC = (X_ROC[:, 0] + 0.3 * _RNG_ROC.random(60) > 0.6).astype(int)


def with_value(values, index, value):
  """A float64 copy of ``values`` with ``value`` written at ``index``."""
  out = np.array(values, np.float64)
  out[index] = value
  return out
