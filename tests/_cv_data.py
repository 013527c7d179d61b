"""Small data and engine settings shared by the cross-validation tests."""

import numpy as np

# Tiny engine settings: a CV and a loop of fits on them compile in seconds.
SMALL = dict(num_steps=64, num_frequencies=8, unlabeled_batch_size=16)


def ordinal(n=130, k=3, d=3, seed=0):
  """50 labeled points of k ordered classes (a smooth latent score, noisy) and 80 unlabeled."""
  rng = np.random.default_rng(seed)
  x = rng.random((n, d)).astype(np.float32)
  latent = np.sin(3 * x[:, 0]) + x[:, 1] ** 2 + 0.2 * rng.normal(size=n)
  y = np.digitize(latent, np.quantile(latent, np.linspace(0, 1, k + 1)[1:-1]))
  return x[:50], y[:50], x[50:]

# Tinier settings for the bad-input tests (errors come before or after a few steps).
TINY = dict(num_steps=32, num_frequencies=8, unlabeled_batch_size=16)


def semi_ordinal(n=90, seed=0):
  """(x [n, 3], y: 3 ordered classes 0..2, y with every third row -1 = unlabeled)."""
  rng = np.random.default_rng(seed)
  x = rng.random((n, 3))
  y = np.digitize(x.sum(axis=1), [1.2, 1.8])
  return x, y, np.where(np.arange(n) % 3 == 0, -1, y)
