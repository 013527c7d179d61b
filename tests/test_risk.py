"""The mini-batch risk, its weights and its score gradients against direct sums and jax.grad."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from qsg_jax.engine import losses
from qsg_jax.engine import risk
from qsg_jax.engine import sampling


def _problem(k=4, n_l=30, n_u=9, seed=0):
  rng = np.random.default_rng(seed)
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)])
  return y, rng.normal(size=n_l).astype(np.float32), rng.normal(size=n_u).astype(np.float32)


def test_whole_labeled_set_weights_give_the_empirical_risk():
  """With every labeled point as a slot, R^j equals the double sums over D_p^j x D_n^j (Eq. 7)."""
  k = 4
  y, f_l, f_u = _problem(k)
  gamma = np.array([0.2, 0.5, 0.9], np.float32)

  @jax.jit   # one compilation instead of one per eager operation
  def weights_risk_and_losses(y, f_l, f_u):
    pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=k))
    f = jnp.concatenate([f_l, f_u])
    return (pos_w, neg_w, risk.minibatch_risk("squared", f_l, f_u, pos_w, neg_w, gamma),
            losses.SQUARED.value(f[:, None], f[None, :]))       # loss(a, b) of every pair

  pos_w, neg_w, got, pair_loss = weights_risk_and_losses(jnp.asarray(y), jnp.asarray(f_l),
                                                        jnp.asarray(f_u))
  np.testing.assert_allclose(pos_w.sum(1), 1.0, rtol=1e-6)
  np.testing.assert_allclose(neg_w.sum(1), 1.0, rtol=1e-6)
  pair_loss = np.asarray(pair_loss, np.float64)
  unlabeled = np.arange(y.size, y.size + f_u.size)
  expected = []
  for j in range(k - 1):
    p, n = np.flatnonzero(y > j), np.flatnonzero(y <= j)
    r_pn = pair_loss[np.ix_(p, n)].mean()               # the double sums, pair by pair
    r_pu = pair_loss[np.ix_(p, unlabeled)].mean()
    r_nu = pair_loss[np.ix_(unlabeled, n)].mean()
    expected.append(gamma[j] * r_pn + (1 - gamma[j]) * (r_pu + r_nu - 0.5))
  np.testing.assert_allclose(got, np.mean(expected), rtol=1e-5)


# One compilation per shape instead of one per eager operation.
_weights = jax.jit(risk.subproblem_weights)


def test_minibatch_weights_are_class_shares_over_batch_size():
  counts = jnp.array([10, 30, 60])
  slots = sampling.slot_classes(None, 3, labeled_batch_size=4)
  pos_w, neg_w = _weights(slots, counts)
  # Subproblem 0: positives are classes 1, 2 with shares 30/90 and 60/90, 4 slots each.
  np.testing.assert_allclose(pos_w[0], [0] * 4 + [30 / 90 / 4] * 4 + [60 / 90 / 4] * 4, rtol=1e-6)
  np.testing.assert_allclose(neg_w[1], [10 / 40 / 4] * 4 + [30 / 40 / 4] * 4 + [0] * 4, rtol=1e-6)


@pytest.mark.parametrize("name", ["squared", "hinge", "logistic"])
def test_score_grads_match_jax_grad(name):
  k = 3
  y, f_l, f_u = _problem(k, n_l=12, n_u=7, seed=1)
  gamma = jnp.array([0.3, 0.8])

  @jax.jit   # one compilation instead of one per eager operation
  def both(y, f_l, f_u):
    pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=k))
    return (risk.score_grads(name, f_l, f_u, pos_w, neg_w, gamma),
            jax.grad(risk.minibatch_risk, argnums=(1, 2))(name, f_l, f_u, pos_w, neg_w, gamma))

  (g_l, g_u), (ref_l, ref_u) = both(jnp.asarray(y), jnp.asarray(f_l), jnp.asarray(f_u))
  assert float(jnp.max(jnp.abs(ref_l))) > 1e-3 and float(jnp.max(jnp.abs(ref_u))) > 1e-3
  np.testing.assert_allclose(g_l, ref_l, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(g_u, ref_u, rtol=1e-5, atol=1e-7)


# alpha_i = -eta grad_alpha R(f_prev + alpha . phi_i) at alpha = 0 (Eq. 13 against jax.grad
# through the new block) is test_engine.py's
# test_functional_gradient_is_jax_grad_of_the_risk_through_the_new_block (the library's
# functional_gradient, with the training step's block_features_of); the -eta is dsg_update's
# (test_engine.py's DsgUpdateVariantsTest).


def test_binary_case_is_qsg_s2auc_risk():
  """k = 2: one subproblem, positives class 1 (QSG-S2AUC's Eq. 7)."""
  y, f_l, f_u = _problem(2, n_l=10, n_u=5, seed=3)
  pos_w, neg_w = _weights(jnp.asarray(y), jnp.asarray(np.bincount(y, minlength=2)))
  np.testing.assert_allclose(pos_w[0], (y == 1) / np.sum(y == 1), rtol=1e-6)
  np.testing.assert_allclose(neg_w[0], (y == 0) / np.sum(y == 0), rtol=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_hinge_pair_sums_by_sorting_count_the_pairs_the_dense_sums_count(seed):
  """Scores on a grid of quarters (f_a - f_b = 1 exactly for many pairs: the hinge's kinks),
  with ties: ``hinge_pair_sums`` equals the dense pair sums of l1, l2 (``subproblem_derivatives``)
  for every subproblem; a kink counted otherwise would differ by a whole weight (>= 1/12)."""
  rng = np.random.default_rng(seed)
  k = 3
  y = np.concatenate([np.arange(k), rng.integers(0, k, 21)]).astype(np.int32)
  f_l = jnp.asarray(rng.integers(-6, 7, y.size) / 4.0, jnp.float32)
  pos_w, neg_w = risk.subproblem_weights(jnp.asarray(y), jnp.bincount(jnp.asarray(y), length=k))
  d = losses.subproblem_derivatives("hinge", f_l, f_l[:3])
  dense = pos_w * (d.l1 @ neg_w.T).T + neg_w * (pos_w @ d.l2)
  assert np.any(np.asarray(f_l)[:, None] - np.asarray(f_l)[None, :] == 1.0)
  sorted_sums = jax.vmap(risk.hinge_pair_sums, in_axes=(None, 0, 0))(f_l, pos_w, neg_w)
  np.testing.assert_allclose(sorted_sums, dense, rtol=1e-6, atol=1e-7)
