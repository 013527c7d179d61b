"""Per-split corrections (split j ranks with f + g_j): references, limits and error paths.

References: jax.grad of the extended mini-batch objective through the new feature block; a
literal loop (predict every point through every block, gradients by jax.grad, explicit
decays) against the engine; the exact closed form ``baselines.fit_exact_split`` against
jax.grad of the objective, scipy's L-BFGS and its lam_g -> infinity limit ``fit_exact_qsg``;
the engine against the closed form; split_lam=None against the literal Algorithm 1.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.optimize

import qsg_jax
from qsg_jax import baselines
from qsg_jax import engine
from qsg_jax.engine import features
from qsg_jax.engine import kernels
from qsg_jax.engine import reference
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine import update
from qsg_jax.baselines import exact_split
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import samult


def _data(k=3, n_l=40, n_u=300, d=4, seed=0):
  rng = np.random.default_rng(seed)
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)]).astype(np.int32)
  x_l = (rng.random((n_l, d)) + 0.3 * y[:, None]).astype(np.float32)
  x_u = rng.random((n_u, d)).astype(np.float32)
  return x_l, y, x_u


def _ordinal(n, k=3, d=2, seed=0):
  """Splits that want different rankings: split 0 follows x_0, the last split x_1."""
  rng = np.random.default_rng(seed)
  x = rng.random((n, d)).astype(np.float32)
  latent = np.where(x[:, 0] < 0.5, x[:, 1], 0.5 + x[:, 0]) + 0.1 * rng.normal(size=n)
  y = np.digitize(latent, np.quantile(latent, np.linspace(0, 1, k + 1)[1:-1])).astype(np.int32)
  return x, y


def test_new_blocks_are_jax_grad_of_the_extended_objective(key):
  """f's block is d/da and g_j's block (k-1) d/db_j of (1/(k-1)) sum_j R^j(f + g_j) through the
  new features; with g = 0 the f block is QS3ORAO's."""
  rng = np.random.default_rng(4)
  k, n_l, b, d, m = 4, 10, 6, 3, 4
  y = jnp.asarray(np.arange(n_l) % k)
  x_l, x_u = jnp.asarray(rng.random((n_l, d))), jnp.asarray(rng.random((b, d)))
  f_l, f_u = jnp.asarray(rng.normal(size=n_l)), jnp.asarray(rng.normal(size=b))
  g_l = jnp.asarray(0.3 * rng.normal(size=(k - 1, n_l)))
  g_u = jnp.asarray(0.3 * rng.normal(size=(k - 1, b)))
  gamma = jnp.array([0.3, 0.8, 0.5])

  @jax.jit   # everything in one compilation instead of one per eager operation
  def both(key, y, x_l, x_u, f_l, f_u, g_l, g_u):
    pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=k))
    omega = features.sample_frequencies(key, 2, m, d, 0.7)
    phi_l, phi_u = features.fourier_features(x_l, omega), features.fourier_features(x_u, omega)

    def objective(a, bj):
      return risk.split_minibatch_risk("squared", f_l + phi_l @ a, f_u + phi_u @ a,
                                       g_l + bj @ phi_l.T, g_u + bj @ phi_u.T, pos_w, neg_w,
                                       gamma)

    grad_a, grad_b = jax.grad(objective, argnums=(0, 1))(jnp.zeros(2 * m),
                                                         jnp.zeros((k - 1, 2 * m)))
    d_l, d_u = risk.split_score_grads("squared", f_l, f_u, g_l, g_u, pos_w, neg_w, gamma)
    per_split = jax.vmap(update.functional_gradient, in_axes=(0, None, 0, None))
    zero_l, zero_u = jnp.zeros_like(g_l), jnp.zeros_like(g_u)
    risks = (risk.split_minibatch_risk("squared", f_l, f_u, zero_l, zero_u, pos_w, neg_w, gamma),
             risk.minibatch_risk("squared", f_l, f_u, pos_w, neg_w, gamma))
    shared = risk.score_grads("squared", f_l, f_u, pos_w, neg_w, gamma)
    split = risk.split_score_grads("squared", f_l, f_u, zero_l, zero_u, pos_w, neg_w, gamma)
    return (grad_a, grad_b, per_split(d_l, phi_l, d_u, phi_u),
            update.functional_gradient(d_l.mean(0), phi_l, d_u.mean(0), phi_u), risks, shared,
            split)

  grad_a, grad_b, split_grad, shared_grad, risks, shared, split = both(key, y, x_l, x_u, f_l,
                                                                       f_u, g_l, g_u)
  np.testing.assert_allclose(split_grad, (k - 1) * grad_b, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(shared_grad, grad_a, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(risks[0], risks[1], rtol=1e-6)
  for a, b in zip(shared, split):
    np.testing.assert_allclose(a, b.mean(0), rtol=1e-6, atol=1e-7)


def test_squared_moment_form_equals_the_pair_sums_and_hinge_uses_them():
  rng = np.random.default_rng(5)
  f_l, f_u = jnp.asarray(rng.normal(size=12)), jnp.asarray(rng.normal(size=7))
  y = jnp.asarray(np.arange(12) % 3)
  g_l, g_u = jnp.asarray(rng.normal(size=(2, 12))), jnp.asarray(rng.normal(size=(2, 7)))

  @jax.jit   # one compilation instead of one per eager operation
  def both(f_l, f_u, g_l, g_u, y):
    pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=3))
    pairs = [(risk.squared_subproblem_score_grads(f_l, f_u, pos_w[j], neg_w[j], gamma),
              risk.subproblem_score_grads("squared", f_l, f_u, pos_w[j], neg_w[j], gamma))
             for j, gamma in ((0, 0.3), (1, 1.0))]
    gamma = jnp.array([0.3, 0.6])
    hinge = risk.split_score_grads("hinge", f_l, f_u, g_l, g_u, pos_w, neg_w, gamma)
    grad = jax.grad(lambda a, b: risk.split_minibatch_risk("hinge", f_l, f_u, g_l + a, g_u + b,
                                                           pos_w, neg_w, gamma), argnums=(0, 1))
    return pairs, hinge, grad(jnp.zeros_like(g_l), jnp.zeros_like(g_u))

  pairs, hinge, grads = both(f_l, f_u, g_l, g_u, y)
  for fast, slow in pairs:
    for a, b in zip(fast, slow):
      np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
  for a, b in zip(hinge, grads):
    assert float(jnp.max(jnp.abs(b))) > 1e-3
    np.testing.assert_allclose(a, 2 * b, rtol=1e-5, atol=1e-6)


