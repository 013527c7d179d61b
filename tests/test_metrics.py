"""Metrics against scikit-learn and hand-computed values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

from qsg_jax import metrics


@pytest.mark.parametrize("n,ties", [(9, False), (500, True), (50_000, True)])
def test_binary_auc_matches_sklearn(n, ties):
  rng = np.random.default_rng(n)
  y = np.resize([0, 1, 1], n)
  rng.shuffle(y)
  s = rng.normal(size=n) + 0.7 * y
  if ties:
    s = np.round(s, 1)
  got = float(metrics.binary_auc(jnp.asarray(s, jnp.float32), jnp.asarray(y)))
  np.testing.assert_allclose(got, skm.roc_auc_score(y, s.astype(np.float32)), atol=2e-6)


def test_binary_auc_hand_example_and_all_ties():
  scores = jnp.array([0.1, 0.4, 0.35, 0.8])
  assert float(metrics.binary_auc(scores, jnp.array([0, 0, 1, 1]))) == 0.75
  assert float(metrics.binary_auc(jnp.ones(6), jnp.array([0, 1, 0, 1, 1, 0]))) == 0.5


def test_binary_auc_single_class_is_nan():
  assert np.isnan(float(metrics.binary_auc(jnp.arange(4.0), jnp.zeros(4, jnp.int32))))


def test_ordinal_auc_is_mean_of_split_aucs():
  rng = np.random.default_rng(1)
  y = rng.integers(0, 5, 1000)
  s = rng.normal(size=1000) + 0.5 * y
  per_split = metrics.split_aucs(jnp.asarray(s, jnp.float32), jnp.asarray(y), 5)
  expected = [skm.roc_auc_score(y > j, s.astype(np.float32)) for j in range(4)]
  np.testing.assert_allclose(np.asarray(per_split), expected, atol=2e-6)
  np.testing.assert_allclose(
      float(metrics.ordinal_auc(jnp.asarray(s, jnp.float32), jnp.asarray(y), 5)),
      np.mean(expected), atol=2e-6)


def test_auc_jit_matches_no_jit():
  rng = np.random.default_rng(2)
  y = jnp.asarray(rng.integers(0, 2, 300))
  s = jnp.asarray(rng.normal(size=300), jnp.float32)
  assert float(jax.jit(metrics.binary_auc)(s, y)) == pytest.approx(float(metrics.binary_auc(s, y)))


def test_mae_and_shape_errors():
  assert float(metrics.mean_absolute_error(jnp.array([0, 2, 4]), jnp.array([1, 2, 2]))) == 1.0
  with pytest.raises(ValueError, match=r"scores must be a vector of shape \[n\]"):
    metrics.binary_auc(jnp.zeros((3, 2)), jnp.zeros(3))
  with pytest.raises(ValueError, match="same length"):
    metrics.mean_absolute_error(jnp.zeros(3), jnp.zeros(4))


def test_split_aucs_of_shared_and_per_split_scores_with_a_mask_match_sklearn():
  rng = np.random.default_rng(3)
  y = rng.integers(0, 4, 200)
  shared, per_split = rng.normal(size=200), rng.normal(size=(200, 3))
  mask = rng.random(200) < 0.6
  for scores in (shared, per_split):
    column = lambda j: scores if scores.ndim == 1 else scores[:, j]
    expected = [skm.roc_auc_score(y[mask] > j, column(j)[mask]) for j in range(3)]
    np.testing.assert_allclose(metrics.split_aucs(scores, y, 4, mask), expected, atol=1e-12)
    jitted = jax.jit(metrics.split_aucs, static_argnums=2)(scores.astype(np.float32), y, 4, mask)
    np.testing.assert_allclose(jitted, expected, atol=1e-5)
  with pytest.raises(ValueError, match=r"scores must have shape \[n\] or \[n, k-1\] = \[200, 3\]"):
    metrics.split_aucs(per_split[:, :2], y, 4)


def test_binary_auc_under_jit_gives_nan_for_a_label_that_is_not_binary():
  scores = jnp.array([0.1, 0.4, 0.35, 0.8])
  for bad in (np.nan, 2.0, 0.5):
    labels = jnp.array([0.0, bad, 1.0, 1.0])
    assert np.isnan(float(jax.jit(metrics.binary_auc)(scores, labels))), bad
  assert float(jax.jit(metrics.binary_auc)(scores, jnp.array([-1, -1, 1, 1]))) == 0.75
