"""PNU-AUC's class prior: the labeled share (default) and the paper's whole-training-set share."""

import numpy as np
import pytest

from qsg_jax import baselines
from qsg_jax.baselines import pnu_auc


def _data(seed=0, n_l=24, n_u=60, d=3):
  rng = np.random.default_rng(seed)
  x_l = rng.random((n_l, d)).astype(np.float32)
  y_l = np.array([0] * (n_l - 6) + [1] * 6)          # labeled share of positives: 0.25
  x_u = rng.random((n_u, d)).astype(np.float32)
  y_u = (rng.random(n_u) < 0.5).astype(np.int64)     # hidden true labels, about half positive
  return x_l, y_l, x_u, y_u


def test_training_set_prior_is_the_share_over_labeled_and_unlabeled_points():
  y_l, y_u = np.array([0, 0, 1, 1]), np.array([0, 0, 0, 0, 0, 1])
  np.testing.assert_allclose(pnu_auc.training_set_prior(y_l, y_u), [3 / 10])
  # Ordinal splits j: share of labels > j; a class may be absent from the unlabeled points.
  y_l, y_u = np.array([0, 1, 2, 2]), np.array([0, 0, 1, 0])
  np.testing.assert_allclose(pnu_auc.training_set_prior(y_l, y_u), [4 / 8, 2 / 8])
  # No unlabeled point: the labeled share (estimate_prior).
  np.testing.assert_allclose(pnu_auc.training_set_prior(y_l, np.array([], np.int64)),
                             pnu_auc.estimate_prior(y_l))


def test_fit_with_the_training_set_prior_equals_the_fit_with_that_number():
  x_l, y_l, x_u, y_u = _data()
  pi = pnu_auc.training_set_prior(y_l, y_u)
  assert pi[0] != pytest.approx(0.25)
  kw = dict(lam=0.5, sigma=1.0, gamma=0.6)
  oracle = baselines.fit_pnu_auc(x_l, y_l, x_u, prior=pi, **kw)
  number = baselines.fit_pnu_auc(x_l, y_l, x_u, prior=float(pi[0]), **kw)
  np.testing.assert_allclose(oracle.prior, pi)
  np.testing.assert_allclose(oracle.alpha, number.alpha, rtol=1e-6, atol=1e-7)
  # The default is unchanged: the labeled share, also spelled "labeled".
  default = baselines.fit_pnu_auc(x_l, y_l, x_u, **kw)
  spelled = baselines.fit_pnu_auc(x_l, y_l, x_u, prior="labeled", **kw)
  np.testing.assert_allclose(default.prior, [0.25])
  np.testing.assert_allclose(default.alpha, spelled.alpha)
  # The prior enters the PU coefficients (eta > 0), so the two solutions differ.
  assert np.max(np.abs(oracle.alpha - default.alpha)) > 1e-4


def test_supervised_end_does_not_depend_on_the_prior():
  x_l, y_l, x_u, y_u = _data(1)
  kw = dict(lam=0.5, sigma=1.0, gamma=0.0)
  a = baselines.fit_pnu_auc(x_l, y_l, x_u, **kw)
  b = baselines.fit_pnu_auc(x_l, y_l, x_u, prior=pnu_auc.training_set_prior(y_l, y_u), **kw)
  np.testing.assert_allclose(a.alpha, b.alpha, rtol=1e-6, atol=1e-7)


def test_multiclass_fit_takes_the_training_set_priors():
  rng = np.random.default_rng(2)
  x_l, x_u = rng.random((30, 2)).astype(np.float32), rng.random((40, 2)).astype(np.float32)
  y_l, y_u = np.arange(30) % 3, rng.integers(0, 3, 40)
  pi = pnu_auc.training_set_prior(y_l, y_u)
  model = baselines.fit_m_pnu_auc(x_l, y_l, x_u, lam=0.5, sigma=1.0, gamma=0.4, prior=pi)
  np.testing.assert_allclose(model.prior, [np.mean(np.r_[y_l, y_u] > j) for j in range(2)])


@pytest.mark.parametrize("y_u,match", [
    (np.array([0, -1, 1]), "unlabeled marker -1"),
    (np.array([0, 2]), "labels up to 2"),
    (np.array([0.5, 1.0]), "non-integer"),
    (np.array(["a", "b"]), "integer labels"),
    (np.array([[0, 1]]), "shape"),
])
def test_training_set_prior_refuses_bad_unlabeled_labels(y_u, match):
  with pytest.raises(ValueError, match=match):
    pnu_auc.training_set_prior(np.array([0, 1, 0]), y_u)


def test_unknown_prior_string_is_refused():
  x_l, y_l, x_u, _ = _data()
  with pytest.raises(ValueError, match="training_set_prior"):
    baselines.fit_pnu_auc(x_l, y_l, x_u, lam=0.5, sigma=1.0, gamma=0.5, prior="training")