def _literal_split_fit(key, data, hyper, config):
  """The extended Algorithm 1 written literally: every sampled point predicted through every
  block, the new blocks from jax.grad, Eq. (14) for f and the proximal shrinkage for g."""
  feature_key, sample_key = jax.random.split(key)
  k, m, s = config.num_classes, config.num_frequencies, config.num_classes - 1
  index = sampling.class_index(data.y_labeled, k)
  slot_classes = sampling.slot_classes(data.y_labeled, k, config.labeled_batch_size)
  pos_w, neg_w = risk.subproblem_weights(slot_classes, jnp.bincount(data.y_labeled, length=k))

  def iteration(i, carry):
    alphas, betas = carry                                            # [T, 2m], [T, 2m, s]
    sample = sampling.sample_step(sample_key, i, index, config.labeled_batch_size,
                                  config.unlabeled_batch_size, data.x_unlabeled.shape[0],
                                  config.num_shards)
    x_l, x_u = data.x_labeled[sample.labeled], data.x_unlabeled[sample.unlabeled]
    predict = lambda c, x: reference.predict_literal(feature_key, c, i, x, m, hyper.sigma)
    f_l, f_u = predict(alphas, x_l), predict(alphas, x_u)
    g_l = jnp.stack([predict(betas[:, :, j], x_l) for j in range(s)])
    g_u = jnp.stack([predict(betas[:, :, j], x_u) for j in range(s)])
    phi_l = features.block_features(feature_key, i, x_l, m, hyper.sigma)
    phi_u = features.block_features(feature_key, i, x_u, m, hyper.sigma)
    objective = lambda a, b: risk.split_minibatch_risk(
        config.loss, f_l + phi_l @ a, f_u + phi_u @ a, g_l + b @ phi_l.T, g_u + b @ phi_u.T,
        pos_w, neg_w, hyper.gamma)
    grad_a, grad_b = jax.grad(objective, argnums=(0, 1))(jnp.zeros(2 * m), jnp.zeros((s, 2 * m)))
    eta = engine.step_size(config, hyper, i)
    shrink = 1.0 / (1.0 + eta * hyper.split_lam)
    alphas = (alphas * (1.0 - eta * hyper.lam)).at[i].set(-eta * grad_a)
    betas = (betas * shrink).at[i].set(-eta * shrink * s * grad_b.T)
    return alphas, betas

  zeros = (jnp.zeros((config.num_steps, 2 * m)), jnp.zeros((config.num_steps, 2 * m, s)))
  return jax.lax.fori_loop(0, config.num_steps, iteration, zeros)


