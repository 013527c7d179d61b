"""ROC-SVM models end to end: fit, Nystrom map, k-means landmarks, errors at the boundary."""

import functools
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import cluster
from sklearn import metrics as skm

import qsg_jax
from qsg_jax import memory
from qsg_jax import roc_svm
from qsg_jax.roc_svm import clustering
from qsg_jax.roc_svm import nystrom
from qsg_jax.roc_svm import pairs as pairs_lib
from qsg_jax.roc_svm import synthetic
from qsg_jax.roc_svm import train as train_lib
from tests import _bad_inputs as toy
from tests.conftest import raises_short


def _linear_data(n=250, seed=0):
  """n = 250 points, 51 positive: padded to 64 positives, 256 negatives and 256 pairs.

  Every fit on these shapes (and on the 250-point folds of ``_linear_data(500)``) with the
  same objective reuses one compiled training loop.
  """
  x, y = synthetic.generate(jax.random.key(seed), n, "linear")
  return np.asarray(x), np.asarray(y)


@functools.lru_cache(maxsize=None)
def _fits():
  x, y = _linear_data()
  return {risk: roc_svm.fit(x, y, risk=risk, lam=1e-3, key=0)
          for risk in ("incomplete", "full", "full_sorted")}


def test_incomplete_and_full_models_rank_alike_and_full_variants_agree():
  x, y = _linear_data()
  x_test, y_test = _linear_data(5000, seed=1)
  fits = _fits()
  auc = {risk: roc_svm.model_auc(f.model, x_test, y_test) for risk, f in fits.items()}
  np.testing.assert_allclose(
      auc["incomplete"],
      skm.roc_auc_score(y_test, roc_svm.decision_function(fits["incomplete"].model, x_test)),
      atol=1e-6)
  # B = n = 250 pairs only: the 0.005 check at Table 1 sizes is in the reproduction.
  assert abs(auc["incomplete"] - auc["full"]) < 0.01, auc
  assert auc["full"] > 0.9, auc                       # population AUC 0.908
  # Streamed and sorted evaluate the same objective: same iterates up to rounding.
  np.testing.assert_allclose(fits["full"].model.coef, fits["full_sorted"].model.coef, rtol=2e-3)
  assert fits["full"].num_pairs == int(y.sum()) * int((1 - y).sum())
  assert fits["incomplete"].num_pairs == x.shape[0]   # B = n by default
  assert fits["full"].converged and fits["full_sorted"].converged
  # L-BFGS (the default) stops in tens of steps at an objective no higher than 2000 steps of
  # the paper's Adamax reach on the same design.
  adamax = roc_svm.fit(x, y, lam=1e-3, optimizer="adamax", learning_rate=0.05)
  assert fits["incomplete"].num_steps < 200 < adamax.num_steps, (fits["incomplete"].num_steps,
                                                                 adamax.num_steps)
  assert fits["incomplete"].value <= adamax.value + 1e-5
  # The learned direction is close to the true one, (1, 1) / sqrt(2) (51 positives only).
  beta = np.asarray(fits["full"].model.coef)
  assert beta @ np.ones(2) / np.sqrt(2) / np.linalg.norm(beta) > 0.98, beta


def test_fit_intercept_meets_the_target_sensitivity():
  x, y = _linear_data()
  size = train_lib.minimize._cache_size()
  result = roc_svm.fit(x, y, lam=1e-3, target_sensitivity=0.9)
  assert train_lib.minimize._cache_size() == size       # same shapes: no recompilation
  np.testing.assert_allclose(result.model.coef, _fits()["incomplete"].model.coef)
  scores = roc_svm.decision_function(result.model, x)
  np.testing.assert_allclose(scores - result.model.intercept, x @ np.asarray(result.model.coef),
                             rtol=1e-5, atol=1e-6)
  assert (scores[y == 1] > 0).mean() >= 0.9 > (scores[y == 1] > 0).mean() - 1.5 / y.sum()
  spec = roc_svm.fit(x, y, lam=1e-3, target_specificity=0.75)
  assert (roc_svm.decision_function(spec.model, x)[y == 0] <= 0).mean() >= 0.75


def _numpy_gaussian_kernel(a, b, sigma):
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  return np.exp(-sigma * ((a[:, None, :] - b[None, :, :]) ** 2).sum(-1))


