"""direct.bandwidths against references: system.mean_system, the literal pair objective and its
jax.grad, direct.fit on the same map, finite differences, and a synthetic ARD problem."""

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from sklearn import metrics as sk_metrics

from tests.conftest import raises_short
from qsg_jax import direct
from qsg_jax.direct import bandwidths
from qsg_jax.direct import system


def _data(k=3, n_l=36, n_u=50, d=3, seed=0):
  rng = np.random.default_rng(seed)
  y = np.concatenate([np.repeat(np.arange(k), 3), rng.integers(0, k, n_l - 3 * k)])
  x_l = (0.6 * rng.random((n_l, d)) + 0.2 * y[:, None]).astype(np.float32)
  x_u = rng.random((n_u, d)).astype(np.float32)
  return x_l, y.astype(np.int32), x_u


# The surrogate's pieces compiled, as ``descend`` compiles them (op by op, each call of one ran
# dozens of small programs); tests on ``_problem()``'s shapes share the compilations.
_fold_scores = jax.jit(bandwidths.fold_scores)
# Every call passes jitter (0.0, or JITTER, the default, as a traced number): one program per
# problem shape serves both (a call leaving it out traced another one).
_cv_terms = jax.jit(bandwidths.cv_terms)
_cv_loss_and_grad = jax.jit(jax.value_and_grad(bandwidths.cv_loss))   # the loss: one compile
_fold_system = jax.jit(bandwidths.fold_system)


def _problem(k=3, gamma=0.4, num_features=20, num_folds=3, seed=0):
  x_l, y, x_u = _data(k=k, seed=seed)
  gamma = np.full(k - 1, gamma)
  problem = bandwidths.make_problem(x_l, y, x_u, k, gamma, jax.random.key(seed), num_features,
                                    bandwidths.NUM_UNLABELED, num_folds)
  return x_l, y, x_u, gamma, problem


def _literal_objective(beta, c_l, c_u, gram, y, k, lam, gamma, rows):
  """lam/2 beta^T K beta + mean_j [gamma_j R_PN + (1 - gamma_j)(R_PU + R_NU)] with explicit pair
  matrices (ordinal paper Eqs. 7-9; pooled positives / negatives weighted n_c / n_P), over the
  labeled points with rows == 1 (a fold's training set: a 0/1 mask, so that one compilation
  serves every fold)."""
  f_l, f_u = c_l @ beta, c_u @ beta

  def loss(a, a_in, b, b_in):          # the mean over the pairs of a[a_in == 1], b[b_in == 1]
    pairs = a_in[:, None] * b_in[None, :]
    return jnp.sum(pairs * (1.0 - a[:, None] + b[None, :]) ** 2) / jnp.sum(pairs)

  every_u = jnp.ones_like(f_u)
  risks = []
  for j in range(k - 1):
    pos, neg = rows * (y > j), rows * (y <= j)
    risks.append(gamma[j] * loss(f_l, pos, f_l, neg)
                 + (1 - gamma[j]) * (loss(f_l, pos, f_u, every_u) + loss(f_u, every_u, f_l, neg)))
  return 0.5 * lam * beta @ gram @ beta + jnp.mean(jnp.stack(risks))


_literal_gradient = jax.jit(jax.grad(_literal_objective), static_argnums=5)   # k static


def test_split_coefficients_give_mean_system():
  rng = np.random.default_rng(1)
  k, p = 4, 5
  counts = np.array([3.0, 5.0, 2.0, 7.0, 11.0])
  a = rng.normal(size=(k + 1, p, p))
  moments = direct.Moments(counts, rng.normal(size=(k + 1, p)),
                           np.einsum("gpq,grq->gpr", a, a), np.zeros(p))
  gamma = np.array([0.2, 0.7, 1.0])
  diag, low, target = bandwidths.split_coefficients(counts[:k], gamma)
  q_ref, r_ref = system.mean_system(moments, gamma)
  q = np.tensordot(diag, moments.second, axes=1) - moments.means.T @ low @ moments.means
  np.testing.assert_allclose(0.5 * (q + q.T), q_ref, rtol=1e-12, atol=1e-12)
  np.testing.assert_allclose(target @ moments.means, r_ref, rtol=1e-12, atol=1e-12)