_literal_split_fit_jit = jax.jit(_literal_split_fit, static_argnums=3)


def _fit(x_l, y, x_u, **kwargs):
  args = dict(key=3, num_steps=96, num_frequencies=6, chunk_size=12, block_group=4,
              unlabeled_batch_size=8, labeled_batch_size=5, sigma=0.5, lam=0.01, step_size=1.0)
  return qsg_jax.fit(x_l, y, x_u, **{**args, **kwargs})


def test_engine_equals_the_literal_extended_algorithm():
  """The chunked pool (scored through earlier blocks in one product); the cached pool is
  checked against it in ``test_cached_and_chunked_pools_give_the_same_model``. fit's run with the
  config of the other fits here (its train compilation is theirs)."""
  x_l, y, x_u = _data()
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y), jnp.asarray(x_u))
  hyper = engine.Hyperparams(jnp.float32(0.5), jnp.float32(0.01), jnp.full(2, 0.5, jnp.float32),
                             jnp.float32(0.5), split_lam=jnp.float32(0.3))
  result = _fit(x_l, y, x_u, key=jax.random.key(3), cache_unlabeled=False, split_lam=0.3,
                step_size=0.5)
  state, config = result.state, result.config
  assert config.split_corrections and not config.cache_unlabeled and config.num_steps == 96
  alphas, betas = _literal_split_fit_jit(jax.random.key(3), data, hyper, config)
  assert float(jnp.max(jnp.abs(betas))) > 1e-3
  np.testing.assert_allclose(state.scale * state.coef, alphas, rtol=2e-4, atol=2e-6)
  np.testing.assert_allclose(state.split_scale * state.split_coef, betas, rtol=2e-4, atol=2e-6)
  # Cached labeled corrections and the one-product per-split scoring equal Algorithm 2.
  g_literal = jnp.stack([reference.predict_literal(state.feature_key, betas[:, :, j], 96,
                                                   data.x_labeled, 6, hyper.sigma)
                         for j in range(2)])
  np.testing.assert_allclose(state.g_labeled, g_literal, rtol=1e-4, atol=1e-5)
  scores = engine.split_scores(engine.model_of(state, hyper), data.x_labeled, block_group=3,
                               predict_chunk=7)
  np.testing.assert_allclose(scores, state.f_labeled[:, None] + g_literal.T, rtol=1e-4, atol=1e-5)