@jax.jit
def _linear_and_kernel_objectives(beta, v_data, theta, k_data):
  linear = roc_svm.Objective(loss="logistic", risk="full")
  kernel = roc_svm.Objective(loss="logistic", risk="full", model="kernel")
  return linear(beta, v_data, 0.1), kernel(theta, k_data, 0.1)


def test_nystrom_with_every_point_as_landmark_is_the_exact_kernel_objective():
  """Proposition 3: with V V^T = K, beta = V^T theta gives the kernel model's objective.

  Scores V beta = V V^T theta = K theta and penalty beta.beta = theta^T K theta (Eq. 10, 12).
  """
  x, y = synthetic.generate(jax.random.key(2), 60, "radial")
  x, y = np.asarray(x), np.asarray(y)
  fmap = nystrom.nystrom_map(x, 0.5)                     # every point is a landmark
  v = np.asarray(nystrom.nystrom_features(fmap, x))
  gram = _numpy_gaussian_kernel(x, x, 0.5)
  np.testing.assert_allclose(v.astype(np.float64) @ v.T, gram, atol=2e-3)
  pos, neg = y == 1, y == 0
  no_pairs = roc_svm.PairIndices(np.zeros(1, np.int32), np.zeros(1, np.int32))
  v_data = roc_svm.make_pair_data(v[pos], v[neg], no_pairs)
  k_data = roc_svm.make_pair_data(gram[pos].astype(np.float32), gram[neg].astype(np.float32),
                                  no_pairs)
  # Kernel coefficients follow the positives-then-negatives order of the rows, padded to 64.
  theta = np.random.default_rng(0).normal(size=60)
  theta_padded = np.concatenate([theta[pos], np.zeros(64 - pos.sum()),
                                 theta[neg], np.zeros(64 - neg.sum())]).astype(np.float32)
  gram_padded = np.zeros((128, 128), np.float32)      # the kernel model's design, by hand
  order = np.concatenate([np.nonzero(pos)[0], np.nonzero(neg)[0]])
  rows = np.concatenate([np.arange(pos.sum()), 64 + np.arange(neg.sum())])
  gram_padded[np.ix_(rows, rows)] = gram[np.ix_(order, order)]
  k_data = k_data._replace(x_pos=gram_padded[:64], x_neg=gram_padded[64:])
  beta = v.T @ theta
  linear, kernel = _linear_and_kernel_objectives(beta, v_data, theta_padded, k_data)
  np.testing.assert_allclose(linear, kernel, rtol=1e-3)
  # And the value is the literal one: logistic loss over all pairs of K theta plus the ridge.
  scores = gram @ theta
  margins = scores[pos][:, None] - scores[neg][None, :]
  np.testing.assert_allclose(kernel, np.mean(np.logaddexp(0.0, -margins))
                             + 0.05 * theta @ gram @ theta, rtol=1e-4)


@pytest.fixture(scope="module")
def radial_gaussian_fit():
  """(x, y, the exact Gaussian-kernel fit): read by two tests, trained once."""
  x, y = synthetic.generate(jax.random.key(0), 250, "radial")
  x, y = np.asarray(x), np.asarray(y)
  return x, y, roc_svm.fit(x, y, kernel="gaussian", lam=1e-2, sigma=0.5)


def test_gaussian_and_nystrom_fits_score_new_points_with_their_kernels(radial_gaussian_fit):
  x, y, exact = radial_gaussian_fit
  x_test, y_test = synthetic.generate(jax.random.key(1), 5000, "radial")
  x_test = np.asarray(x_test)
  model = exact.model
  real = np.concatenate([np.arange(y.sum()), 64 + np.arange(250 - y.sum())])
  assert np.all(np.asarray(model.coef)[np.setdiff1d(np.arange(320), real)] == 0)   # padding
  np.testing.assert_allclose(model.support[real], np.concatenate([x[y == 1], x[y == 0]]))
  want = _numpy_gaussian_kernel(x_test, model.support[real], 0.5) @ model.coef[real]
  np.testing.assert_allclose(roc_svm.decision_function(model, x_test, chunk_size=2500),
                             want, rtol=1e-4, atol=1e-4)
  approx = roc_svm.fit(x, y, kernel="nystrom", num_landmarks=20, lam=1e-2, sigma=0.5)
  fmap = approx.model.feature_map
  c = _numpy_gaussian_kernel(x_test, fmap.landmarks, 0.5)
  np.testing.assert_allclose(roc_svm.decision_function(approx.model, x_test),
                             c @ np.asarray(fmap.projection) @ np.asarray(approx.model.coef),
                             rtol=1e-4, atol=1e-4)
  auc_exact = roc_svm.model_auc(exact.model, x_test, y_test)
  auc_nystrom = roc_svm.model_auc(approx.model, x_test, y_test)
  assert auc_exact > 0.93 and auc_nystrom > 0.93, (auc_exact, auc_nystrom)   # population 0.965