def test_fold_system_matches_mean_system_of_the_fold_moments():
  x_l, y, x_u, gamma, problem = _problem()
  k = 3
  log_s = np.log(np.array([0.3, 0.5, 0.8]))
  inv = np.exp(-log_s)[None, :]
  c_l = np.asarray(bandwidths.kernel(x_l * inv, problem.landmarks * inv), np.float64)
  c_u = np.asarray(bandwidths.kernel(problem.x_unlabeled * inv, problem.landmarks * inv),
                   np.float64)
  for f in range(problem.point_weight.shape[0]):
    train = problem.class_mean[f].sum(axis=0) > 0
    groups = [c_l[train & (y == c)] for c in range(k)] + [c_u]
    moments = direct.Moments(np.array([g.shape[0] for g in groups], np.float64),
                             np.stack([g.mean(axis=0) for g in groups]),
                             np.stack([g.T @ g / g.shape[0] for g in groups]), np.zeros(20))
    q_ref, r_ref = system.mean_system(moments, gamma)
    with jax.enable_x64(True):
      q, r = _fold_system(c_l, c_u.mean(axis=0), c_u.T @ c_u / c_u.shape[0],
                          problem.point_weight[f], problem.unlabeled_weight[f],
                          problem.class_mean[f], problem.low[f], problem.target[f])
    np.testing.assert_allclose(q, q_ref, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(r, r_ref, rtol=1e-10, atol=1e-12)


def test_fold_solution_minimizes_the_literal_objective():
  x_l, y, x_u, gamma, problem = _problem(gamma=0.4)
  lam, log_s = 0.05, np.log(np.array([0.3, 0.5, 0.8]))   # float64, as every test's log_s

  @jax.jit
  def kernels(log_s):
    inv = jnp.exp(-log_s)[None, :]
    z = problem.landmarks * inv
    return (bandwidths.kernel(x_l * inv, z), bandwidths.kernel(problem.x_unlabeled * inv, z),
            bandwidths.kernel(z, z))

  with jax.enable_x64(True):
    c_l, c_u, gram = (np.asarray(c) for c in kernels(log_s))
    all_scores = _fold_scores(log_s, problem, lam, 0.0)
    shift = c_l.mean(axis=0)
    betas = jax.jit(bandwidths.fold_solutions)(
        c_l - shift[None, :], c_u - shift[None, :], gram, lam, 0.0,
        np.full(c_u.shape[0], 1.0 / c_u.shape[0]), problem.point_weight,
        problem.unlabeled_weight, problem.class_mean, problem.low, problem.target)
    for f, beta in enumerate(betas):
      train = (problem.class_mean[f].sum(axis=0) > 0).astype(np.float64)
      grad_of = lambda b: _literal_gradient(b, c_l, c_u, gram, y, 3, lam, gamma, train)
      grad = grad_of(beta)
      scale = jnp.abs(grad_of(jnp.zeros_like(beta))).max()
      assert float(jnp.abs(grad).max()) < 1e-8 * float(scale)
      # and fold_scores returns c_l beta up to the constant shift . beta
      np.testing.assert_allclose(all_scores[f], c_l @ beta - shift @ beta, rtol=1e-5, atol=1e-6)


def test_fold_solution_equals_direct_fit_on_the_same_landmarks():
  x_l, y, x_u, gamma, problem = _problem(gamma=0.4, seed=3)
  lam, scales = 0.05, np.array([0.3, 0.5, 0.8])
  with jax.enable_x64(True):
    scores = np.asarray(_fold_scores(jnp.log(scales), problem, lam, 0.0))
  for f in range(problem.point_weight.shape[0]):
    train = problem.class_mean[f].sum(axis=0) > 0
    fit = direct.fit(x_l[train] / scales, y[train], problem.x_unlabeled / scales, sigma=0.5,
                     lam=lam, gamma=gamma, landmarks=problem.landmarks / scales)
    reference = direct.decision_function(fit.model, x_l / scales).astype(np.float64)
    # f is defined up to a constant (the solver's shift): compare centered scores
    np.testing.assert_allclose(scores[f] - scores[f].mean(), reference - reference.mean(),
                               atol=2e-3 * np.abs(reference).max())


def test_fold_solutions_low_rank_gradient_is_automatic_differentiations():
  """``fold_solutions``' hand-written VJP against jax.vjp through the same computation written
  plainly (moments, ``fold_system``, Cholesky factorization and solve): every input's cotangent,
  for random cotangents of the folds' solutions (those of the symmetric inputs, gram and low,
  compared on symmetric perturbations: autodiff puts its weight on the triangle the
  factorization reads)."""
  _, _, _, _, problem = _problem(k=3, gamma=0.4, num_features=12)
  rng = np.random.default_rng(5)
  with jax.enable_x64(True):
    problem = jax.tree.map(jnp.asarray, problem)
    inv = jnp.asarray(1.0 / rng.uniform(0.3, 1.5, (1, problem.x_labeled.shape[1])))
    c_l = bandwidths.kernel(problem.x_labeled * inv, problem.landmarks * inv)
    c_u = bandwidths.kernel(problem.x_unlabeled * inv, problem.landmarks * inv)
    gram = bandwidths.kernel(problem.landmarks * inv, problem.landmarks * inv)
    c_l, c_u = c_l - c_l.mean(axis=0, keepdims=True), c_u - c_l.mean(axis=0, keepdims=True)
    rows = jnp.asarray(rng.uniform(0.5, 1.5, c_u.shape[0]) / c_u.shape[0])
    args = (c_l, c_u, gram, jnp.float64(0.03), jnp.float64(1e-6), rows, problem.point_weight,
            problem.unlabeled_weight, problem.class_mean,
            problem.low + jnp.asarray(rng.normal(scale=0.1, size=problem.low.shape)),
            problem.target)

    def plain(c_l, c_u, gram, lam, jitter, rows, *per_fold):
      mu, second = rows @ c_u, c_u.T @ (rows[:, None] * c_u)

      def one(*fold):
        q, r = bandwidths.fold_system(c_l, mu, second, *fold)
        a = q + 0.5 * lam * (gram + jitter * jnp.eye(q.shape[0]))
        return jax.scipy.linalg.cho_solve(jax.scipy.linalg.cho_factor(a, lower=True), r)

      return jax.vmap(one)(*per_fold)

    value, vjp = jax.vjp(bandwidths.fold_solutions, *args)
    reference, reference_vjp = jax.vjp(plain, *args)
    np.testing.assert_allclose(value, reference, rtol=1e-10, atol=1e-12)
    g = jnp.asarray(rng.normal(size=value.shape))
    got, want = vjp(g), reference_vjp(g)
  sym = lambda a: 0.5 * (a + np.swapaxes(a, -1, -2))
  for name, a, b in zip(("c_l", "c_u", "gram", "lam", "jitter", "rows", "point_weight",
                         "unlabeled_weight", "class_mean", "low", "target"), got, want):
    a, b = np.asarray(a), np.asarray(b)
    if name in ("gram", "low"):        # symmetric inputs: their symmetric parts
      a, b = sym(a), sym(b)
    np.testing.assert_allclose(a, b, rtol=1e-8, atol=1e-10 * np.abs(b).max(), err_msg=name)


@pytest.mark.parametrize("surrogate", bandwidths.SURROGATES)
def test_every_product_of_the_descent_runs_at_the_precision_rule(surrogate):
  """numerics.HIGHEST on every product of ``descend``, the hand-written gradient included (in
  float64 CPUs ignore the setting; an accelerator's default float32 products would not)."""
  from tests.test_engine import _products_below_the_rule   # pylint: disable=g-import-not-at-top
  _, _, _, _, problem = _problem(num_features=8)
  with jax.enable_x64(True):
    problem = jax.tree.map(jnp.asarray, bandwidths.pad(problem))
    run = lambda log_s: bandwidths.descend(
        problem, log_s, jnp.float64(0.01), jnp.asarray([0.01, 0.01]), jnp.float64(1e-8),
        num_steps=2, learning_rate=0.1, surrogate=surrogate, tie=jnp.eye(3))
    below, total = _products_below_the_rule(run, jnp.zeros(3))
  assert total >= 40 and not below, (total, below)


def test_pair_loss_is_the_mean_over_pairs():
  rng = np.random.default_rng(0)
  f = rng.normal(size=9)
  pos, neg = np.zeros(9), np.zeros(9)
  pos[[0, 3, 4]], neg[[1, 2, 7, 8]] = 1 / 3, 1 / 4
  literal = np.mean((1 - f[[0, 3, 4]][:, None] + f[[1, 2, 7, 8]][None, :]) ** 2)
  with jax.enable_x64(True):
    np.testing.assert_allclose(bandwidths.pair_loss(f, pos, neg), literal, rtol=1e-12)


def test_cv_loss_gradient_matches_finite_differences():
  _, _, _, _, problem = _problem(gamma=0.5)
  lam = 0.01
  with jax.enable_x64(True):
    problem = jax.tree.map(jnp.asarray, problem)
    log_s = jnp.log(jnp.array([0.4, 0.6, 1.2]))
    _, grad = _cv_loss_and_grad(log_s, problem, lam)
    eps = 1e-5
    loss = lambda log_s: _cv_loss_and_grad(log_s, problem, lam)[0]
    numeric = [(loss(log_s.at[i].add(eps)) - loss(log_s.at[i].add(-eps))) / (2 * eps)
               for i in range(3)]
  np.testing.assert_allclose(grad, np.array(numeric), rtol=1e-5, atol=1e-9)


def _synthetic(n, rng, d=6):
  """Only features 0 and 1 matter: y = 1{sin(6 x0) + 3 x1 + noise > 1.5}."""
  x = rng.random((n, d)).astype(np.float32)
  y = (np.sin(6 * x[:, 0]) + 3 * x[:, 1] + 0.3 * rng.normal(size=n) > 1.5).astype(np.int32)
  return x, y


# The synthetic problem's solves: p = 128 landmarks and 256 unlabeled points (the defaults, 256
# and 2000, cost 4x as much per descent: 8 x the Cholesky work, 4 x the padded unlabeled rows).
_SYNTHETIC = dict(num_features=128, num_unlabeled=256)


@pytest.fixture(scope="module")
def synthetic():
  rng = np.random.default_rng(0)
  (x_l, y_l), (x_u, _), (x_t, y_t) = (_synthetic(n, rng) for n in (150, 600, 3000))
  scales = bandwidths.learn_length_scales(x_l, y_l, x_u, key=0, return_trace=True, **_SYNTHETIC)
  return x_l, y_l, x_u, x_t, y_t, scales


def test_irrelevant_features_grow_and_test_auc_improves(synthetic):
  x_l, y_l, x_u, x_t, y_t, (scales, trace) = synthetic
  s0 = bandwidths.DEFAULT_LENGTH_SCALE
  assert scales.shape == (6,) and scales.dtype == np.float64
  assert np.min(scales[2:]) > np.max(scales[:2])
  assert np.median(scales[2:]) > s0 > np.max(scales[:2])
  assert trace.objective[-1] < trace.objective[0]
  assert trace.auc.shape == (bandwidths.NUM_STEPS + 1,) and np.max(trace.auc) > trace.auc[0]
  aucs = []
  for s in (np.full(6, s0), scales):
    fit = direct.fit(x_l / s, y_l, x_u / s, sigma=0.5)
    aucs.append(sk_metrics.roc_auc_score(y_t, direct.decision_function(fit.model, x_t / s)))
  assert aucs[1] > aucs[0] + 0.01, aucs


def test_deterministic_given_key_and_under_strict_promotion(synthetic):
  x_l, y_l, x_u, _, _, (scales, _) = synthetic
  # The same key twice gives the same scales bit for bit: checked by default on two descents
  # (the "auto" and "ard" fits, the same inputs and key: assert_array_equal of their length
  # scales) in tests/test_estimators_auto.py's
  # test_auto_length_scale_is_ard_where_the_labels_can_tell_features_apart.
  compiled = bandwidths.descend._cache_size()
  other = bandwidths.learn_length_scales(x_l, y_l, x_u, key=1, **_SYNTHETIC)
  assert bandwidths.descend._cache_size() == compiled        # same shapes: no recompilation
  assert not np.array_equal(other, scales)
  assert np.min(other[2:]) > np.max(other[:2])      # the same conclusion from other draws
  with jax.numpy_dtype_promotion("strict"):         # optax's Adam failed under a user's strict
    strict = bandwidths.learn_length_scales(x_l, y_l, x_u, key=0, **_SYNTHETIC)   # promotion
  np.testing.assert_allclose(strict, scales, rtol=1e-6)


def test_padding_changes_no_fold_term_and_new_sizes_reuse_the_compilation():
  x_l, y, x_u, _, problem = _problem()
  padded = bandwidths.pad(problem)
  n_l, n_u = x_l.shape[0], problem.x_unlabeled.shape[0]
  assert padded.x_labeled.shape[0] == 64 > n_l and padded.x_unlabeled.shape[0] == 64 > n_u
  log_s = np.log(np.array([0.5, 1.0, 2.0]))   # float64, as every test's log_s
  with jax.enable_x64(True):
    plain = np.asarray(_fold_scores(log_s, problem, 0.01, bandwidths.JITTER))
    both = np.asarray(_fold_scores(log_s, padded, 0.01, bandwidths.JITTER))
    np.testing.assert_allclose(both[:, :n_l], plain, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(_cv_terms(log_s, padded, 0.01), _cv_terms(log_s, problem, 0.01),
                               rtol=1e-9)
  # The shapes and settings of test_many_labels_are_a_stratified_subsample's descent (a
  # subsample of about 20 labeled rows, 50 unlabeled): one compilation serves both tests.
  learn = lambda n: bandwidths.learn_length_scales(x_l[:n], y[:n], x_u[:n + 30], num_steps=2,
                                                   num_features=8, min_per_scale=0.0)
  learn(20)
  compiled = bandwidths.descend._cache_size()
  learn(23)                                # new labeled and unlabeled counts, same buckets
  assert bandwidths.descend._cache_size() == compiled


def test_labeled_pairs_only_skip_the_unlabeled_moments_exactly():
  """gamma = 1: the unlabeled points weigh 0, so the problem holds one placeholder row; the
  landmarks are still drawn from the whole pool, and the surrogate and its gradient equal those
  of the same problem with every unlabeled point."""
  x_l, y, x_u, _, supervised = _problem(gamma=1.0)
  _, _, _, _, mixed = _problem(gamma=0.4)
  assert supervised.x_unlabeled.shape[0] == 1 and mixed.x_unlabeled.shape[0] == x_u.shape[0]
  np.testing.assert_array_equal(supervised.landmarks, mixed.landmarks)
  full = supervised._replace(x_unlabeled=mixed.x_unlabeled, unlabeled_rows=mixed.unlabeled_rows)
  log_s = np.log(np.array([0.5, 1.0, 2.0]))
  with jax.enable_x64(True):
    np.testing.assert_allclose(_cv_terms(log_s, supervised, 0.01), _cv_terms(log_s, full, 0.01),
                               rtol=1e-12)
    (loss, grad), (want, want_grad) = (_cv_loss_and_grad(log_s, p, 0.01, bandwidths.JITTER)
                                       for p in (supervised, full))
    np.testing.assert_allclose(loss, want, rtol=1e-12)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-10, atol=1e-14)


def test_many_labels_are_a_stratified_subsample():
  x_l, y, x_u = _data(k=3, n_l=36)
  problem = bandwidths.make_problem(x_l, y, x_u, 3, np.full(2, 0.5), jax.random.key(0), 8,
                                    bandwidths.NUM_UNLABELED, 3, num_labeled=20)
  rows = problem.x_labeled.astype(np.float32)
  assert 20 <= rows.shape[0] < 36
  index = [int(np.flatnonzero(np.all(x_l == row, axis=1))[0]) for row in rows]
  assert len(set(index)) == rows.shape[0]                  # distinct input rows
  assert np.bincount(y[index], minlength=3).min() >= 3      # every class, one per fold
  scales = bandwidths.learn_length_scales(x_l, y, x_u, num_steps=2, num_features=8,
                                          num_labeled=20, min_per_scale=0.0)
  assert scales.shape == (3,) and np.all(np.isfinite(scales))


def test_zero_steps_and_supervised():
  x_l, y, x_u = _data(k=2, n_l=20)
  np.testing.assert_array_equal(
      bandwidths.learn_length_scales(x_l, y, x_u, num_steps=0, length_scale=[1.0, 2.0, 3.0]),
      [1.0, 2.0, 3.0])
  # The settings of test_too_few_labels_per_feature_learn_one_common_factor's `free` descent
  # (supervised, k = 2, 3 folds x 2 repeats, <= 32 labeled): one compilation.
  scales = bandwidths.learn_length_scales(x_l, y, None, gamma=1.0, num_steps=5, num_features=8,
                                          min_per_scale=0.0, select="surrogate")
  assert scales.shape == (3,) and np.all(np.isfinite(scales) & (scales > 0))


def test_bad_inputs():
  x_l, y, x_u = _data(k=2, n_l=20)
  learn = bandwidths.learn_length_scales
  bad = x_l.copy()
  bad[3, 1] = np.nan
  raises_short(ValueError, "x_labeled contains 1 NaN", learn, bad, y, x_u)
  bad_u = x_u.copy()
  bad_u[0, 0] = np.inf
  raises_short(ValueError, "x_unlabeled contains 1 NaN", learn, x_l, y, bad_u)
  raises_short(ValueError, "x_unlabeled has 2 features but the model expects 3", learn, x_l, y,
               x_u[:, :2])
  raises_short(ValueError, r"labels must have shape \[20\]", learn, x_l, y[:-1], x_u)
  raises_short(ValueError, "need at least 2 classes", learn, x_l, np.zeros(20, int), x_u)
  raises_short(ValueError, "no unlabeled data but gamma", learn, x_l, y, None)
  raises_short(ValueError, r"length_scale must be .* one per feature \(\[3\]\)", learn, x_l, y,
               x_u, length_scale=[1.0, 2.0])
  raises_short(ValueError, "length_scale must be > 0", learn, x_l, y, x_u, length_scale=-1.0)
  for text in (["a", "b", "c"], "1.0", [[1.0], [2.0, 3.0]]):   # a NumPy error before
    raises_short(ValueError, r"length_scale must be a number > 0 or one per feature", learn, x_l,
                 y, x_u, length_scale=text)
  raises_short(ValueError, "lam must be", learn, x_l, y, x_u, lam=0.0)
  raises_short(TypeError, "num_steps must be a whole number", learn, x_l, y, x_u, num_steps=2.5)
  raises_short(ValueError, "gamma must lie in", learn, x_l, y, x_u, gamma=1.5)
  raises_short(ValueError, "num_labeled must be a whole number >= 1", learn, x_l, y, x_u,
               num_labeled=0)


def test_validation_key_and_folds_limited_by_smallest_class():
  x_l, y, x_u = _data(k=2, n_l=20)
  y = np.zeros(20, np.int32)
  y[:3] = 1                              # 3 positives: three folds at most
  # The settings and shapes of test_too_few_labels_per_feature_learn_one_common_factor's `free`
  # descent (supervised, k = 2, 3 folds x 2 repeats, <= 32 labeled): one compilation.
  scales = bandwidths.learn_length_scales(x_l, y, None, gamma=1.0, num_steps=5, num_features=8,
                                          num_folds=5, key=jax.random.key(7), min_per_scale=0.0,
                                          select="surrogate")
  assert scales.shape == (3,)


def test_too_few_labels_per_feature_learn_one_common_factor():
  x_l, _, _ = _data(k=2, n_l=30)
  y = (x_l[:, 0] > np.sort(x_l[:, 0])[-6]).astype(np.int32)       # 5 positives, 3 features
  # Supervised (gamma = 1, no unlabeled points): the descents of test_zero_steps_and_supervised
  # and test_validation_key_and_folds_limited_by_smallest_class share `free`'s compilation.
  with pytest.warns(bandwidths.LengthScaleWarning, match="smallest labeled class has 5 points"):
    scales = bandwidths.learn_length_scales(x_l, y, None, gamma=1.0, num_steps=5, num_features=8,
                                            length_scale=[1.0, 2.0, 4.0], select="surrogate")
  ratio = scales / np.array([1.0, 2.0, 4.0])
  np.testing.assert_allclose(ratio, ratio[0], rtol=1e-12)
  assert abs(ratio[0] - 1.0) > 1e-3
  free = bandwidths.learn_length_scales(x_l, y, None, gamma=1.0, num_steps=5, num_features=8,
                                        length_scale=[1.0, 2.0, 4.0], min_per_scale=1.0,
                                        select="surrogate")
  assert np.ptp(free / np.array([1.0, 2.0, 4.0])) > 1e-6


def test_scale_groups_per_feature_per_kind_or_one():
  x = np.array([[0, 0.1, 5, 1], [1, 0.7, 5, 0], [1, 0.3, 5, 1], [0, 0.9, 5, 1]], np.float32)
  indicators = bandwidths.indicator_features(x[:2], x[2:])
  reference = [np.unique(column).size <= 2 for column in x.T]   # the constant column is one
  np.testing.assert_array_equal(indicators, reference)
  y = np.array([0] * 6 + [1] * 4)                        # smallest class 4: 2 scales at 2 each
  np.testing.assert_array_equal(bandwidths.scale_groups(y, 2, indicators), [1, 0, 1, 1])
  np.testing.assert_array_equal(bandwidths.scale_groups(y, 2, [True] * 4), [0] * 4)   # one kind
  np.testing.assert_array_equal(bandwidths.scale_groups(y, 2, indicators, min_per_scale=1.0),
                                np.arange(4))            # 4 per scale would do: per feature
  np.testing.assert_array_equal(bandwidths.scale_groups(y, 2, indicators, min_per_scale=2.5),
                                [0] * 4)                 # not even two scales
  grad = np.array([1.0, 2.0, 4.0, 8.0])
  np.testing.assert_allclose(bandwidths.tying_matrix([1, 0, 1, 1]) @ grad,
                             [13 / 3, 2.0, 13 / 3, 13 / 3], rtol=1e-15)
  np.testing.assert_array_equal(bandwidths.tying_matrix(np.arange(4)), np.eye(4))
  still = np.array([True, False, False, True])     # a still feature alone in its group: frozen
  np.testing.assert_allclose(bandwidths.tying_matrix([1, 0, 2, 1], still) @ grad,
                             [4.5, 2.0, 4.0, 4.5], rtol=1e-15)
  np.testing.assert_allclose(bandwidths.tying_matrix(np.arange(4), still) @ grad,
                             [0.0, 2.0, 4.0, 0.0], rtol=1e-15)


def test_a_feature_constant_over_the_descents_rows_keeps_its_start():
  """A column that varies in the data only in unlabeled rows the subsample leaves out carries no
  gradient but the penalty's; it keeps s0 exactly (sweep Z9: Adam's normalized steps had turned
  rounding-level gradients into a walk that differed between builds) while the others move."""
  rng = np.random.default_rng(7)
  x_l, y = _synthetic(120, rng, d=3)
  x_u = rng.random((400, 4)).astype(np.float32)
  x_l = np.concatenate([x_l, np.zeros((120, 1), np.float32)], axis=1)
  x_u[:, 3] = 0.0
  key = jax.random.key(2)
  options = dict(num_unlabeled=20, num_features=16, num_steps=8, key=key, gamma=0.5)
  problem = bandwidths.make_problem(x_l, y, x_u, 2, np.array([0.5]), key, 16, 20, 3, 2)
  left_out = [i for i in range(400) if not np.any(np.all(problem.x_unlabeled == x_u[i], axis=1))]
  x_u[left_out[0], 3] = 1.0        # varies in the data, not in the rows the descent uses
  problem = bandwidths.make_problem(x_l, y, x_u, 2, np.array([0.5]), key, 16, 20, 3, 2)
  seen = np.concatenate([problem.x_labeled, problem.x_unlabeled, problem.landmarks])
  assert np.ptp(seen[:, 3]) == 0
  assert bandwidths.live_features(x_l, x_u)[3]
  scales = bandwidths.learn_length_scales(x_l, y, x_u, **options)
  start = bandwidths.DEFAULT_LENGTH_SCALE
  assert scales[3] == start
  assert np.abs(np.log(scales[:3] / start)).max() > 1e-3


def test_too_few_labels_per_feature_learn_one_factor_per_kind_then_refine_per_feature():
  """Two indicator columns (one of them the label's) and two continuous noise columns, 5
  positives: enough for two scales, not four; the indicators share one factor, the others
  another (``refine_penalty=None``). The default then refines per feature from there: a second
  descent of the same problem pulled toward the per-kind scales, whose first iterate is the
  per-kind result (so the held-out AUC it returns is never below the per-kind one)."""
  rng = np.random.default_rng(3)
  y = np.zeros(30, np.int32)
  y[:5] = 1
  x_l = np.stack([y ^ (rng.random(30) < 0.1), rng.integers(0, 2, 30), rng.random(30),
                  rng.random(30)], axis=1).astype(np.float32)
  s0 = np.array([1.0, 2.0, 0.5, 4.0])
  options = dict(gamma=1.0, num_steps=5, num_features=8, length_scale=s0, return_trace=True)
  with pytest.warns(bandwidths.LengthScaleWarning, match="one factor for the two-valued"):
    scales, trace = bandwidths.learn_length_scales(x_l, y, None, select="surrogate",
                                                   refine_penalty=None, **options)
  ratio = scales / s0
  np.testing.assert_allclose(ratio[:2], ratio[0], rtol=1e-12)
  np.testing.assert_allclose(ratio[2:], ratio[2], rtol=1e-12)
  assert abs(ratio[0] - ratio[2]) > 1e-3
  assert trace.auc.shape == (6,)
  with pytest.warns(bandwidths.LengthScaleWarning, match="one for the others is learned, not one"):
    kind, kind_trace = bandwidths.learn_length_scales(x_l, y, None, refine_penalty=None,
                                                      **options)
  with pytest.warns(bandwidths.LengthScaleWarning, match="refined with a pull toward its kind's"):
    refined, refined_trace = bandwidths.learn_length_scales(x_l, y, None, refine_penalty=0.5,
                                                            **options)
  np.testing.assert_array_equal(refined_trace.auc[:6], kind_trace.auc)   # the first stage
  np.testing.assert_allclose(refined_trace.objective[:6], kind_trace.objective, rtol=1e-12)
  assert refined_trace.auc.shape == (12,)
  assert refined_trace.auc[6] == np.max(kind_trace.auc)      # the refinement starts there
  assert np.max(refined_trace.auc) > np.max(kind_trace.auc)   # here it found better scales
  assert abs(refined[0] / s0[0] - refined[1] / s0[1]) > 1e-3   # no longer tied within a kind
  assert not np.allclose(refined, kind)
  # Two columns, one of each kind, 5 positives: per feature from the start, nothing to refine.
  _, trace = bandwidths.learn_length_scales(x_l[:, [0, 2]], y, None, **dict(
      options, length_scale=s0[[0, 2]]))
  assert trace.auc.shape == (6,)


def test_a_class_of_one_point_returns_the_isotropic_scales_with_a_warning():
  x_l, _, x_u = _data(k=2, n_l=20)
  y = np.zeros(20, np.int32)
  y[5] = 1
  with pytest.warns(bandwidths.LengthScaleWarning, match="a class has a single distinct labeled point"):
    scales = bandwidths.learn_length_scales(x_l, y, x_u, length_scale=0.7)
  np.testing.assert_array_equal(scales, [0.7, 0.7, 0.7])


def test_penalty_split_into_anisotropy_and_scale():
  _, _, _, _, problem = _problem()
  with jax.enable_x64(True):
    problem = jax.tree.map(jnp.asarray, problem)
    s0, s = jnp.zeros(3), jnp.array([0.3, -0.2, 0.5])
    base, _ = _cv_loss_and_grad(s, problem, 0.01)
    objective = jax.jit(bandwidths.objective)
    both = objective(s, s0, problem, 0.01, jnp.array([0.2, 0.2])) - base
    np.testing.assert_allclose(both, 0.2 * jnp.mean(s**2), rtol=1e-12)
    shape = objective(s, s0, problem, 0.01, jnp.array([1.0, 0.0])) - base
    np.testing.assert_allclose(shape, jnp.var(s), rtol=1e-12)


def test_pair_auc_is_the_weighted_mann_whitney_double_sum_with_ties():
  rng = np.random.default_rng(3)
  f = np.round(rng.normal(size=(4, 300)), 1)            # many ties
  pos = rng.random((4, 300)) * (rng.random((4, 300)) < 0.3)
  neg = rng.random((4, 300)) * (rng.random((4, 300)) < 0.5)
  wins = (f[:, :, None] > f[:, None, :]) + 0.5 * (f[:, :, None] == f[:, None, :])
  reference = np.einsum("ia,ib,iab->i", pos, neg, wins)
  with jax.enable_x64(True):
    auc = jax.jit(jax.vmap(bandwidths.pair_auc))(f, pos, neg)
  np.testing.assert_allclose(np.asarray(auc), reference, rtol=1e-12)


def test_an_iterate_must_beat_the_best_held_out_auc_by_more_than_rounding():
  """Iterates sharing one held-out AUC keep the first: rounding in the sums (their order, the
  host's instruction set) does not pick another (``bandwidths.AUC_TIE``)."""
  with jax.enable_x64(True):
    state = bandwidths.init(jnp.zeros(2), optax.adam(0.1))
    state = bandwidths._keep_better(state, jnp.ones(2), 1.0, 0.75, "auc")
    tied = bandwidths._keep_better(state, 2 * jnp.ones(2), 0.5, 0.75 + 1e-12, "auc")
    ahead = bandwidths._keep_better(state, 3 * jnp.ones(2), 0.5, 0.75 + 1e-6, "auc")
  np.testing.assert_array_equal(tied.best_log_scales, 1.0)
  np.testing.assert_array_equal(ahead.best_log_scales, 3.0)


def test_held_out_auc_is_roc_auc_per_fold_and_split():
  x_l, y, _, _, problem = _problem(k=3, seed=2)
  with jax.enable_x64(True):
    log_s = jnp.log(jnp.array([0.4, 0.6, 1.2]))
    f = np.asarray(_fold_scores(log_s, problem, 0.01, bandwidths.JITTER))
    _, auc = _cv_terms(log_s, problem, 0.01)
  reference = []
  for fold in range(f.shape[0]):
    held = problem.valid_pos[fold, 0] + problem.valid_neg[fold, 0] > 0
    reference += [sk_metrics.roc_auc_score(y[held] > j, f[fold, held]) for j in range(2)]
  np.testing.assert_allclose(auc, np.mean(reference), rtol=1e-12)


def test_selection_by_auc_returns_the_best_held_out_iterate(synthetic):
  x_l, y_l, x_u, _, _, (scales, trace) = synthetic
  assert trace.auc[0] < np.max(trace.auc)
  problem = bandwidths.make_problem(x_l, y_l, x_u, 2, np.array([0.5]), jax.random.key(0),
                                    _SYNTHETIC["num_features"], _SYNTHETIC["num_unlabeled"],
                                    bandwidths.NUM_FOLDS, bandwidths.NUM_REPEATS)
  with jax.enable_x64(True):
    _, auc = _cv_terms(jnp.log(scales), problem, 1e-3)
  np.testing.assert_allclose(auc, np.max(trace.auc), rtol=1e-9)
  first_best = int(np.argmax(trace.auc))           # ties go to the earliest iterate
  assert np.all(trace.auc[:first_best] < trace.auc[first_best])


def test_repeats_stack_fresh_partitions():
  x_l, y, x_u = _data(k=3)
  problem = bandwidths.make_problem(x_l, y, x_u, 3, np.full(2, 0.5), jax.random.key(0), 20,
                                    100, 3, num_repeats=2)
  held = (problem.valid_pos[:, 0] + problem.valid_neg[:, 0]) > 0              # [6, n_l]
  train = problem.class_mean.sum(axis=1) > 0
  assert held.shape == (6, x_l.shape[0])
  for r in range(2):                       # each repeat's folds partition the labeled points
    np.testing.assert_array_equal(held[3 * r:3 * r + 3].sum(axis=0), 1)
  np.testing.assert_array_equal(train, ~held)
  assert not np.array_equal(held[:3], held[3:])