def test_split_lam_none_is_the_literal_algorithm():
  """Without corrections ``fit`` is Algorithm 1: against the literal port computed in this run
  (both unlabeled pools), never against digests recorded on another machine. The port is the
  literal extended algorithm with lam_g = inf (its g stays 0, its f step is Algorithm 1's), whose
  compilation ``test_engine_equals_the_literal_extended_algorithm`` shares; the engine against
  ``reference.reference_fit`` itself is test_engine.py's test_engine_equals_literal_algorithm."""
  x_l, y, x_u = _data()
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y), jnp.asarray(x_u))
  hyper = engine.Hyperparams(jnp.float32(0.5), jnp.float32(0.01), jnp.full(2, 0.5, jnp.float32),
                             jnp.float32(1.0), split_lam=jnp.float32(np.inf))
  alphas = f_literal = None
  for cache in (False, True):
    result = _fit(x_l, y, x_u, key=jax.random.key(3), cache_unlabeled=cache, split_lam=None)
    assert result.state.split_coef is None and result.model.split_coef is None
    assert not result.config.split_corrections and result.config.cache_unlabeled == cache
    if alphas is None:
      # The literal port ignores the pool (a chunking field): one reference for both runs.
      alphas, betas = _literal_split_fit_jit(jax.random.key(3), data, hyper, result.config.replace(
          split_corrections=True))
      assert float(jnp.max(jnp.abs(alphas))) > 1e-3 and not np.any(np.asarray(betas))
      f_literal = reference.predict_literal(result.state.feature_key, alphas, 96,
                                            data.x_unlabeled, 6, hyper.sigma)
    np.testing.assert_allclose(result.state.scale * result.state.coef, alphas, rtol=2e-4,
                               atol=2e-6)
    np.testing.assert_allclose(qsg_jax.decision_function(result, x_u), f_literal, rtol=1e-4,
                               atol=1e-5)


def test_infinite_split_lam_is_qs3orao_and_huge_is_close(cache=False):
  """The cached pool is checked against this chunked one in the next test."""
  x_l, y, x_u = _data()
  plain = _fit(x_l, y, x_u, cache_unlabeled=cache, step_size=0.5)
  frozen = _fit(x_l, y, x_u, cache_unlabeled=cache, split_lam=float("inf"), step_size=0.5)
  assert not np.any(np.asarray(frozen.state.split_coef)) and not np.any(frozen.state.g_labeled)
  rounding = 1e-5 * float(jnp.max(jnp.abs(plain.state.coef)))
  np.testing.assert_allclose(frozen.state.coef, plain.state.coef, rtol=1e-5, atol=rounding)
  np.testing.assert_allclose(frozen.state.scale, plain.state.scale, rtol=1e-6)
  np.testing.assert_allclose(qsg_jax.split_scores(frozen, x_u),
                             np.repeat(qsg_jax.decision_function(plain, x_u)[:, None], 2, 1),
                             rtol=1e-5, atol=1e-6)
  huge = _fit(x_l, y, x_u, cache_unlabeled=cache, split_lam=1e9, step_size=0.5)  # proximal
  np.testing.assert_allclose(huge.state.coef, plain.state.coef, rtol=1e-5, atol=rounding)
  assert float(np.max(np.abs(huge.state.split_scale * huge.state.split_coef))) < 1e-7
  # The default step too: frozen corrections do not take half of f's step (they learn nothing).
  auto_plain = _fit(x_l, y, x_u, cache_unlabeled=cache)
  auto_frozen = _fit(x_l, y, x_u, cache_unlabeled=cache, split_lam=float("inf"))
  assert float(auto_frozen.metrics["eta"][0]) == float(auto_plain.metrics["eta"][0])
  np.testing.assert_allclose(auto_frozen.state.coef, auto_plain.state.coef, rtol=1e-5,
                             atol=1e-5 * float(jnp.max(jnp.abs(auto_plain.state.coef))))
  # A small lam_g does move the model: the test can tell the two apart.
  loose = _fit(x_l, y, x_u, cache_unlabeled=cache, split_lam=0.01, step_size=0.5)
  assert float(np.max(np.abs(loose.state.coef - plain.state.coef))) > 100 * rounding