def test_pinv_sqrt_and_the_nystrom_identity():
  rng = np.random.default_rng(1)
  z = rng.normal(size=(60, 2)).astype(np.float32)       # 60 x 2, as in Proposition 3's test
  k_sel = _numpy_gaussian_kernel(z, z, 0.7)
  eigvals, eigvecs = np.linalg.eigh(k_sel)
  keep = eigvals > 10 * 60 * np.finfo(np.float32).eps * eigvals.max()
  assert 0 < keep.sum() < 60                             # the pseudo-inverse drops some
  expected = (eigvecs[:, keep] / np.sqrt(eigvals[keep])) @ eigvecs[:, keep].T
  fmap = nystrom.nystrom_map(z, 0.7)          # projection = pinv_sqrt(K_sel)
  root = np.asarray(fmap.projection, np.float64)
  np.testing.assert_allclose(root, root.T, atol=1e-5)
  # Compared through K_sel, which weighs each eigen-direction like the features do.
  np.testing.assert_allclose(k_sel @ root @ root @ k_sel, k_sel @ expected @ expected @ k_sel,
                             atol=5e-3)
  # On the landmarks themselves V V^T reproduces K_sel; elsewhere it is C K^+ C^T.
  v = np.asarray(nystrom.nystrom_features(fmap, z), np.float64)
  np.testing.assert_allclose(v @ v.T, k_sel, atol=5e-3)
  x = rng.normal(size=(60, 2)).astype(np.float32)
  c = _numpy_gaussian_kernel(x, z, 0.7)
  v_x = np.asarray(nystrom.nystrom_features(fmap, x), np.float64)
  np.testing.assert_allclose(nystrom.nystrom_features(fmap, x, chunk_size=30), v_x, atol=1e-6)
  np.testing.assert_allclose(v_x @ v_x.T, c @ expected @ expected @ c.T, atol=5e-3)


def _clustered_points():
  """250 points around 20 well separated centers: the shape of Table 3's k-means smoke test."""
  rng = np.random.default_rng(0)
  grid = np.stack(np.meshgrid(np.arange(5), np.arange(4)), -1).reshape(20, 2) * 10.0
  return (grid[rng.integers(0, 20, 250)] + rng.normal(size=(250, 2))).astype(np.float32)


def test_landmark_selection_methods(key):
  x, y = _linear_data()
  uniform = np.asarray(nystrom.select_landmarks(key, x, y, 20, "uniform"))
  assert len({tuple(r) for r in uniform}) == 20            # without replacement
  strat = np.asarray(nystrom.select_landmarks(key, x, y, 20, "stratified"))
  rows = {tuple(r): lab for r, lab in zip(x, y)}
  labels = np.array([rows[tuple(r)] for r in strat])
  assert len(set(map(tuple, strat))) == 20
  assert labels.sum() == round(20 * y.mean())              # proportional allocation
  points = _clustered_points()
  centers = nystrom.select_landmarks(key, points, np.zeros(250), 20, "kmeans")
  np.testing.assert_array_equal(centers, roc_svm.kmeans(key, points, 20, max_iters=100).centers)
  with pytest.raises(ValueError, match="unknown landmark method 'random'"):
    nystrom.select_landmarks(key, x, y, 8, "random")
  with pytest.raises(ValueError, match="num_landmarks must lie in 1..n = 250"):
    nystrom.select_landmarks(key, x, y, 251, "uniform")


