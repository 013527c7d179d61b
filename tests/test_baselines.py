"""Exact baselines (SAMULT, PNU-AUC, multi-class versions, the exact QSG minimizer) against double
sums, jax.grad, L-BFGS and the engine's own risk."""

import doctest
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize
import scipy.sparse as sp

from qsg_jax import baselines
from qsg_jax import data
from qsg_jax.engine import kernels
from qsg_jax import memory
from qsg_jax.engine import risk
from qsg_jax.baselines import exact_split
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import pairwise_risk
from qsg_jax.baselines import pnu_auc
from qsg_jax.baselines import samult
from qsg_jax.baselines import scoring
from tests import _bad_inputs as toy
from tests.conftest import raises_short

COEFFICIENTS = {"samult": samult.samult_coefficients, "pnu_auc": pnu_auc.pnu_coefficients}
FITS = {"samult": baselines.fit_samult, "pnu_auc": baselines.fit_pnu_auc}


def _binary(n_l=24, n_u=16, d=2, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n_l + n_u, d)).astype(np.float32)
  y = (x[:, 0] + 0.3 * rng.normal(size=n_l + n_u) > 0.5).astype(np.int64)
  y[:2] = [0, 1]
  return x[:n_l], y[:n_l], x[n_l:], y[n_l:]


def _ordinal(n=400, k=4, d=3, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n, d)).astype(np.float32)
  latent = np.sin(3 * x[:, 0]) + x[:, 1] ** 2 + 0.1 * rng.normal(size=n)
  return x, np.digitize(latent, np.quantile(latent, np.linspace(0, 1, k + 1)[1:-1]))


def _loss(a, b):
  return (1.0 - a + b) ** 2


def _groups(y_l, n_u):
  pos = np.concatenate([y_l > 0, np.zeros(n_u, bool)])
  neg = np.concatenate([y_l == 0, np.zeros(n_u, bool)])
  unl = np.concatenate([np.zeros(y_l.size, bool), np.ones(n_u, bool)])
  return pos, neg, unl


def _paper_risk(method, f, pos, neg, unl, gamma, prior):
  """The papers' risks written as literal means over pairs of points."""
  fp, fn, fu = f[pos], f[neg], f[unl]
  mean_pairs = lambda a, b: np.mean([_loss(s, t) for s, t in itertools.product(a, b)])
  r_pn = mean_pairs(fp, fn)
  if method == "samult":   # QSG-S2AUC Eq. 8
    return gamma * r_pn + (1 - gamma) * (mean_pairs(fp, fu) + mean_pairs(fu, fn) - 0.5)
  tp, tn = prior, 1 - prior  # Sakai et al. 2018, PU / NU AUC risks
  if gamma >= 0:
    r_pu = mean_pairs(fp, fu) / tn - tp / tn * mean_pairs(fp, fp)
    return (1 - gamma) * r_pn + gamma * r_pu
  r_nu = mean_pairs(fu, fn) / tp - tn / tp * mean_pairs(fn, fn)
  return (1 + gamma) * r_pn - gamma * r_nu


# Both risks as one program each for every case below (one shape), not one per eager operation.
_RISK = jax.jit(pairwise_risk.risk)
_QUADRATIC_FORM_RISK = jax.jit(pairwise_risk.quadratic_form_risk)


@pytest.mark.parametrize("method,gamma", [("samult", 0.3), ("samult", 1.0), ("pnu_auc", 0.7),
                                          ("pnu_auc", -0.6), ("pnu_auc", 0.0)])
def test_matrix_forms_equal_explicit_double_sums(method, gamma):
  _, y_l, _, _ = _binary(n_l=9, n_u=0)
  n_u, prior = 5, 0.4
  pos, neg, unl = _groups(y_l, n_u)
  f = np.random.default_rng(1).normal(size=pos.size).astype(np.float32)
  expected = _paper_risk(method, f, pos, neg, unl, gamma, prior)
  coef, const = COEFFICIENTS[method](jnp.float32(gamma), jnp.float32(prior))
  group_w = pairwise_risk.group_weights(pos, neg, unl)
  f = jnp.asarray(f)
  np.testing.assert_allclose(_RISK(f, group_w, coef, const), expected, rtol=1e-5)
  np.testing.assert_allclose(_QUADRATIC_FORM_RISK(f, group_w, coef, const), expected, rtol=1e-4)


def test_empty_group_contributes_nothing():
  # 14 points as in test_matrix_forms_equal_explicit_double_sums (its compiled risks); the 11
  # past the first three belong to no group.
  pos, neg, unl = np.zeros((3, 14), bool)
  pos[0], neg[1:3] = True, True
  coef, const = samult.samult_coefficients(jnp.float32(1.0))
  group_w = pairwise_risk.group_weights(pos, neg, unl)
  f = jnp.zeros(14, jnp.float32).at[:3].set(jnp.array([0.5, 0.1, -0.2]))
  expected = np.mean([_loss(0.5, 0.1), _loss(0.5, -0.2)])
  np.testing.assert_allclose(_RISK(f, group_w, coef, const), expected, rtol=1e-6)
  np.testing.assert_allclose(_QUADRATIC_FORM_RISK(f, group_w, coef, const), expected, rtol=1e-6)