def test_cached_and_chunked_pools_give_the_same_model():
  x_l, y, x_u = _data()   # the shapes of the other fits here: the chunked one compiles nothing new
  # Step 0.5: the per-split scores move by f's step plus g_j's, up to twice QS3ORAO's.
  a = _fit(x_l, y, x_u, cache_unlabeled=False, split_lam=0.1, step_size=0.5)
  b = _fit(x_l, y, x_u, cache_unlabeled=True, split_lam=0.1, step_size=0.5)
  # split_lam is traced like lam: another value, inf included, compiles nothing new.
  compiled = engine.loop._train_jit._cache_size()  # pylint: disable=protected-access
  for split_lam in (0.3, float("inf")):
    _fit(x_l, y, x_u, cache_unlabeled=False, split_lam=split_lam, step_size=0.5)
  assert engine.loop._train_jit._cache_size() == compiled  # pylint: disable=protected-access
  np.testing.assert_allclose(a.state.split_scale * a.state.split_coef,
                             b.state.split_scale * b.state.split_coef, rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(qsg_jax.split_scores(a, x_u), qsg_jax.split_scores(b, x_u),
                             rtol=1e-4, atol=1e-5)
  # Prediction and thresholds use f alone.
  np.testing.assert_array_equal(qsg_jax.predict(a, x_u), np.asarray(
      qsg_jax.predict_classes(jnp.asarray(qsg_jax.decision_function(a, x_u)), a.thresholds)))


def _objective_engine_form(a, b, kernel, y_l, gamma, lam, split_lam):
  """J(f, g) written with the engine's risk (``risk.split_minibatch_risk``, whole labeled set,
  every unlabeled point as the batch): independent of the closed form's code."""
  k = int(y_l.max()) + 1
  slots = jnp.asarray(y_l)
  pos_w, neg_w = risk.subproblem_weights(slots, jnp.bincount(slots, length=k))
  f, g = kernel @ a, b @ kernel
  n_l = y_l.size
  value = risk.split_minibatch_risk("squared", f[:n_l], f[n_l:], g[:, :n_l], g[:, n_l:],
                                    pos_w.astype(f.dtype), neg_w.astype(f.dtype),
                                    jnp.asarray(gamma, f.dtype))
  return (value + 0.5 * lam * a @ f
          + jnp.mean(0.5 * split_lam * jnp.sum(b * g, axis=1)))


def _exact_problem():
  """(x_l, y_l, x_u): 40 labeled and 40 unlabeled points of ``_ordinal`` for the exact models."""
  x, y = _ordinal(120)
  return x[:40], y[:40], x[40:80]


def test_closed_form_is_the_minimizer():
  """jax.grad of J (engine's risk) vanishes at the closed form; L-BFGS on J reaches the same
  value; lam a = (lam_g/s) sum_j b_j; lam_g -> inf is fit_exact_qsg; lam_g small beats it."""
  x_l, y_l, x_u = _exact_problem()   # 40 + 40 points: the exact solves' compilations are shared
  n_l, n = x_l.shape[0], x_l.shape[0] + x_u.shape[0]
  gamma, lam, split_lam, sigma = np.array([0.4, 0.7]), 0.3, 0.05, 2.0   # lam_g small (see the end)
  with jax.enable_x64(True):
    model = baselines.fit_exact_split(x_l, y_l, x_u, lam=lam, sigma=sigma, gamma=gamma,
                                      split_lam=split_lam, dtype=jnp.float64)
    a = np.asarray(model.shared.alpha[0])
    b = np.asarray(model.per_split.alpha) - a[None, :]

    @jax.jit   # one compilation instead of one per eager float64 operation
    def references(a, b, centers):
      kernel = kernels.gaussian_kernel(centers, centers, sigma)
      objective = lambda a, b, s: _objective_engine_form(a, b, kernel, y_l, gamma, lam, s)
      grad = jax.grad(objective, argnums=(0, 1))
      size = lambda gs: jnp.maximum(*[jnp.max(jnp.abs(g)) for g in gs])
      evals, evecs = jnp.linalg.eigh(kernel)
      return dict(at_zero=size(grad(jnp.zeros_like(a), jnp.zeros_like(b), split_lam)),
                  at_closed=size(grad(a, b, split_lam)),
                  other_lam=size(grad(a, b, 2 * split_lam)), closed=objective(a, b, split_lam),
                  kernel=kernel, root=(evecs * jnp.sqrt(jnp.clip(evals, 0.0))[None, :]) @ evecs.T,
                  weights=risk.subproblem_weights(jnp.asarray(y_l), jnp.bincount(y_l, length=3)))

    ref = jax.tree.map(np.asarray, references(a, b, model.shared.centers))
    at_zero = float(ref["at_zero"])
    assert float(ref["at_closed"]) < 1e-7 * at_zero   # subproblem_weights work in float32
    assert float(ref["other_lam"]) > 1e-3 * at_zero
    np.testing.assert_allclose(lam * a, split_lam / 2 * b.sum(0), rtol=1e-6,
                               atol=1e-9 * float(np.max(np.abs(a))))
    # Direct minimization with scipy over u, w: f = K^(1/2) u, g_j = K^(1/2) w_j, so the
    # penalties are lam/2 ||u||^2 and lam_g/2 ||w_j||^2 (well conditioned, unlike alpha).
    root, (pos_w, neg_w) = ref["root"], ref["weights"]
    def value(theta):
      u, w = theta[:n], theta[n:].reshape(2, n)
      f, g = root @ u, w @ root
      fitted = risk.split_minibatch_risk("squared", f[:n_l], f[n_l:], g[:, :n_l], g[:, n_l:],
                                         pos_w.astype(f.dtype), neg_w.astype(f.dtype), gamma)
      return fitted + 0.5 * lam * u @ u + 0.5 * split_lam * jnp.mean(jnp.sum(w * w, axis=1))
    value_and_grad = jax.jit(jax.value_and_grad(value))
    fun = lambda t: tuple(np.asarray(v, np.float64) for v in value_and_grad(jnp.asarray(t)))
    found = scipy.optimize.minimize(fun, np.zeros(3 * n), jac=True, method="L-BFGS-B",
                                    options=dict(maxiter=5000, gtol=1e-10, ftol=1e-15))
    closed = float(ref["closed"])
    assert closed <= found.fun + 1e-9 and found.fun - closed < 1e-7 * abs(closed), found
    scores = np.asarray(model.per_split.alpha) @ ref["kernel"]
    u, w = found.x[:n], found.x[n:].reshape(2, n)
    np.testing.assert_allclose((root @ u)[None, :] + w @ root, scores,
                               atol=1e-3 * float(np.max(np.abs(scores))))
    # lam_g -> infinity: QS3ORAO's exact minimizer; the corrections vanish.
    stiff = baselines.fit_exact_split(x_l, y_l, x_u, lam=lam, sigma=sigma, gamma=gamma,
                                      split_lam=1e9, dtype=jnp.float64)
    shared = baselines.fit_exact_qsg(x_l, y_l, x_u, lam=lam, sigma=sigma, gamma=gamma,
                                     dtype=jnp.float64)
    np.testing.assert_allclose(stiff.shared.alpha, shared.alpha, rtol=1e-5,
                               atol=1e-6 * float(np.max(np.abs(shared.alpha))))
    # The per-split model ranks its own splits better on the labeled points.
    per = baselines.split_aucs(baselines.decision_function(model.per_split, x_l), y_l, 3)
    one = baselines.decision_function(shared, x_l)
    assert per.mean() >= baselines.split_aucs(np.repeat(one[:, None], 2, 1), y_l, 3).mean()


def test_engine_approaches_the_closed_form():
  """Many steps and features with a decaying step: per-split scores near fit_exact_split's and
  nearer to them than to QS3ORAO's exact scores."""
  x_l, y_l, x_u = _exact_problem()
  hyper = dict(lam=0.05, sigma=2.0, gamma=0.5)
  points = np.concatenate([x_l, x_u])
  # The exact models in float64, as in test_closed_form_is_the_minimizer (its compilations).
  with jax.enable_x64(True):
    exact = baselines.fit_exact_split(x_l, y_l, x_u, split_lam=0.05, dtype=jnp.float64, **hyper)
    shared = baselines.fit_exact_qsg(x_l, y_l, x_u, dtype=jnp.float64, **hyper)
    target = np.asarray(baselines.decision_function(exact.per_split, points))
    other = np.repeat(np.asarray(baselines.decision_function(shared, points))[:, None], 2, 1)
    f_target = np.asarray(baselines.decision_function(exact.shared, points))
  result = qsg_jax.fit(x_l, y_l, x_u, key=1, split_lam=0.05, num_steps=512, num_frequencies=16,
                       labeled_batch_size=None, unlabeled_batch_size=40, cache_unlabeled=True,
                       step_size=1.0, chunk_size=64, **hyper)
  # The model's scores on the training points: the heads' caches (labeled points, then the cached
  # unlabeled pool: state.head_unlabeled is score / scale), with no scoring program compiled for
  # this config; that they equal split_scores' and decision_function's is
  # test_engine_equals_the_literal_extended_algorithm's, test_cached_and_chunked_pools_give_the_
  # same_model's and test_split_lam_none_is_the_literal_algorithm's.
  state = result.state
  heads = np.concatenate([np.asarray(state.head_labeled), np.asarray(
      state.head_scale)[:, None] * np.asarray(state.head_unlabeled)], axis=1)   # [k, n]: f, g_j
  assert heads.shape == (3, 80)
  got = heads[0][:, None] + heads[1:].T
  error = np.linalg.norm(got - target) / np.linalg.norm(target)
  # Measured: 0.019 (T = 512), 0.010 (T = 2048); the two exact models are 0.29 apart.
  assert error < 0.05, error
  assert error < 0.2 * np.linalg.norm(got - other) / np.linalg.norm(other), error
  f_error = np.linalg.norm(heads[0] - f_target) / np.linalg.norm(f_target)
  assert f_error < 0.05, f_error


@pytest.mark.parametrize("value, error, match", [
    (0.0, ValueError, "split_lam must be > 0"),
    (-1.0, ValueError, "split_lam must be > 0"),
    (float("nan"), ValueError, "split_lam must be > 0"),
    ("big", TypeError, "split_lam must be .*; received 'big'"),
    ([1.0, 2.0], TypeError, r"split_lam must be .*; received \[1.0, 2.0\]"),
    (True, TypeError, "split_lam must be .*; received True"),
])
def test_fit_refuses_bad_split_lam(value, error, match):
  x_l, y, x_u = _data()
  with pytest.raises(error, match=match):
    _fit(x_l, y, x_u, split_lam=value)


def test_unsupported_paths_refuse_clearly(key, tmp_path):
  x_l, y, x_u = _data()
  result = _fit(x_l, y, x_u, split_lam=0.5, step_size=0.5)
  with pytest.raises(ValueError, match="model files store the shared ranking function f only"):
    qsg_jax.io.save(result, tmp_path / "model.npz")
  mesh = jax.make_mesh((1,), ("data",))
  with pytest.raises(ValueError, match="split_lam .per-split corrections. runs on one device"):
    _fit(x_l, y, x_u, split_lam=0.5, mesh=mesh)
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y), engine.shard_unlabeled(x_u, 1))
  config = engine.EngineConfig(num_classes=3, num_steps=8, chunk_size=4, block_group=2,
                               split_corrections=True)
  hyper = engine.Hyperparams(jnp.float32(1.0), jnp.float32(0.01), jnp.full(2, 0.5),
                             jnp.float32(1.0), split_lam=jnp.float32(1.0))
  state = engine.init(key, data, config)
  with pytest.raises(ValueError, match="train_sharded does not support per-split corrections"):
    engine.train_sharded(state, data, hyper, config, 8, mesh)
  with pytest.raises(ValueError, match="needs Hyperparams.split_lam"):
    engine.train(state, data, hyper._replace(split_lam=None), config, 8)
  plain = config.replace(split_corrections=False)
  with pytest.raises(ValueError, match="would be ignored"):
    engine.train(engine.init(key, data, plain), data, hyper, plain, 8)
  with pytest.raises(ValueError, match="no per-split corrections"):
    engine.split_scores(engine.model_of(engine.init(key, data, plain), hyper), data.x_labeled)
  with pytest.raises(TypeError, match="must be the FitResult"):
    qsg_jax.split_scores(result.model, x_u)
  with pytest.raises(ValueError, match="x has 3 features|dimension|features"):
    qsg_jax.split_scores(result, x_u[:, :3])
  with pytest.raises(ValueError, match="that is fit_exact_qsg"):
    baselines.fit_exact_split(x_l, y, x_u, lam=1.0, sigma=1.0, gamma=0.5, split_lam=np.inf)
  with pytest.raises(ValueError, match="split_lam must lie in"):
    baselines.fit_exact_split(x_l, y, x_u, lam=1.0, sigma=1.0, gamma=0.5, split_lam=-1.0)
  with pytest.raises(ValueError, match="must be scalars"):
    baselines.fit_exact_split(x_l, y, x_u, lam=[1.0, 1.0], sigma=1.0, gamma=0.5, split_lam=1.0)
  with pytest.raises(qsg_jax.InsufficientMemoryError, match="fit_exact_split with n = 300040"):
    baselines.fit_exact_split(x_l, y, np.zeros((300_000, 4), np.float32), lam=1.0, sigma=1.0,
                              gamma=0.5, split_lam=1.0)