def test_kmeans_is_sklearn_from_its_seeds_and_a_function_of_the_key(key):
  x = _clustered_points()
  result = roc_svm.kmeans(key, x, 20, max_iters=100)
  seeds = result.initial_centers
  assert all(any(np.array_equal(s, r) for r in x) for s in seeds)      # seeds are data points
  assert len({tuple(s) for s in seeds}) == 20
  assert 0 < result.num_iters < 100
  sk = cluster.KMeans(20, init=seeds, n_init=1, algorithm="lloyd").fit(x)
  np.testing.assert_allclose(result.centers, sk.cluster_centers_, rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(result.assignments, sk.labels_)
  # assignments are the nearest centers and the inertia is theirs (NumPy reference).
  d2 = ((x[:, None, :].astype(np.float64) - result.centers[None, :, :]) ** 2).sum(-1)
  np.testing.assert_array_equal(result.assignments, d2.argmin(1))
  np.testing.assert_allclose(result.inertia, d2.min(1).sum(), rtol=1e-4)
  again = roc_svm.kmeans(key, x, 20, max_iters=100)
  np.testing.assert_array_equal(again.centers, result.centers)          # deterministic
  other = roc_svm.kmeans(jax.random.fold_in(key, 1), x, 20, max_iters=100)
  assert not np.array_equal(other.initial_centers, seeds)              # another key, other seeds
  # Seeds past 2**32 are distinct streams (jax.random.key alone keeps the low 32 bits).
  assert not np.array_equal(roc_svm.kmeans(2**32, x, 20).initial_centers,
                            roc_svm.kmeans(0, x, 20).initial_centers)
  seeds_only = roc_svm.kmeans(key, x.astype(np.int64), 20, max_iters=0)   # integers: float64
  assert seeds_only.num_iters == 0 and seeds_only.centers.dtype == np.float64
  with pytest.raises(ValueError, match="n >= k = 50"):
    roc_svm.kmeans(key, x[:10], 50)


def test_fit_rejects_bad_input(monkeypatch):
  x, y = _linear_data()
  with pytest.raises(ValueError, match="needs both classes"):
    roc_svm.fit(x, np.zeros(250))
  with pytest.raises(ValueError, match="unknown kernel 'rbf'"):
    roc_svm.fit(x, y, kernel="rbf")
  with pytest.raises(ValueError, match="NaN or infinite"):
    roc_svm.fit(np.where(np.arange(500).reshape(250, 2) == 7, np.nan, x), y)
  with pytest.raises(ValueError, match="y must have shape \\[250\\]"):
    roc_svm.fit(x, y[:50])
  with pytest.raises(ValueError, match="not both"):
    roc_svm.fit(x, y, target_sensitivity=0.9, target_specificity=0.9)
  with pytest.raises(ValueError, match="num_landmarks=300 exceeds the 250 training points"):
    roc_svm.fit(x, y, kernel="nystrom")
  with pytest.raises(ValueError, match="has 3 features but the model expects 2"):
    roc_svm.decision_function(_fits()["incomplete"].model, np.zeros((4, 3)))
  with pytest.raises(ValueError, match="y must have shape \\[4\\]"):
    roc_svm.model_auc(_fits()["incomplete"].model, x[:4], y)
  # Features whose squares overflow float32 are refused up front, naming their norm.
  with pytest.raises(ValueError, match="norms up to 3.*e\\+22: their squares .* overflow"):
    roc_svm.fit(x * 1e22, y, loss="squared_hinge", lam=1e-3)
  with pytest.raises(ValueError, match="norms up to .*e\\+22"):
    roc_svm.decision_function(_fits()["incomplete"].model, x * 1e22)
  # A step that overflows, or none at all: reported with the data's range, never returned.
  with pytest.raises(qsg_jax.DivergenceError, match="became inf after 2 steps \\(features in"):
    roc_svm.fit(x, y, loss="squared_hinge", lam=1e-3, optimizer="adamax", learning_rate=1e30)
  # (A stalled optimizer, e.g. optax.sgd(0.0), takes the same "made no progress" path as the
  # underflowing gradient of x * 1e-20 below, on the compiled loop of the default optimizer.)
  # Identical rows, or a kernel too wide for float32 to tell points apart: refused.
  with pytest.raises(ValueError, match="every row of x is the same point"):
    roc_svm.fit(np.ones_like(x), y)
  with pytest.raises(ValueError, match="below float32 resolution: every kernel value"):
    roc_svm.fit(x * 1e-6, y, kernel="nystrom", num_landmarks=20, sigma=1.0)
  with pytest.raises(ValueError, match="far from the origin"):
    roc_svm.fit(x + 1e4, y, kernel="nystrom", num_landmarks=20, sigma=1.0)
  with pytest.raises(ValueError, match="binary y must be 0/1 .*received values \\[0, 1, 2\\]"):
    roc_svm.fit(x, np.arange(250) % 3)
  with pytest.raises(TypeError, match="dtype <U1.*ROCSVM"):
    roc_svm.fit(x, np.where(y > 0, "a", "b"))
  with pytest.raises(ValueError, match="learning_rate applies to optimizer='adamax' only"):
    roc_svm.fit(x, y, learning_rate=0.1)
  # A bandwidth with the linear kernel was silently ignored; the Gaussian kernels default to 1.
  with pytest.raises(ValueError, match="sigma=0.5 applies to the Gaussian kernels only"):
    roc_svm.fit(x, y, sigma=0.5)
  with pytest.raises(ValueError, match="landmarks must be one of"):
    roc_svm.fit(x, y, landmarks="foo")            # checked with every kernel
  with pytest.raises(ValueError, match="num_pairs=5 applies to risk='incomplete' only"):
    roc_svm.fit(x, y, risk="full", num_pairs=5)   # was trained on all pairs, reported 22,100
  # Features so small that the gradient's squares underflow float32 (its norm is 0): a stall,
  # not a converged model of AUC 0.5.
  with pytest.raises(qsg_jax.DivergenceError, match="made no progress.*largest gradient entry"):
    roc_svm.fit(x * 1e-20, y)
  # Advice for the optimizer in use (it told an Adamax user to try Adamax).
  with pytest.raises(qsg_jax.DivergenceError, match=r"made no progress.*or change learning_rate "
                                                    r"\(a step too small moves nothing"):
    roc_svm.fit(x, y, optimizer="adamax", learning_rate=1e-50, max_steps=5)
  with pytest.raises(ValueError, match="optimizer must be one of.*'sgd'"):
    roc_svm.fit(x, y, optimizer="sgd")
  with pytest.raises(ValueError, match="kmeans_sample_size=10 is below num_landmarks=20"):
    roc_svm.fit(x, y, kernel="nystrom", num_landmarks=20, landmarks="kmeans",
                kmeans_sample_size=10)
  monkeypatch.setattr(memory, "available_bytes", lambda device=None: 10**5)
  with pytest.raises(memory.InsufficientMemoryError, match="250 x 250 Gaussian kernel matrix"):
    roc_svm.fit(x, y, kernel="gaussian")
  with pytest.raises(memory.InsufficientMemoryError, match="drawing num_pairs=100000 pairs"):
    roc_svm.fit(x, y, num_pairs=100_000)     # was an out-of-memory error inside JAX


def test_cross_validation_picks_the_best_grid_entry():
  x, y = _linear_data(500)
  fold_of = qsg_jax.folds.stratified_folds(y > 0, 2, seed=0)     # the folds cross_validate uses
  folds = [(np.nonzero(fold_of != f)[0], np.nonzero(fold_of == f)[0]) for f in range(2)]
  for train, valid in folds:
    assert np.intersect1d(train, valid).size == 0 and train.size + valid.size == 500
    assert abs(y[valid].mean() - y.mean()) < 0.01
  size = train_lib.minimize._cache_size()
  cv = roc_svm.cross_validate(x, y, [{"lam": 1e3}, {"lam": 1e-3}], num_folds=2, seed=0)
  assert train_lib.minimize._cache_size() <= size + 1   # folds and lambdas share one loop
  assert cv.fold_scores.shape == (2, 2, 1)
  for f, (train, valid) in enumerate(folds):              # the literal loop over folds
    fitted = roc_svm.fit(x[train], y[train], lam=1e-3, key=f)
    np.testing.assert_allclose(cv.fold_scores[1, f, 0], skm.roc_auc_score(
        y[valid], roc_svm.decision_function(fitted.model, x[valid])), atol=1e-6)
  np.testing.assert_allclose(cv.scores, cv.fold_scores.mean(1))
  assert cv.best == {"lam": 1e-3} and cv.scores[1, 0] > 0.85
  with pytest.raises(ValueError, match="at most the smallest labeled class size"):
    roc_svm.cross_validate(x[:8], y[:8], [{"lam": 1e-3}], num_folds=5)
  with pytest.raises(ValueError, match="grid is empty"):
    roc_svm.cross_validate(x, y, [])


def test_every_product_of_the_roc_svm_runs_at_full_float32_precision(key):
  """numerics.HIGHEST: TF32 on an H200 moved Nystrom scores by 4e-3 relative (2026-11-27)."""
  from tests.test_engine import _products_below_the_rule   # pylint: disable=g-import-not-at-top
  x, y = _linear_data()
  fitted = roc_svm.fit(x, y, kernel="nystrom", num_landmarks=20, landmarks="uniform", key=0)
  model = fitted.model
  data = roc_svm.make_pair_data(jnp.asarray(x[y > 0]), jnp.asarray(x[y <= 0]),
                                roc_svm.sample_pairs(key, int((y > 0).sum()),
                                                     int((y <= 0).sum()), 100))
  params = jnp.zeros(2)
  for risk_name in ("incomplete", "full", "full_sorted"):
    objective = roc_svm.Objective("squared_hinge", risk_name, "linear", 64).check()
    below, total = _products_below_the_rule(jax.grad(objective), params, data, 1e-3)
    assert total > 0 and below == [], (risk_name, below)
  for fn, args in [(nystrom._features, (model.feature_map, jnp.asarray(x))),
                   (nystrom._nystrom_map, (model.feature_map.landmarks, 1.0)),
                   (roc_svm.model._kernel_scores, (jnp.asarray(x), jnp.asarray(x), jnp.ones(250),
                                                   1.0))]:
    below, total = _products_below_the_rule(fn, *args)
    assert total > 0 and below == [], below


# ---- Bad inputs (RELIABILITY.md): labels never binarized, counts never truncated ----------------
# Counts are whole numbers (2.5 used to become 2, True 1); floats are finite and in range; None
# only where documented. Every check runs before anything is compiled.

def test_roc_svm_refuses_labels_it_would_otherwise_binarize():
  rng = np.random.default_rng(0)
  x = rng.random((30, 2)).astype(np.float32)
  with pytest.raises(ValueError, match=r"binary y must be 0/1 .*received values \[0, 1, 2\]\. "
                                       r"Binarize explicitly"):
    roc_svm.fit(x, np.arange(30) % 3)
  with pytest.raises(TypeError, match=r"y must be binary numbers .*use qsg_jax.roc_svm.ROCSVM"):
    roc_svm.fit(x, np.array(["a", "b"] * 15))


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(num_pairs=2.5), TypeError, r"num_pairs must be a whole number >= 1 or None.*2\.5"),
    (dict(num_pairs=True), TypeError, r"num_pairs must be a whole number.*received True"),
    (dict(num_pairs="10"), TypeError, r"num_pairs must be a whole number.*'10'"),
    (dict(num_pairs=0), ValueError, r"num_pairs must be a whole number >= 1.*received 0"),
    (dict(kernel="nystrom", num_landmarks=2.5), TypeError,
     r"num_landmarks must be a whole number >= 1; received 2\.5"),
    (dict(kernel="nystrom", num_landmarks=None), TypeError,
     r"num_landmarks must be a whole number >= 1; received None.*num_landmarks=300"),
    (dict(max_steps=2.5), TypeError, r"max_steps must be a whole number >= 1; received 2\.5"),
    (dict(max_steps=None), TypeError, r"max_steps must be a whole number >= 1; received None"),
    (dict(max_steps=0), ValueError, r"max_steps must be a whole number >= 1; received 0"),
    (dict(patience=None), TypeError, r"patience must be a whole number >= 1; received None"),
    (dict(patience=np.nan), TypeError, r"patience must be a whole number >= 1; received nan"),
    (dict(kernel="nystrom", num_landmarks=10, landmarks="kmeans", kmeans_iters=-1), ValueError,
     r"kmeans_iters must be a whole number >= 0; received -1"),
    (dict(kmeans_sample_size=2.5), TypeError, r"kmeans_sample_size must be a whole number"),
    (dict(risk="full", pairs_per_block=1.5), TypeError, r"pairs_per_block must be a whole"),
])
def test_fit_refuses_counts_that_are_not_whole_numbers(changes, error, pattern):
  message = raises_short(error, pattern, roc_svm.fit, toy.X_ROC, toy.Y_ROC, **changes)
  assert "fractions are never rounded" in message