def _objective_parts(model, y_l):
  """Kernel, group weights, coefficients, constant and lambda of a fitted binary model."""
  n_u = model.centers.shape[0] - y_l.size
  group_w = pairwise_risk.group_weights(*_groups(y_l, n_u), model.centers.dtype)
  prior = 0.0 if model.prior is None else model.prior[0]
  coef, const = COEFFICIENTS[model.method](jnp.asarray(model.gamma[0], model.centers.dtype),
                                           jnp.asarray(prior, model.centers.dtype))
  kernel = kernels.gaussian_kernel(model.centers, model.centers, model.sigma[0])
  return kernel, group_w, coef, const, model.lam[0]


# The objective and its gradient as one program each (the same shapes for every case below),
# instead of one compilation per eager operation.
_OBJECTIVE = jax.jit(pairwise_risk.objective)
_OBJECTIVE_GRAD = jax.jit(jax.grad(pairwise_risk.objective))


@pytest.mark.parametrize("method,gamma", [("samult", 0.0), ("samult", 0.6), ("pnu_auc", 0.5),
                                          ("pnu_auc", -0.4)])
def test_closed_form_is_the_minimizer(method, gamma):
  """jax.grad of the objective vanishes at the solution, and L-BFGS on the literal objective
  (pair sums written out, float64) reaches the same scores."""
  x_l, y_l, x_u, _ = _binary()
  with jax.enable_x64(True):
    model = FITS[method](x_l, y_l, x_u, lam=0.25, sigma=2.0, gamma=gamma, dtype=jnp.float64)
    kernel, group_w, coef, const, lam = _objective_parts(model, y_l)
    grad = _OBJECTIVE_GRAD(model.alpha[0], kernel, group_w, coef, const, lam)
    assert float(jnp.max(jnp.abs(grad))) < 1e-9

    pos, neg, unl = (np.asarray(m) for m in _groups(y_l, x_u.shape[0]))
    prior = 0.0 if model.prior is None else float(model.prior[0])
    km = np.asarray(kernel)
    # Well-conditioned variables for L-BFGS: f = K^(1/2) v, so ||f||_H^2 = v^T v.
    w, vecs = np.linalg.eigh(km)
    root = (vecs * np.sqrt(np.maximum(w, 0.0))) @ vecs.T

    def literal(v):
      f = root @ v
      pair = lambda a, b: jnp.mean(_loss(f[a][:, None], f[b][None, :]))
      r_pn = pair(pos, neg)
      if method == "samult":
        r = gamma * r_pn + (1 - gamma) * (pair(pos, unl) + pair(unl, neg) - 0.5)
      elif gamma >= 0:
        r = (1 - gamma) * r_pn + gamma * (pair(pos, unl) - prior * pair(pos, pos)) / (1 - prior)
      else:
        r = (1 + gamma) * r_pn - gamma * (pair(unl, neg) - (1 - prior) * pair(neg, neg)) / prior
      return r + 0.5 * lam * v @ v

    value_and_grad = jax.jit(jax.value_and_grad(literal))
    fun = lambda v: tuple(np.asarray(t, np.float64) for t in value_and_grad(jnp.asarray(v)))
    res = optimize.minimize(fun, np.zeros(km.shape[0]), jac=True, method="L-BFGS-B",
                            options=dict(maxiter=2000, gtol=1e-10, ftol=1e-15))
    f_closed = km @ np.asarray(model.alpha[0])
    np.testing.assert_allclose(root @ res.x, f_closed, atol=1e-5)
    objective = _OBJECTIVE(model.alpha[0], kernel, group_w, coef, const, lam)
    assert float(objective) <= res.fun + 1e-9
    np.testing.assert_allclose(float(objective), res.fun, rtol=1e-7)


def test_float32_solution_matches_float64():
  x_l, y_l, x_u, _ = _binary()
  f32 = baselines.fit_samult(x_l, y_l, x_u, lam=0.25, sigma=2.0, gamma=0.5)
  with jax.enable_x64(True):
    f64 = baselines.fit_samult(x_l, y_l, x_u, lam=0.25, sigma=2.0, gamma=0.5, dtype=jnp.float64)
    s64 = baselines.decision_function(f64, x_u)
  assert f32.alpha.dtype == jnp.float32
  np.testing.assert_allclose(baselines.decision_function(f32, x_u), s64, atol=1e-4)


def test_prior_is_the_labeled_share_of_each_split():
  np.testing.assert_allclose(baselines.estimate_prior(np.array([0, 0, 0, 1])), [0.25])
  np.testing.assert_allclose(baselines.estimate_prior(np.array([0, 1, 2, 2, 1])), [0.8, 0.4])
  x_l, y_l, x_u, _ = _binary()
  model = baselines.fit_pnu_auc(x_l, y_l, x_u, lam=0.5, sigma=1.0, gamma=0.5)
  np.testing.assert_allclose(model.prior, [np.mean(y_l)])
  same = baselines.fit_pnu_auc(x_l, y_l, x_u, lam=0.5, sigma=1.0, gamma=0.5,
                               prior=np.mean(y_l))
  np.testing.assert_array_equal(model.alpha, same.alpha)
  other = baselines.fit_pnu_auc(x_l, y_l, x_u, lam=0.5, sigma=1.0, gamma=0.5, prior=0.2)
  assert np.max(np.abs(np.asarray(other.alpha - model.alpha))) > 1e-3