def test_plain_fit_split_scores_repeat_f_and_system_matches_objective_hessian():
  x_l, y, x_u = _data()
  plain = _fit(x_l, y, x_u)
  # All of x_u: the shapes test_infinite_split_lam_is_qs3orao_and_huge_is_close scores.
  np.testing.assert_array_equal(qsg_jax.split_scores(plain, x_u),
                                np.repeat(qsg_jax.decision_function(plain, x_u)[:, None], 2,
                                          axis=1))
  # The block system is (half) the gradient of J with the kernel factor removed.
  x, yy = _ordinal(30)
  y_l, n_u = yy[:20], 10
  with jax.enable_x64(True):

    @jax.jit   # one compilation instead of one per eager float64 operation
    def system_and_grad(x, theta):
      kernel = kernels.gaussian_kernel(x, x, 1.)
      group_w = kernel_expansion.split_groups(y_l, 3, n_u, jnp.float64)
      gam = jnp.array([0.3, 0.6], jnp.float64)
      coef, const = kernel_expansion.split_coefficients(samult.samult_coefficients, gam,
                                                        jnp.zeros(2, jnp.float64))
      matrix, rhs = exact_split.split_system(kernel, group_w, coef, 0.2, 0.7)
      a, b = theta[:30], theta[30:].reshape(2, 30)
      ga, gb = jax.grad(exact_split.objective, argnums=(0, 1))(a, b, kernel, group_w, coef,
                                                               const, 0.2, 0.7)
      residual = (matrix @ theta - rhs).reshape(3, 30)
      return ga, gb, kernel @ residual[0], residual[1:] @ kernel

    ga, gb, a_part, b_part = system_and_grad(jnp.asarray(x, jnp.float64), jnp.asarray(
        np.random.default_rng(1).normal(size=90)))
    assert ga.dtype == jnp.float64
    np.testing.assert_allclose(ga, 2 * a_part, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(gb, 2 / 2 * b_part, rtol=1e-8, atol=1e-10)