@pytest.mark.parametrize("tol, error", [
    (-1.0, ValueError), (np.nan, ValueError), (np.inf, ValueError), (None, TypeError),
    ("fast", TypeError), (True, TypeError)])
def test_fit_refuses_a_tol_that_is_not_a_finite_number_at_least_zero(tol, error):
  raises_short(error, r"tol must be a finite number >= 0 .*; received .*tol=1e-6", roc_svm.fit,
               toy.X_ROC, toy.Y_ROC, tol=tol)


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(target_sensitivity="a"), TypeError, r"target_sensitivity must be a number in \(0, 1\]"),
    (dict(target_sensitivity=np.nan), ValueError, r"target_sensitivity must lie in \(0, 1\]"),
    (dict(target_specificity=1.5), ValueError, r"target_specificity must lie in \(0, 1\]"),
    (dict(optimizer="adamax", learning_rate="fast"), TypeError, r"learning_rate must be a number"),
    (dict(optimizer="adamax", learning_rate=np.nan), ValueError,
     r"learning_rate must be finite and > 0"),
])
def test_fit_refuses_bad_rates_before_training(changes, error, pattern):
  raises_short(error, pattern, roc_svm.fit, toy.X_ROC, toy.Y_ROC, **changes)


@pytest.mark.parametrize("changes", [
    dict(lam=1e39), dict(lam=1e300), dict(tol=1e39), dict(tol=1e300),
    dict(optimizer="adamax", learning_rate=1e39), dict(optimizer="adamax", learning_rate=1e300)])