def test_gamma_endpoints_give_the_supervised_pn_solution():
  """SAMULT gamma = 1 and PNU-AUC gamma (eta) = 0 both solve the labeled-only PN problem: the
  system over every training point gives the unlabeled points zero coefficients, so the fit
  solves on the labeled points alone, with the same function and memory that ignores n_u."""
  x_l, y_l, x_u, _ = _binary()
  kw = dict(lam=0.5, sigma=1.5)
  sam = baselines.fit_samult(x_l, y_l, x_u, gamma=1.0, **kw)
  pnu = baselines.fit_pnu_auc(x_l, y_l, x_u, gamma=0.0, **kw)
  supervised = baselines.fit_samult(x_l, y_l, None, gamma=1.0, **kw)
  assert sam.centers.shape == pnu.centers.shape == (x_l.shape[0], x_l.shape[1])
  np.testing.assert_allclose(sam.alpha, pnu.alpha, rtol=1e-6, atol=1e-7)
  np.testing.assert_array_equal(sam.alpha, supervised.alpha)
  # The literal system (L K + lam/2 I) alpha = r - c over labeled and unlabeled points, float64.
  @jax.jit       # one program, not one compilation per eager operation
  def literal_solution(centers, group_w):
    coef, _ = samult.samult_coefficients(jnp.float64(1.0))
    matrix, rhs = pairwise_risk.stationary_system(
        kernels.gaussian_kernel(centers, centers, 1.5), group_w, coef, 0.5)
    return jnp.linalg.solve(matrix, rhs)

  with jax.enable_x64(True):
    centers = jnp.asarray(np.concatenate([x_l, x_u]), jnp.float64)
    group_w = pairwise_risk.group_weights(*_groups(y_l, x_u.shape[0]), jnp.float64)
    full = np.asarray(literal_solution(centers, group_w))
  np.testing.assert_allclose(full[x_l.shape[0]:], 0.0, atol=1e-12)
  np.testing.assert_allclose(sam.alpha[0], full[:x_l.shape[0]], rtol=1e-4, atol=1e-5)
  huge = np.zeros((300_000, x_l.shape[1]), np.float32)   # refused at gamma = 0.5 (memory test)
  assert baselines.fit_samult(x_l, y_l, huge, gamma=1.0, **kw).centers.shape[0] == x_l.shape[0]
  # At the other end, gamma = 0 (SAMULT) ignores labeled PN pairs: the coefficient says so.
  coef, const = samult.samult_coefficients(jnp.float32(0.0))
  assert float(coef[0, 1]) == 0.0 and float(const) == -0.5


def test_decision_function_is_the_kernel_sum_in_bounded_chunks():
  x, y = _ordinal(n=200, k=4)
  model = baselines.fit_m_samult(x[:60], y[:60], x[60:120], lam=0.5, sigma=[1.0, 2.0, 3.0],
                                 gamma=0.5)
  d2 = ((x[120:, None, :] - np.asarray(model.centers)[None]) ** 2).sum(-1)
  expected = np.stack([np.exp(-s * d2) @ np.asarray(a) for a, s in
                       zip(model.alpha, model.sigma)], axis=1)
  got = baselines.decision_function(model, x[120:], chunk_size=7)
  assert got.shape == (80, 3)
  np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(baselines.decision_function(model, x[120:]), got, rtol=1e-5,
                             atol=1e-6)
  shared = model._replace(sigma=np.full(3, 2.0))   # the one-kernel-block path
  np.testing.assert_allclose(baselines.decision_function(shared, x[120:], chunk_size=16),
                             np.exp(-2.0 * d2) @ np.asarray(model.alpha).T, rtol=1e-4, atol=1e-5)
  assert baselines.decision_function(model, x[:0]).shape == (0, 3)


def test_multiclass_models_equal_binary_fits_of_each_split():
  x, y = _ordinal(n=200, k=4)
  x_l, y_l, x_u = x[:60], y[:60], x[60:120]
  gammas = np.array([0.2, 0.5, 0.8])
  msam = baselines.fit_m_samult(x_l, y_l, x_u, lam=0.5, sigma=2.0, gamma=gammas)
  mpnu = baselines.fit_m_pnu_auc(x_l, y_l, x_u, lam=0.5, sigma=2.0, gamma=gammas - 0.5)
  np.testing.assert_allclose(mpnu.prior, [np.mean(y_l > j) for j in range(3)])
  for j in range(3):
    yj = (y_l > j).astype(int)
    sam = baselines.fit_samult(x_l, yj, x_u, lam=0.5, sigma=2.0, gamma=gammas[j])
    pnu = baselines.fit_pnu_auc(x_l, yj, x_u, lam=0.5, sigma=2.0, gamma=gammas[j] - 0.5)
    np.testing.assert_allclose(msam.alpha[j], sam.alpha[0], rtol=1e-5, atol=1e-6)
    # Split 1 has eta = 0: its binary fit keeps the labeled centers only (zero weight elsewhere).
    padded = np.zeros(mpnu.alpha.shape[1], np.float32)
    padded[:pnu.alpha.shape[1]] = pnu.alpha[0]
    assert pnu.alpha.shape[1] == (x_l.shape[0] if j == 1 else mpnu.alpha.shape[1])
    np.testing.assert_allclose(mpnu.alpha[j], padded, rtol=1e-5, atol=1e-6)
  scores = baselines.decision_function(msam, x[120:])
  aucs = baselines.split_aucs(scores, y[120:], 4)
  assert aucs.shape == (3,) and aucs.min() > 0.8, aucs
  assert baselines.mean_split_auc(scores, y[120:], 4) == pytest.approx(np.mean(aucs))


