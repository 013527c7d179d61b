"""ROC-SVM risks: incomplete, streamed full and sorted full U-statistics against literal sums.

References are NumPy: the loss of every pair written out, and its gradient with respect to the
scores, dU/ds+_i = sum_j l'(m_ij) / (n+ n-), dU/ds-_j = -sum_i l'(m_ij) / (n+ n-). Each jitted
function is compiled once or twice here (compilation dominates the run time on CPU).
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from qsg_jax import memory
from qsg_jax.roc_svm import objective
from qsg_jax.roc_svm import pairs as pairs_lib

LOSSES = ("hinge", "squared_hinge", "logistic")


def _literal_loss(name, m):
  if name == "hinge":
    return max(0.0, 1.0 - m)
  if name == "squared_hinge":
    return max(0.0, 1.0 - m) ** 2
  return float(np.log1p(np.exp(-m)))


def _literal_deriv(name, m):
  if name == "hinge":
    return -1.0 if m < 1.0 else 0.0
  if name == "squared_hinge":
    return -2.0 * max(0.0, 1.0 - m)
  return -1.0 / (1.0 + np.exp(m))


def _scores(n_pos=13, n_neg=29, seed=0):
  rng = np.random.default_rng(seed)
  return (rng.normal(0.5, 1.0, n_pos).astype(np.float32),
          rng.normal(0.0, 1.0, n_neg).astype(np.float32))


def _literal_full(name, s_pos, s_neg):
  """U_n and its gradient with respect to the scores, pair by pair in float64."""
  s_pos, s_neg = np.asarray(s_pos, np.float64), np.asarray(s_neg, np.float64)
  total, g_pos, g_neg = 0.0, np.zeros(s_pos.size), np.zeros(s_neg.size)
  for i, j in itertools.product(range(s_pos.size), range(s_neg.size)):
    m = s_pos[i] - s_neg[j]
    total += _literal_loss(name, m)
    g_pos[i] += _literal_deriv(name, m)
    g_neg[j] -= _literal_deriv(name, m)
  pairs = s_pos.size * s_neg.size
  return total / pairs, g_pos / pairs, g_neg / pairs


@jax.jit
def _losses_and_derivs(m):
  out = []
  for name in LOSSES:
    loss = objective.get_margin_loss(name)
    out.append((loss.value(m), loss.deriv(m), jax.vmap(jax.grad(loss.value))(m)))
  return out


def test_margin_loss_values_and_derivatives():
  m = np.array([-2.0, -0.3, 0.4, 0.99, 1.3, 4.0], np.float32)
  for name, (value, deriv, autodiff) in zip(LOSSES, _losses_and_derivs(m)):
    np.testing.assert_allclose(value, [_literal_loss(name, float(v)) for v in m], rtol=1e-6)
    np.testing.assert_allclose(deriv, [_literal_deriv(name, float(v)) for v in m], rtol=1e-6)
    np.testing.assert_allclose(deriv, autodiff, rtol=1e-6)
  with pytest.raises(ValueError, match="unknown ROC-SVM loss 'square'"):
    objective.get_margin_loss("square")


@jax.jit
def _incomplete_risks(s_pos, s_neg, pairs):
  return [objective.incomplete_risk(s_pos, s_neg, pairs, name) for name in LOSSES]


def test_incomplete_risk_is_the_mean_over_the_drawn_pairs(key):
  s_pos, s_neg = _scores(10, 25)
  pairs = pairs_lib.sample_pairs(key, s_pos.size, s_neg.size, 250)   # B bucket 256, as in fit
  i, j = np.asarray(pairs.positive), np.asarray(pairs.negative)
  assert i.shape == j.shape == (250,)
  assert i.min() >= 0 and i.max() < s_pos.size and j.min() >= 0 and j.max() < s_neg.size
  for name, got in zip(LOSSES, _incomplete_risks(s_pos, s_neg, pairs)):
    expected = np.mean([_literal_loss(name, float(s_pos[a] - s_neg[b])) for a, b in zip(i, j)])
    np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_incomplete_risk_over_every_pair_once_is_the_full_risk():
  s_pos, s_neg = _scores(10, 25)                   # 250 pairs: the same compiled risks
  grid = np.array(list(itertools.product(range(s_pos.size), range(s_neg.size))), np.int32)
  pairs = pairs_lib.PairIndices(grid[:, 0], grid[:, 1])
  for name, got in zip(LOSSES, _incomplete_risks(s_pos, s_neg, pairs)):
    np.testing.assert_allclose(got, _literal_full(name, s_pos, s_neg)[0], rtol=1e-5)


def test_sample_pairs_are_uniform_over_the_product(key):
  # 480 draws of B = 250 (the sampler compiled for fit's pairs): 120,000 pairs in all.
  size = pairs_lib._sample_pairs._cache_size()
  draws = [pairs_lib.sample_pairs(jax.random.fold_in(key, k), 3, 4, 250 - k % 2)
           for k in range(480)]
  assert pairs_lib._sample_pairs._cache_size() <= size + 1   # B = 249 and 250 share a bucket
  assert {d.positive.shape for d in draws} == {(249,), (250,)}
  cell = np.concatenate([np.asarray(d.positive) * 4 + np.asarray(d.negative) for d in draws])
  freq = np.bincount(cell, minlength=12) / cell.size
  np.testing.assert_allclose(freq, 1 / 12, atol=0.004)   # ~5 standard errors
  with pytest.raises(ValueError, match="need n\\+ >= 1"):
    pairs_lib.sample_pairs(key, 0, 4, 10)


@pytest.mark.parametrize("name,pairs_per_block", [
    ("logistic", 100),           # three per block, the last block ragged (13 = 4 x 3 + 1)
    ("squared_hinge", None),     # all pairs at once
])
def test_streamed_full_risk_and_gradient_match_all_pairs(name, pairs_per_block):
  s_pos, s_neg = _scores()
  literal, g_pos, g_neg = _literal_full(name, s_pos, s_neg)

  def streamed(a, b):
    return objective.full_risk(a, b, name, pairs_per_block)

  value, grads = jax.jit(jax.value_and_grad(streamed, argnums=(0, 1)))(s_pos, s_neg)
  np.testing.assert_allclose(value, literal, rtol=1e-5)
  np.testing.assert_allclose(grads[0], g_pos, rtol=1e-4, atol=1e-7)
  np.testing.assert_allclose(grads[1], g_neg, rtol=1e-4, atol=1e-7)


@jax.jit
def _sorted_values_and_grads(s_pos, s_neg):
  return [jax.value_and_grad(lambda a, b, n=name: objective.full_risk_sorted(a, b, n),
                             argnums=(0, 1))(s_pos, s_neg) for name in ("hinge", "squared_hinge")]


def test_sorted_full_risk_and_gradient_match_all_pairs():
  s_pos, s_neg = _scores(40, 90, seed=3)
  # Shifted scores: the centering inside keeps float32 prefix sums accurate.
  results = _sorted_values_and_grads(s_pos + 100.0, s_neg + 100.0)
  for name, (value, grads) in zip(("hinge", "squared_hinge"), results):
    literal, g_pos, g_neg = _literal_full(name, s_pos, s_neg)
    np.testing.assert_allclose(value, literal, rtol=1e-5)
    np.testing.assert_allclose(grads[0], g_pos, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(grads[1], g_neg, rtol=1e-4, atol=1e-6)


def test_sorted_full_risk_refuses_the_logistic_loss():
  with pytest.raises(ValueError, match="Use full_risk \\(streamed pairs\\)"):
    objective.full_risk_sorted(jnp.zeros(3), jnp.zeros(4), "logistic")
  with pytest.raises(ValueError, match="Use full_risk"):
    objective.Objective(loss="logistic", risk="full_sorted").check()


def test_materializing_too_many_pairs_is_refused(monkeypatch):
  monkeypatch.setattr(memory, "available_bytes", lambda device=None: 10**7)
  with pytest.raises(memory.InsufficientMemoryError,
                     match="20000 x 80000 pairs per block.*Stream the pairs in smaller blocks"):
    objective.check_pair_block(20000, 80000, None)
  with pytest.raises(memory.InsufficientMemoryError, match="Stream the pairs"):
    objective.full_risk(jnp.zeros(20000), jnp.zeros(80000), "hinge", None)
  # Streaming the same problem in small blocks is accepted: rows of positives per block.
  assert objective.check_pair_block(20000, 80000, 2**14) == 1
  assert objective.check_pair_block(20000, 80000, 160000) == 2


def test_objective_adds_the_ridge_and_the_kernel_penalty(key):
  rng = np.random.default_rng(1)
  x = rng.normal(size=(12, 3)).astype(np.float32)
  pairs = pairs_lib.sample_pairs(key, 5, 7, 250)
  i, j = np.asarray(pairs.positive), np.asarray(pairs.negative)
  beta = rng.normal(size=3).astype(np.float32)
  data = pairs_lib.make_pair_data(x[:5], x[5:], pairs, pad=False)
  margins = (x[:5][i] - x[5:][j]) @ beta
  linear, kernel = objective.Objective(), objective.Objective(model="kernel")
  np.testing.assert_allclose(jax.jit(lambda *a: linear(*a))(beta, data, 0.3),
                             np.mean(np.maximum(0.0, 1.0 - margins)) + 0.15 * beta @ beta,
                             rtol=1e-5)
  # Kernel model: rows are kernel rows, penalty theta^T K theta (paper Eq. 10).
  gram = x @ x.T
  theta = rng.normal(size=12).astype(np.float32)
  kdata = pairs_lib.make_pair_data(gram[:5], gram[5:], pairs, pad=False)
  scores = gram @ theta
  want = (np.mean(np.maximum(0.0, 1.0 - (scores[:5][i] - scores[5:][j])))
          + 0.15 * theta @ gram @ theta)
  np.testing.assert_allclose(jax.jit(lambda *a: kernel(*a))(theta, kdata, 0.3),
                             want, rtol=1e-4)


@pytest.mark.parametrize("field,value,message", [
    ("risk", "partial", "unknown risk 'partial'"),
    ("model", "rbf", "unknown model 'rbf'"),
    ("loss", "l2", "unknown ROC-SVM loss 'l2'"),
])
def test_objective_check_names_the_bad_field(field, value, message):
  with pytest.raises(ValueError, match=message):
    objective.Objective(**{field: value}).check()


# One loss per risk: each risk masks padding its own way (pair mask, +-inf scores, sorted masks).
_PADDING_CASES = (("incomplete", "hinge"), ("full", "logistic"), ("full_sorted", "squared_hinge"))


@jax.jit
def _values_and_grads(beta, data, lam):
  return [jax.value_and_grad(objective.Objective(loss=loss, risk=risk, pairs_per_block=64))(
      beta, data, lam) for risk, loss in _PADDING_CASES]


def _literal_objective(risk, loss, beta, x_pos, x_neg, pairs, lam):
  """Objective and its gradient in beta, summed pair by pair over the real entries."""
  if risk == "incomplete":
    index = zip(np.asarray(pairs.positive), np.asarray(pairs.negative))
  else:
    index = itertools.product(range(len(x_pos)), range(len(x_neg)))
  index = list(index)
  value, grad = 0.0, np.zeros(beta.size)
  for i, j in index:
    diff = np.asarray(x_pos[i], np.float64) - x_neg[j]
    value += _literal_loss(loss, float(diff @ beta))
    grad += _literal_deriv(loss, float(diff @ beta)) * diff
  return value / len(index) + 0.5 * lam * beta @ beta, grad / len(index) + lam * beta


def test_padding_changes_neither_the_objective_nor_its_gradient(key):
  rng = np.random.default_rng(2)
  x_pos = rng.normal(0.5, 1.0, (37, 3)).astype(np.float32)
  x_neg = rng.normal(0.0, 1.0, (70, 3)).astype(np.float32)
  pairs = pairs_lib.sample_pairs(key, 37, 70, 250)
  padded = pairs_lib.make_pair_data(x_pos, x_neg, pairs, pad=True)
  assert padded.x_pos.shape[0] == pairs_lib.padded_length(37) == 64
  assert padded.x_neg.shape[0] == pairs_lib.padded_length(70) == 128
  assert padded.pairs.positive.shape[0] == pairs_lib.padded_length(250) == 256
  assert int(padded.pos_valid.sum()) == 37 and int(padded.pair_valid.sum()) == 250
  beta = rng.normal(size=3).astype(np.float32)
  for (risk, loss), (value, grad) in zip(_PADDING_CASES, _values_and_grads(beta, padded, 0.1)):
    want_value, want_grad = _literal_objective(risk, loss, beta, x_pos, x_neg, pairs, 0.1)
    np.testing.assert_allclose(value, want_value, rtol=1e-5, err_msg=risk)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=1e-6, err_msg=risk)


def test_padded_length_buckets():
  assert [pairs_lib.padded_length(n) for n in (1, 7, 64, 65, 300, 1000, 1010, 1025, 5000)] == [
      64, 64, 64, 128, 320, 1024, 1024, 1088, 5120]
  for n in range(1, 20000, 37):
    assert n <= pairs_lib.padded_length(n) <= max(n + 63, n * 17 / 16)