def test_fit_refuses_numbers_beyond_float32_naming_them(changes):
  """They became inf in float32 (JAX's "overflow encountered in cast" warnings; lam: a NaN
  objective blamed on the learning rate with "or raise lam"; tol: fitted silently)."""
  (name, value), = [item for item in changes.items() if item[0] != "optimizer"]
  raises_short(ValueError, re.escape(f"{name}={value:g} is beyond float32's range (at most "
                                     "3.403e+38)"), roc_svm.fit, toy.X_ROC, toy.Y_ROC, **changes)


@pytest.mark.parametrize("lam, kernel", [(1e10, {}), (3e38, {}),
                                         (1e38, dict(kernel="nystrom", num_landmarks=20))])
def test_a_lam_too_large_to_move_beta_is_named(lam, kernel):
  """beta = 0 was the float32 answer ("the optimizer made no progress ... min-max scale the
  features"): now the convexity bound on the decrease names lam (features too small for the
  default lam keep the scaling message: test_fit_rejects_bad_input); a large lam that fits
  still ranks."""
  pattern = re.escape(f"lam={lam:g} is too large for these data: the objective can fall at "
                      "most") + r".* below its value 1 at beta = 0 .* Lower lam"
  raises_short(qsg_jax.DivergenceError, pattern, roc_svm.fit, toy.X_ROC, toy.Y_ROC, lam=lam,
               **kernel)
  fitted = roc_svm.fit(toy.X_ROC, toy.Y_ROC, lam=1e4)
  assert roc_svm.model_auc(fitted.model, toy.X_ROC, toy.Y_ROC) > 0.8