def _engine_objective(alpha, kernel, y_l, gamma, lam):
  """QS3ORAO's objective as the engine writes it (``qsg_jax.risk``, whole labeled set, every
  unlabeled point as the batch) plus lam/2 ||f||^2, over the expansion f = K alpha."""
  k = int(y_l.max()) + 1
  slots = jnp.asarray(y_l)
  pos_w, neg_w = risk.subproblem_weights(slots, jnp.bincount(slots, length=k))
  f = kernel @ alpha
  n_l = y_l.size
  value = risk.minibatch_risk("squared", f[:n_l], f[n_l:], pos_w.astype(f.dtype),
                              neg_w.astype(f.dtype), jnp.asarray(gamma, f.dtype))
  return value + 0.5 * lam * alpha @ f


def test_exact_qsg_minimizes_the_engine_objective_with_one_function():
  """jax.grad of the engine's risk (independent code) vanishes at the closed form; k = 2 is
  SAMULT; a [k-1] gamma weights each split; one function is worse than k-1 on the training risk."""
  x, y = _ordinal(n=160, k=4)
  x_l, y_l, x_u = x[:50], y[:50], x[50:110]
  gamma = np.array([0.3, 0.6, 0.9])
  with jax.enable_x64(True):
    model = baselines.fit_exact_qsg(x_l, y_l, x_u, lam=0.3, sigma=2.0, gamma=gamma,
                                    dtype=jnp.float64)
    assert model.alpha.shape == (1, 110) and model.binary
    kernel = kernels.gaussian_kernel(model.centers, model.centers, 2.0)
    size = lambda g: float(jnp.max(jnp.abs(g)))
    # One program for the three gradients (kernel and labels fixed, alpha and gamma traced).
    grad = jax.jit(lambda a, g: jax.grad(_engine_objective)(a, kernel, y_l, g, 0.3))
    at_zero = size(grad(jnp.zeros(110), gamma))
    # risk.subproblem_weights works in float32, hence 1e-7 rather than float64 rounding.
    assert size(grad(model.alpha[0], gamma)) < 1e-7 * at_zero
    # Not a stationary point of a neighbouring problem: the test can tell objectives apart.
    assert size(grad(model.alpha[0], gamma[::-1].copy())) > 1e-3 * at_zero

    xb_l, yb_l, xb_u, _ = _binary()
    exact = baselines.fit_exact_qsg(xb_l, yb_l, xb_u, lam=0.25, sigma=2.0, gamma=0.4,
                                    dtype=jnp.float64)
    sam = baselines.fit_samult(xb_l, yb_l, xb_u, lam=0.25, sigma=2.0, gamma=0.4,
                               dtype=jnp.float64)
    np.testing.assert_allclose(exact.alpha, sam.alpha, rtol=1e-9, atol=1e-12)
    scores = baselines.decision_function(model, x[110:])
  assert scores.shape == (50,)
  assert baselines.mean_split_auc(scores, y[110:], 4) > 0.8
  with pytest.raises(ValueError, match="one function for every split, so lam and sigma must be "
                                       "scalars"):
    baselines.fit_exact_qsg(x_l, y_l, x_u, lam=[0.1, 0.2, 0.3], sigma=1.0, gamma=0.5)
  with pytest.raises(memory.InsufficientMemoryError, match="exact_qsg with n = 300050"):
    baselines.fit_exact_qsg(x_l, y_l, np.zeros((300_000, 3), np.float32), lam=1.0, sigma=1.0,
                            gamma=0.5)


def test_split_aucs_use_column_j_for_split_j():
  labels = np.array([0, 1, 2, 0, 1, 2])
  scores = np.stack([labels > 0, ~(labels > 1)], axis=1).astype(np.float32)
  np.testing.assert_allclose(baselines.split_aucs(scores, labels, 3), [1.0, 0.0])
  np.testing.assert_allclose(baselines.split_aucs(labels.astype(float), labels, 3), [1.0, 1.0])
  with pytest.raises(ValueError, match=r"scores must have shape \[n\] or \[n, k-1\]"):
    baselines.split_aucs(scores, labels, 4)