def test_intercept_for_rate_names_a_target_that_is_not_a_number():
  raises_short(TypeError, r"target sensitivity must be a number in \(0, 1\]",
               roc_svm.intercept_for_rate, np.arange(4.0), np.array([0, 1, 0, 1]), "a")
  raises_short(ValueError, r"target specificity must lie in \(0, 1\]", roc_svm.intercept_for_rate,
               np.arange(4.0), np.array([0, 1, 0, 1]), np.nan, "specificity")


def test_an_integral_float_count_is_accepted_as_that_integer():
  result = roc_svm.fit(toy.X_ROC, toy.Y_ROC, max_steps=3.0, num_pairs=40.0, optimizer="adamax")
  assert result.num_pairs == 40 and 1 <= result.num_steps <= 3


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(num_folds=2.5), TypeError, r"num_folds must be a whole number >= 2; received 2\.5"),
    (dict(num_folds=None), TypeError, r"num_folds must be a whole number >= 2; received None"),
    (dict(num_folds=1), ValueError, r"num_folds must be a whole number >= 2; received 1"),
    (dict(seed=None), TypeError, r"seed must be a whole number >= 0; received None\. None would "
                                 r"draw different folds"),
    (dict(seed=-1), ValueError, r"seed must be a whole number >= 0; received -1"),
    (dict(seed=1.5), TypeError, r"seed must be a whole number >= 0; received 1\.5"),
    (dict(grid={"lam": 1e-3}), TypeError, r"grid must be a sequence of dicts"),
    (dict(grid=[{"lamm": 1e-3}]), ValueError, r"\['lamm'\] are not arguments of roc_svm.fit"),
    (dict(grid=[{"key": 5}]), ValueError, r"\['key'\] are also given outside the grid"),
    (dict(grid=[{"lam": 1e-3}], lam=1e-2), ValueError, r"\['lam'\] are also given outside"),
    (dict(key=3), ValueError, r"key is not an argument of cross_validate"),
    (dict(foo=1), TypeError, r"\['foo'\] are not arguments of cross_validate or roc_svm.fit"),
])
def test_cross_validate_checks_folds_seed_and_grid_first(changes, error, pattern):
  args = dict(grid=[{"lam": 1e-3}], num_folds=2, seed=0)
  args.update(changes)
  raises_short(error, pattern, roc_svm.cross_validate, toy.X_ROC, toy.Y_ROC, **args)


def test_building_blocks_refuse_fractional_counts():
  key = jax.random.key(0)
  raises_short(TypeError, r"num_pairs must be a whole number >= 1; received 2\.5",
               pairs_lib.sample_pairs, key, 10, 10, 2.5)
  raises_short(TypeError, r"num_landmarks must be a whole number >= 1; received 2\.5",
               nystrom.select_landmarks, key, toy.X_ROC, toy.Y_ROC, 2.5, "uniform")
  raises_short(ValueError, r"kmeans_iters must be a whole number >= 0; received -1",
               nystrom.select_landmarks, key, toy.X_ROC, toy.Y_ROC, 5, "kmeans", kmeans_iters=-1)
  raises_short(ValueError, r"max_iters must be a whole number >= 0; received -1",
               clustering.kmeans, key, toy.X_ROC.astype(np.float32), 3, max_iters=-1)


def test_cross_validate_marks_a_diverged_entry_nan_and_never_chooses_it():
  """An entry whose fit diverges scores NaN (was: the whole search aborted on the first)."""
  # The 250-point folds of test_cross_validation_picks_the_best_grid_entry: one compiled loop.
  x, y = _linear_data(500)
  cv = roc_svm.cross_validate(x, y, [{"lam": 1e30}, {"lam": 1e-2}], num_folds=2)
  assert cv.best == {"lam": 1e-2}
  assert np.isnan(cv.scores[0, 0]) and np.isnan(cv.fold_scores[0]).all()
  assert np.isfinite(cv.scores[1, 0])
  with pytest.raises(ValueError, match="no grid entry gave a finite validation AUC"):
    roc_svm.cross_validate(x, y, [{"lam": 1e30}], num_folds=2)


def test_decision_function_checks_chunk_size(radial_gaussian_fit):
  x, _, exact = radial_gaussian_fit      # a Gaussian-kernel model, trained once per module
  model, points = exact.model, x[:60]
  raises_short(ValueError, r"chunk_size must be a whole number >= 1; received 0",
               roc_svm.decision_function, model, points, chunk_size=0)
  raises_short(TypeError, r"chunk_size must be a whole number >= 1; received 2\.5",
               roc_svm.decision_function, model, points, chunk_size=2.5)
  np.testing.assert_allclose(roc_svm.decision_function(model, points, chunk_size=7),
                             roc_svm.decision_function(model, points), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("kernel", [{}, dict(kernel="nystrom", num_landmarks=20)])
def test_fit_under_strict_dtype_promotion_or_debug_nans_equals_the_default(kernel):
  """Sweep L: a user's jax_numpy_dtype_promotion="strict" broke the objective (an int32 pair
  count divided a float32 sum); jax_debug_nans stopped every fit at the objective trace's NaN
  padding of the steps not taken (now inf)."""
  want = roc_svm.fit(toy.X_ROC, toy.Y_ROC, **kernel)
  with jax.numpy_dtype_promotion("strict"):
    got = roc_svm.fit(toy.X_ROC, toy.Y_ROC, **kernel)
  with jax.debug_nans(True):
    hunted = roc_svm.fit(toy.X_ROC, toy.Y_ROC, **kernel)
  for other in (got, hunted):
    np.testing.assert_allclose(roc_svm.model_auc(other.model, toy.X_ROC, toy.Y_ROC),
                               roc_svm.model_auc(want.model, toy.X_ROC, toy.Y_ROC), atol=1e-6)