def test_memory_refusal_names_n_size_and_fix():
  x_l, y_l, _, _ = _binary(d=1)
  huge = np.zeros((300_000, 1), np.float32)   # n^2 float32 kernel alone would be 335 GiB
  with pytest.raises(memory.InsufficientMemoryError,
                     match=r"samult with n = 300024 training points.*needs \d+\.\d+ GiB.*"
                           r"Subsample x_unlabeled"):
    baselines.fit_samult(x_l, y_l, huge, lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(memory.InsufficientMemoryError, match=r"cross-validating pnu_auc with n = "):
    baselines.cross_validate("pnu_auc", x_l, y_l, huge, quick=True, num_folds=2)
  assert kernel_expansion.required_bytes(1000) == kernel_expansion.MATRICES_PER_SOLVE * 4e6


def test_bad_inputs_are_refused_before_fitting():
  x_l, y_l, x_u, _ = _binary()
  kw = dict(lam=0.5, sigma=1.0)
  with pytest.raises(ValueError, match=r"gamma must lie in \[0, 1\]; received 1.5"):
    baselines.fit_samult(x_l, y_l, x_u, gamma=1.5, **kw)
  with pytest.raises(ValueError, match=r"gamma must lie in \[-1, 1\]"):
    baselines.fit_pnu_auc(x_l, y_l, x_u, gamma=-1.5, **kw)
  with pytest.raises(ValueError, match=r"lam must lie in \(0, inf\); received 0.0"):
    baselines.fit_samult(x_l, y_l, x_u, lam=0.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match="no unlabeled data but samult gamma"):
    baselines.fit_samult(x_l, y_l, None, gamma=0.5, **kw)
  with pytest.raises(ValueError, match=r"labels must lie in 0..1"):
    baselines.fit_pnu_auc(x_l, np.arange(24) % 3, x_u, gamma=0.0, **kw)
  for prior in (0.0, 1.0, [1.5]):   # one range, the same words at either end
    with pytest.raises(ValueError, match=r"prior must lie in \(0, 1\); received .*training_set"):
      baselines.fit_pnu_auc(x_l, y_l, x_u, gamma=0.5, prior=prior, **kw)
  with pytest.raises(ValueError, match=r"sigma must be a scalar or have shape \[k-1\] = \[3\]"):
    baselines.fit_m_samult(*_ordinal(n=40)[:2], None, lam=1.0, sigma=[1.0, 2.0], gamma=1.0)
  with pytest.raises(ValueError, match="x_unlabeled has 3 features but the model expects 2"):
    baselines.fit_samult(x_l, y_l, np.zeros((4, 3)), gamma=0.5, **kw)
  with pytest.raises(ValueError, match="dtype float64 needs 64-bit JAX"):
    baselines.fit_samult(x_l, y_l, x_u, gamma=0.5, dtype=jnp.float64, **kw)
  with pytest.raises(TypeError, match="dtype must be float32 or float64"):
    baselines.fit_samult(x_l, y_l, x_u, gamma=0.5, dtype=jnp.int32, **kw)
  model = baselines.fit_samult(x_l, y_l, x_u, gamma=0.5, **kw)
  with pytest.raises(ValueError, match="x has 3 features but the model expects 2"):
    baselines.decision_function(model, np.zeros((5, 3)))
  with pytest.raises(TypeError, match="expected a model from a qsg_jax.baselines fit function"):
    baselines.decision_function(object(), x_u)
  with pytest.raises(ValueError, match=r"y_labeled must have shape \[n_l\]"):
    baselines.estimate_prior(np.zeros((2, 2), int))


def test_singular_system_raises_instead_of_returning_nan():
  x_l, y_l, x_u, _ = _binary()
  with pytest.raises(FloatingPointError, match="singular to working precision. Increase lam"):
    baselines.fit_samult(np.repeat(x_l[:2], 12, axis=0), np.repeat(y_l[:2], 12), x_u[:0] + x_l[0],
                         lam=1e-45, sigma=1.0, gamma=1.0)


@pytest.mark.parametrize("fit", ["samult", "exact_split"])
def test_kernels_float32_cannot_compute_are_refused_naming_the_cause(fit):
  """One class: a kernel that overflows, rounds to a constant, or drowns in rounding error."""
  x_l, y_l, x_u, _ = _binary()
  def call(x_labeled, x_unlabeled, sigma=1.0):
    if fit == "samult":
      return baselines.fit_samult(x_labeled, y_l, x_unlabeled, lam=0.1, sigma=sigma, gamma=0.5)
    return baselines.fit_exact_split(x_labeled, y_l, x_unlabeled, lam=0.1, sigma=sigma,
                                     gamma=0.5, split_lam=1.0)
  with pytest.raises(ValueError, match="norms up to .*e\\+25: their squares .* overflow float32"):
    call(x_l * 1e25, x_u * 1e25)
  with pytest.raises(ValueError, match="sigma=1e\\+39 does not fit in float32"):
    call(x_l, x_u, sigma=1e39)
  with pytest.raises(ValueError, match="are all the same point"):
    call(np.ones_like(x_l), np.ones_like(x_u))
  with pytest.raises(ValueError, match="below float32 resolution: every kernel value"):
    call(x_l * 1e-20, x_u * 1e-20)   # every exp(-sigma d^2) is 1.0 in float32: a constant model
  with pytest.raises(ValueError, match="lie far from the origin .* Min-max scale"):
    call(x_l + 1e4, x_u + 1e4)       # d^2 = |x|^2 + |z|^2 - 2 x.z loses every digit
  # The same data min-max scaled: accepted, and the model ranks the labeled points.
  lo, scale = data.minmax_fit(np.concatenate([x_l, x_u]) + 1e4)
  model = call(data.minmax_apply(x_l + 1e4, lo, scale), data.minmax_apply(x_u + 1e4, lo, scale))
  assert model is not None
  model = baselines.fit_samult(x_l, y_l, x_u, lam=0.1, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match="points of x have norms up to .*e\\+25"):
    baselines.decision_function(model, x_l * 1e25)   # test points: NaN scores otherwise


def test_refitting_with_new_hyperparameters_does_not_recompile():
  x_l, y_l, x_u, _ = _binary()
  baselines.fit_samult(x_l, y_l, x_u, lam=0.5, sigma=1.0, gamma=0.5)
  before = kernel_expansion._solve_splits._cache_size()  # pylint: disable=protected-access
  baselines.fit_samult(x_l, y_l, x_u, lam=2.0, sigma=3.0, gamma=0.1)
  baselines.fit_pnu_auc(x_l, y_l, x_u, lam=2.0, sigma=3.0, gamma=-0.1)
  assert kernel_expansion._solve_splits._cache_size() == before  # pylint: disable=protected-access


def test_docstring_examples_run():
  finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
  for module in (pnu_auc, scoring, samult, kernel_expansion, exact_split):
    for test in finder.find(module, globs={"np": np, "jnp": jnp, **vars(module)}):
      runner.run(test)
  assert runner.summarize(verbose=False).failed == 0
  assert runner.summarize(verbose=False).attempted >= 1


@pytest.mark.parametrize("kind", ["int", "bool", "float16", "Int64", "Float64", "boolean"])
def test_every_input_dtype_fits_like_its_float_values(kind):
  import pandas as pd   # pylint: disable=g-import-not-at-top
  x_l, y_l, x_u, _ = _binary()
  cast = {"int": lambda a: np.round(4 * a).astype(np.int64),
          "bool": lambda a: a > 0.5,
          "float16": lambda a: a.astype(np.float16),
          "Int64": lambda a: pd.DataFrame(np.round(4 * a)).astype("Int64"),
          "Float64": lambda a: pd.DataFrame(a).astype("Float64"),
          "boolean": lambda a: pd.DataFrame(a > 0.5).astype("boolean")}[kind]
  as_float = lambda a: pd.DataFrame(cast(a)).to_numpy(np.float64)
  kw = dict(lam=0.1, sigma=1.0, gamma=0.5)
  model = baselines.fit_samult(cast(x_l), pd.Series(y_l).astype("Int64"), cast(x_u), **kw)
  reference = baselines.fit_samult(as_float(x_l), y_l, as_float(x_u), **kw)
  np.testing.assert_allclose(baselines.decision_function(model, cast(x_u)),
                             baselines.decision_function(reference, as_float(x_u)), atol=1e-6)
  svorex = baselines.fit_svorex(cast(x_l), y_l, sigma=1.0)
  np.testing.assert_allclose(
      baselines.svorex.decision_function(svorex, cast(x_u)),
      baselines.svorex.decision_function(baselines.fit_svorex(as_float(x_l), y_l, sigma=1.0),
                                         as_float(x_u)), atol=1e-6)


def test_svorex_checks_its_kernel_cache_against_memory_first(monkeypatch):
  x_l, y_l, _, _ = _binary()
  monkeypatch.setattr(memory, "available_bytes", lambda device=None: 1000)
  with pytest.raises(memory.InsufficientMemoryError, match="SVOREX with 24 labeled points caches "
                     "their 24 x 24 kernel .*Subsample the labeled points"):
    baselines.fit_svorex(x_l, y_l, sigma=1.0)


def test_every_product_of_the_exact_baselines_runs_at_full_float32_precision():
  """numerics.HIGHEST: TF32 on an H200 moved SAMULT's scores by 1e-2 relative (2026-11-27)."""
  from tests.test_engine import _products_below_the_rule   # pylint: disable=g-import-not-at-top
  x_l, y_l, x_u, _ = _binary()
  centers = jnp.asarray(np.concatenate([x_l, x_u]))
  group_w = kernel_expansion.split_groups(y_l, 2, x_u.shape[0], jnp.float32)
  coef, const = kernel_expansion.split_coefficients(samult.samult_coefficients,
                                                    jnp.full(1, 0.5), jnp.zeros(1))
  lam, sigma = jnp.full(1, 0.1), jnp.ones(1)
  alpha = jnp.ones((1, centers.shape[0]))
  kernel = kernels.gaussian_kernel(centers, centers, 1.0)
  for fn, args in [
      (kernel_expansion._solve_splits, (centers, group_w, coef, lam, sigma)),
      (kernel_expansion._solve_shared, (centers, group_w, coef, lam, sigma)),
      (lambda *a: kernel_expansion._score_chunk(*a, True), (centers, centers, alpha, sigma)),
      (lambda *a: kernel_expansion._score_chunk(*a, False), (centers, centers, alpha, sigma)),
      (jax.grad(pairwise_risk.objective), (alpha[0], kernel, group_w[0], coef[0], const[0], 0.1)),
      (pairwise_risk.quadratic_form_risk, (alpha[0], group_w[0], coef[0], const[0])),
      (lambda *a: exact_split._solve(*a), (centers, group_w, coef, 0.1, 1.0, 1.0)),
      (jax.grad(exact_split.objective), (alpha[0], alpha, kernel, group_w, coef, const, 0.1, 1.0))]:
    below, total = _products_below_the_rule(fn, *args)
    assert total > 0 and below == [], below


# ---- Bad inputs (RELIABILITY.md) ----------------------------------------------------------------

@pytest.mark.parametrize("fit_fn", [baselines.fit_samult, baselines.fit_pnu_auc])
def test_binary_baselines_use_the_same_label_convention(fit_fn):
  with pytest.raises(ValueError, match=r"got 1..2 \(no class 0\) -- subtract 1"):
    fit_fn(toy.X_L, toy.Y_B + 1, toy.X_U, lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match=r"map -1/\+1 with \(y > 0\).astype\(int\)"):
    fit_fn(toy.X_L, 2 * toy.Y_B - 1, toy.X_U, lam=1.0, sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match=r"must lie in 0..1 \(num_classes=2\)"):
    fit_fn(toy.X_L, toy.Y_L, toy.X_U, lam=1.0, sigma=1.0, gamma=0.5)


def test_baselines_refuse_sparse_and_overflow():
  with pytest.raises(TypeError, match="x_labeled is a scipy sparse matrix"):
    baselines.fit_m_samult(sp.csr_matrix(toy.X_L), toy.Y_L, toy.X_U, lam=1.0, sigma=1.0,
                           gamma=0.5)
  with pytest.raises(ValueError, match="x_unlabeled has 1 values beyond the float32 range"):
    baselines.fit_exact_qsg(toy.X_L, toy.Y_L, toy.with_value(toy.X_U, (0, 0), -1e200), lam=1.0,
                            sigma=1.0, gamma=0.5)
  with pytest.raises(ValueError, match=r"labels contain 1 NaN .*\(first at row 1\)"):
    baselines.fit_svorex(toy.X_L, toy.with_value(toy.Y_L, 1, np.nan))


def test_split_aucs_refuses_non_finite_column_scores():
  scores = np.stack([toy.SCORES, toy.SCORES], axis=1)
  scores[5, 1] = np.nan
  with pytest.raises(ValueError, match=r"first at index \(5, 1\)"):
    baselines.mean_split_auc(scores, toy.Y_L, 3)


def test_kernel_fits_name_hyperparameters_that_are_not_numbers():
  x_l, y, x_u = toy.X_L_30, toy.Y_30, toy.X_U_30
  raises_short(TypeError, r"lam must be a number or a list of k-1 = 1 numbers; received None",
               baselines.fit_samult, x_l, y, x_u, lam=None, sigma=1.0, gamma=0.5)
  raises_short(TypeError, r"sigma must be a number or a list.*received 'wide'",
               baselines.fit_samult, x_l, y, x_u, lam=1.0, sigma="wide", gamma=0.5)
  raises_short(ValueError, r"memory_fraction must be a number in \(0, 1\]", baselines.fit_samult,
               x_l, y, x_u, lam=1.0, sigma=1.0, gamma=0.5, memory_fraction=2.0)
  model = baselines.fit_samult(x_l, y, None, lam=1.0, sigma=1.0, gamma=1.0)
  raises_short(TypeError, r"chunk_size must be a whole number >= 1 or None; received 2\.5",
               baselines.decision_function, model, x_l, chunk_size=2.5)
  np.testing.assert_allclose(baselines.decision_function(model, x_l, chunk_size=7),
                             baselines.decision_function(model, x_l), rtol=1e-5, atol=1e-6)


# ---- float64 all the way, ranges of the public functions ---------------------------------------

def _clustered(n=30, spread=1e-5, seed=0):
  """Points 0.5 + a spread of 1e-5: float32 keeps 3 digits of their differences, float64 11."""
  rng = np.random.default_rng(seed)
  x_l, x_u = 0.5 + spread * rng.random((n, 2)), 0.5 + spread * rng.random((n, 2))
  y2 = (x_l[:, 0] > np.median(x_l[:, 0])).astype(np.int64)
  y3 = np.digitize(x_l[:, 0], np.quantile(x_l[:, 0], [1 / 3, 2 / 3]))
  return x_l, x_u, y2, y3


def _float64_reference(model, x):
  """Scores of a kernel model in NumPy float64 from direct differences (x - z)^2."""
  d2 = np.sum((x[:, None, :] - np.asarray(model.centers)[None]) ** 2, axis=-1)
  out = np.stack([np.exp(-s * d2) @ np.asarray(a) for a, s in zip(model.alpha, model.sigma)], 1)
  return out[:, 0] if model.binary else out


@pytest.mark.parametrize("fit", ["samult", "pnu_auc", "m_samult", "m_pnu_auc", "exact_qsg",
                                 "exact_split"])
def test_float64_fits_compute_on_the_points_as_given(fit):
  """dtype=float64 keeps the training and test points in float64 (no float32 copy): centers
  equal the points, and the scores equal a float64 NumPy sum of direct differences to 1e-4 of
  their size (float32 copies of the points moved them by ~1e-2 of it here; float64 by ~1e-6)."""
  x_l, x_u, y2, y3 = _clustered()
  kw = dict(lam=1.0, sigma=1e9, dtype=jnp.float64)
  with jax.enable_x64(True):
    models = {
        "samult": lambda: baselines.fit_samult(x_l, y2, x_u, gamma=0.5, **kw),
        "pnu_auc": lambda: baselines.fit_pnu_auc(x_l, y2, x_u, gamma=0.5, **kw),
        "m_samult": lambda: baselines.fit_m_samult(x_l, y3, x_u, gamma=0.5, **kw),
        "m_pnu_auc": lambda: baselines.fit_m_pnu_auc(x_l, y3, x_u, gamma=-0.5, **kw),
        "exact_qsg": lambda: baselines.fit_exact_qsg(x_l, y3, x_u, gamma=0.5, **kw),
        "exact_split": lambda: baselines.fit_exact_split(x_l, y3, x_u, gamma=0.5,
                                                         split_lam=1.0, **kw).per_split}
    model = models[fit]()
    assert model.centers.dtype == jnp.float64
    np.testing.assert_array_equal(np.asarray(model.centers), np.concatenate([x_l, x_u]))
    x_t = x_l[:7] + 1e-9   # 1e-9 from the training points: one float32 number, distinct here
    scores = baselines.decision_function(model, x_t)
    assert scores.dtype == np.float64
    reference = _float64_reference(model, x_t)
    np.testing.assert_allclose(scores, reference, rtol=0, atol=1e-4 * np.abs(reference).max())
    assert np.all(scores != baselines.decision_function(model, x_l[:7]))


def test_float64_scores_do_not_depend_on_a_shift_of_the_data():
  """The reported case: a Gaussian kernel ignores shifts, so the training AUC of data centred at
  0.5 must equal that of the same data centred at 0 (float32 copies gave 0.55 against 0.99)."""
  rng = np.random.default_rng(0)
  x_l, x_u = 0.5 + 1e-8 * rng.normal(size=(40, 2)), 0.5 + 1e-8 * rng.normal(size=(40, 2))
  y_l = (x_l[:, 0] > 0.5).astype(np.int64)
  with jax.enable_x64(True):
    aucs = [baselines.mean_split_auc(baselines.decision_function(
        baselines.fit_samult(x_l + s, y_l, x_u + s, lam=1e-3, sigma=1e15, gamma=1,
                             dtype=jnp.float64), x_l + s), y_l, 2) for s in (0.0, -0.5)]
  assert aucs[0] == pytest.approx(aucs[1], abs=0.01) and aucs[1] > 0.95


def test_float64_without_64_bit_jax_is_refused_not_computed_in_float32():
  x_l, y_l, x_u, _ = _binary()
  for fit in (baselines.fit_samult, baselines.fit_pnu_auc, baselines.fit_m_pnu_auc,
              baselines.fit_exact_qsg):
    raises_short(ValueError, "dtype float64 needs 64-bit JAX", fit, x_l, y_l, x_u, lam=1.0,
                 sigma=1.0, gamma=0.0, dtype=jnp.float64)
  raises_short(ValueError, "dtype float64 needs 64-bit JAX", baselines.fit_exact_split, x_l,
               y_l, x_u, lam=1.0, sigma=1.0, gamma=1.0, split_lam=1.0, dtype=jnp.float64)
  raises_short(ValueError, "dtype float64 needs 64-bit JAX", baselines.cross_validate, "samult",
               x_l, y_l, x_u, quick=True, num_folds=3, dtype=jnp.float64)
  with jax.enable_x64(True):
    model = baselines.fit_samult(x_l, y_l, x_u, lam=1.0, sigma=1.0, gamma=0.5, dtype=jnp.float64)
  raises_short(ValueError, "fitted with dtype float64, which needs 64-bit JAX to score",
               baselines.decision_function, model, x_u)


def test_svorex_refuses_identical_points_and_keeps_float64_precision():
  y3 = np.repeat([0, 1, 2], [14, 13, 13])
  raises_short(ValueError, "x_labeled are all the same point", baselines.fit_svorex,
               np.ones((40, 2)), y3)
  x_l, _, _, y3 = _clustered()
  raises_short(ValueError, r"below float64 resolution.* raise sigma", baselines.fit_svorex, x_l,
               y3, sigma=1e-30)
  # The C solver sums (x - z)^2 in float64: a shift of the data changes nothing, where float32
  # copies of points 1e-5 apart around 0.5 moved the kernel by ~1e-3.
  scores = [baselines.decision_function(baselines.fit_svorex(x_l + s, y3, sigma=1e9), x_l + s)
            for s in (0.0, -0.5)]
  np.testing.assert_allclose(scores[0], scores[1], rtol=1e-6, atol=1e-9)


def test_coefficient_functions_refuse_arguments_outside_their_ranges():
  raises_short(ValueError, r"prior must lie in \(0, 1\); received 1.0\. .*prior=None",
               baselines.pnu_coefficients, 0.5, 1.0)
  raises_short(ValueError, r"prior must lie in \(0, 1\); received 0.0", baselines.pnu_coefficients,
               -0.5, 0.0)
  raises_short(ValueError, r"gamma must lie in \[-1, 1\]; received 2.0",
               baselines.pnu_coefficients, 2.0, 0.5)
  raises_short(ValueError, r"gamma must lie in \[0, 1\]; received 5.0",
               baselines.samult_coefficients, 5.0)
  raises_short(ValueError, r"gamma must lie in \[0, 1\]; received nan",
               baselines.samult_coefficients, np.nan)
  raises_short(TypeError, r"gamma must be a number in \[0, 1\]; received 'x'",
               baselines.samult_coefficients, "x")
  # Inside the ranges (both ends of gamma): the documented entries, also under jit.
  coef, const = jax.jit(baselines.samult_coefficients)(jnp.float32(0.0))
  np.testing.assert_allclose(coef[samult.P, samult.U], 1.0)
  assert float(const) == -0.5
  coef, _ = baselines.pnu_coefficients(-1.0, 0.25)
  np.testing.assert_allclose(coef[pnu_auc.U, pnu_auc.N], 4.0)
  np.testing.assert_allclose(coef[pnu_auc.N, pnu_auc.N], -3.0)


def test_training_set_prior_is_exported_with_the_package():
  assert baselines.training_set_prior is pnu_auc.training_set_prior
  assert "training_set_prior" in baselines.__all__
  assert list(baselines.__all__) == sorted(baselines.__all__)
  assert all(hasattr(baselines, name) for name in baselines.__all__)


def test_memory_helpers_refuse_counts_that_are_not_whole_numbers():
  raises_short(ValueError, r"num_points must be a whole number >= 0; received -5",
               baselines.required_bytes, -5)
  raises_short(TypeError, r"num_points must be a whole number >= 0; received 2\.5",
               baselines.required_bytes, 2.5)
  raises_short(ValueError, r"itemsize must be a whole number >= 1; received 0",
               baselines.required_bytes, 10, 0)
  assert baselines.required_bytes(10, 8) == kernel_expansion.MATRICES_PER_SOLVE * 800
  raises_short(ValueError, r"num_unlabeled must be a whole number >= 0; received -1",
               baselines.check_kernel_memory, "samult", 10, -1)
