"""The direct solver against its references: jax.grad, the exact kernel minimizers, one pass.

Multi-device tests run in a subprocess on 4 CPU devices (``test_on_four_cpu_devices``, as
tests/test_sharding.py does); the 2-process test launches ``tests/_direct_worker.py`` over gloo.
"""

import contextlib
import os
import socket
import subprocess
import sys
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as sk_metrics

import qsg_jax
from qsg_jax import baselines
from qsg_jax import direct
from qsg_jax import distributed
from qsg_jax import engine
from qsg_jax import errors
from qsg_jax import folds as folds_lib
from qsg_jax.engine import risk

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FOUR_DEVICES = "--xla_force_host_platform_device_count=4"
needs_four = pytest.mark.skipif(jax.device_count() < 4,
                                reason="needs 4 devices; run via test_on_four_cpu_devices")


def _data(k=3, n_l=30, n_u=40, d=3, seed=0):
  rng = np.random.default_rng(seed)
  y = np.concatenate([np.arange(k), rng.integers(0, k, n_l - k)]).astype(np.int32)
  x_l = (0.6 * rng.random((n_l, d)) + 0.2 * y[:, None]).astype(np.float32)
  x_u = rng.random((n_u, d)).astype(np.float32)
  return x_l, y, x_u


def _objective(w, v, psi_l, psi_u, y, k, lam, gamma, split_lam=None):
  """The QS3ORAO objective written with explicit pair sums (``engine.risk``), at f = psi w."""
  pos_w, neg_w = risk.subproblem_weights(jnp.asarray(y), jnp.bincount(jnp.asarray(y), length=k))
  f_l, f_u = psi_l @ w, psi_u @ w
  if v is None:
    return 0.5 * lam * w @ w + risk.minibatch_risk("squared", f_l, f_u, pos_w, neg_w, gamma)
  g_l, g_u = v @ psi_l.T, v @ psi_u.T
  penalty = 0.5 * split_lam * jnp.mean(jnp.sum(v * v, axis=1))
  return (0.5 * lam * w @ w + penalty
          + risk.split_minibatch_risk("squared", f_l, f_u, g_l, g_u, pos_w, neg_w, gamma))


# jax.grad of ``_objective``, compiled once per shape (k static): eager, each test ran ~100
# small op compilations.
_objective_grad = jax.jit(jax.grad(_objective), static_argnums=5)
_objective_grads = jax.jit(jax.grad(_objective, argnums=(0, 1)), static_argnums=5)


def _shifted_features(fit, *point_sets):
  """float64 copies of the float32 features psi(x) - shift the solver's statistics were made of
  (the objective depends on differences of scores only, so the shift does not change it)."""
  shift = fit.moments.shift.astype(np.float32)
  return [np.asarray(direct.moments.point_features(fit.feature_map, x) - shift[None, :],
                     np.float64) for x in point_sets]


@pytest.mark.filterwarnings("ignore::qsg_jax.direct.ApproximationWarning")   # 16 landmarks
@pytest.mark.parametrize("feature_map,gamma,lam", [("rff", 0.4, 0.02), ("rff", 0.4, 0.3),
                                                   ("nystrom", [0.0, 0.7], 0.02)])
def test_solution_has_zero_gradient(feature_map, gamma, lam):
  """Nystrom features are C P: float32 rounding of C, amplified by the projection P
  and depending on the chunk's shape, is kept small by a kernel with a well-conditioned K_ZZ."""
  x_l, y, x_u = _data()
  fit = direct.fit(x_l, y, x_u, key=1, sigma=4.0 if feature_map == "nystrom" else 0.7, lam=lam,
                   gamma=gamma, feature_map=feature_map, num_features=16,
                   **({"num_frequencies": 8} if feature_map == "rff" else {}))
  psi_l, psi_u = _shifted_features(fit, x_l, x_u)
  with jax.enable_x64(True):    # the objective in float64: only float32 sums' rounding is left
    gamma = jnp.broadcast_to(jnp.asarray(gamma, jnp.float64), (2,))
    grad = _objective_grad
    w = jnp.asarray(fit.weights)
    at_zero = grad(jnp.zeros_like(w), None, psi_l, psi_u, y, 3, lam, gamma)
    at_solution = grad(w, None, psi_l, psi_u, y, 3, lam, gamma)
    # Rounding of the float32 sums (~1e-7 relative) is amplified by |w| / |r| ~ 1 / lam.
    assert jnp.linalg.norm(at_solution) < 3e-7 / lam * jnp.linalg.norm(at_zero)


def test_corrections_have_zero_gradient():
  x_l, y, x_u = _data()
  fit = direct.fit(x_l, y, x_u, key=1, sigma=0.7, lam=0.02, gamma=[0.2, 0.9], split_lam=0.1,
                   feature_map="rff", num_features=32, num_frequencies=8)
  psi_l, psi_u = _shifted_features(fit, x_l, x_u)
  with jax.enable_x64(True):
    args = (psi_l, psi_u, y, 3, 0.02, jnp.asarray([0.2, 0.9]), 0.1)
    grad = _objective_grads
    w, v = jnp.asarray(fit.weights), jnp.asarray(fit.split_weights)
    scale = sum(jnp.linalg.norm(g) for g in grad(0 * w, 0 * v, *args))
    assert sum(jnp.linalg.norm(g) for g in grad(w, v, *args)) < 3e-7 / 0.02 * scale
  assert np.abs(fit.split_weights).max() > 1e-3       # the corrections are not trivially 0


@pytest.mark.parametrize("gamma", [0.3, [0.1, 0.8]])
def test_nystrom_on_every_point_is_the_exact_minimizer(gamma):
  x_l, y, x_u = _data()
  x_test = np.random.default_rng(5).random((50, 3)).astype(np.float32)
  every = np.concatenate([x_l, x_u])
  fit = direct.fit(x_l, y, x_u, sigma=2.0, lam=0.05, gamma=gamma, landmarks=every)
  exact = baselines.fit_exact_qsg(x_l, y, x_u, sigma=2.0, lam=0.05, gamma=gamma)
  expected = baselines.decision_function(exact, x_test)
  np.testing.assert_allclose(direct.decision_function(fit.model, x_test), expected,
                             atol=1e-4 * np.abs(expected).max())
  fit = direct.fit(x_l, y, x_u, sigma=2.0, lam=0.05, gamma=gamma, landmarks=every, split_lam=0.3)
  exact = baselines.fit_exact_split(x_l, y, x_u, sigma=2.0, lam=0.05, gamma=gamma, split_lam=0.3)
  expected = baselines.decision_function(exact.per_split, x_test)
  np.testing.assert_allclose(direct.split_scores(fit.model, x_test), expected,
                             atol=1e-4 * np.abs(expected).max())


def test_fourier_features_approach_the_exact_minimizer():
  x_l, y, x_u = _data(k=2, n_l=40, n_u=60)
  # As many test points as labeled ones: scoring them reuses the fit's compiled f_labeled.
  x_test = np.random.default_rng(5).random((40, 3)).astype(np.float32)
  exact = baselines.decision_function(
      baselines.fit_exact_qsg(x_l, y, x_u, sigma=1.0, lam=0.05, gamma=0.5), x_test)
  errors = []
  for p in (64, 256, 1024):
    fit = direct.fit(x_l, y, x_u, key=0, sigma=1.0, lam=0.05, gamma=0.5, feature_map="rff",
                     num_features=p)
    errors.append(np.sqrt(np.mean((direct.decision_function(fit.model, x_test) - exact) ** 2)))
  scale = np.sqrt(np.mean(exact ** 2))
  assert errors[2] < errors[1] < errors[0]
  assert errors[2] < 0.05 * scale, (errors, scale)


def test_fourier_solution_is_an_engine_model():
  x_l, y, x_u = _data()
  fit = direct.fit(x_l, y, x_u, key=4, sigma=0.5, feature_map="rff", num_features=128,
                   num_frequencies=16)
  assert isinstance(fit.model, engine.Model) and fit.model.coef.shape == (4, 32)
  feature_key, _ = jax.random.split(jax.random.key(4))     # as engine.init derives it
  np.testing.assert_array_equal(jax.random.key_data(fit.model.feature_key),
                                jax.random.key_data(feature_key))
  scores = engine.model_scores(fit.model, jnp.asarray(x_l), block_group=4)
  np.testing.assert_allclose(scores, fit.f_labeled, atol=2e-6)


def _moments_reference(feature_map, x, shift):
  psi = direct.moments.point_features(feature_map, x).astype(np.float64) - shift
  return psi.mean(axis=0), psi.T @ psi / psi.shape[0]


@pytest.mark.parametrize("kind,tol,p", [("rff", 1e-7, 32), ("nystrom", 1e-6, 32),
                                        ("rff", 1e-7, 208)])
def test_moments_of_every_source_agree(tmp_path, kind, tol, p):
  """One pass over an array, a memory map or uneven chunks gives the float64 moments of the
  float32 features (Nystrom features k(x, Z) P: the float32 product's rounding depends on the
  chunk's shape and P amplifies it, hence the looser tolerance). p = 208: the second moment
  from three half blocks (``moments.SYMMETRIC_MIN``)."""
  assert (p >= direct.moments.SYMMETRIC_MIN) == (p == 208)
  x_l, y, _ = _data()
  x_u = np.random.default_rng(1).random((101, 3)).astype(np.float32)
  psi = direct.fitting.make_feature_map(kind, jax.random.key(0), 4.0, p, 3, points=x_u,
                                        num_frequencies=8)
  shift = direct.moments.feature_shift(psi, x_l)
  mean, second = _moments_reference(psi, x_u, shift)
  np.save(tmp_path / "x_u.npy", x_u)
  sources = {"array": x_u, "mmap": np.load(tmp_path / "x_u.npy", mmap_mode="r"),
             "uneven chunks": (x_u[a:b] for a, b in ((0, 7), (7, 7), (7, 60), (60, 101)))}
  for name, source in sources.items():
    stats = direct.moments.group_moments(psi, source, shift, chunk_rows=16)
    assert stats.counts.tolist() == [101.0], name
    np.testing.assert_allclose(stats.means[0], mean, atol=tol, err_msg=name)
    np.testing.assert_allclose(stats.second[0], second, atol=tol * np.abs(second).max(),
                               err_msg=name)
  by_class = direct.moments.labeled_moments(psi, x_l, y, 3, shift)
  for c in range(3):
    m, s = _moments_reference(psi, x_l[y == c], shift)
    np.testing.assert_allclose(by_class.means[c], m, atol=tol)
    np.testing.assert_allclose(by_class.second[c], s, atol=tol * np.abs(s).max())


def test_labeled_moments_above_a_chunk_and_mean_square_norm():
  """Above chunk_rows the classes are summed one by one (G = 1): same moments; the mean
  ||psi||^2 from the moments equals the features' (a Nystrom fit's kernel residual)."""
  x_l, y, _ = _data(n_l=70)
  psi = direct.fitting.make_feature_map("nystrom", jax.random.key(0), 4.0, 16, 3, points=x_l)
  shift = direct.moments.feature_shift(psi, x_l)
  by_class = direct.moments.labeled_moments(psi, x_l, y, 4, shift, chunk_rows=16)  # 4: empty
  assert by_class.counts.tolist() == np.bincount(y, minlength=4).tolist()
  for c in range(3):
    m, s = _moments_reference(psi, x_l[y == c], shift)
    np.testing.assert_allclose(by_class.means[c], m, atol=1e-6)
    np.testing.assert_allclose(by_class.second[c], s, atol=1e-6 * np.abs(s).max())
  features = direct.moments.point_features(psi, x_l).astype(np.float64)
  square = np.sum(features * features, axis=1)
  assert direct.moments.mean_square_norm(by_class) == pytest.approx(square.mean(), abs=1e-6)
  assert direct.moments.mean_square_norm(by_class, [1]) == pytest.approx(square[y == 1].mean(),
                                                                         abs=1e-6)


def test_dropped_nystrom_directions_are_zero_features():
  x_u = np.random.default_rng(1).random((101, 3)).astype(np.float32)
  nystrom = direct.fitting.make_feature_map("nystrom", jax.random.key(0), 0.05, 32, 3,
                                            points=x_u)
  dropped = np.all(np.asarray(nystrom.projection) == 0, axis=0)
  assert dropped.any() and not dropped.all()      # a smooth kernel: K_ZZ is nearly singular
  psi = direct.moments.point_features(nystrom, x_u)
  assert np.all(psi[:, dropped] == 0)
  x_l, y, _ = _data(n_l=40)
  fit = direct.fit(x_l, y, x_u, sigma=0.05, lam=0.0, num_features=32)   # lam = 0 still solves
  assert np.all(fit.weights[dropped] == 0) and np.isfinite(fit.weights).all()


def test_the_pass_skips_the_zero_columns_of_a_low_rank_map_with_the_same_moments():
  """A smooth kernel's Nystrom map has fewer directions than landmarks: the pass, the labeled
  moments and the shift compute only the first r' = rank rounded up to RANK_STEP features
  (``moments.live_map``) and give the float64 moments of all p features (zeros past r'),
  on an array, in chunks and on a mesh; the fit equals the one from the full map's moments."""
  rng = np.random.default_rng(2)
  x_u = rng.random((300, 3)).astype(np.float32)
  x_l, y, _ = _data(n_l=40)
  nystrom = direct.fitting.make_feature_map("nystrom", jax.random.key(0), 0.05, 192, 3,
                                            points=x_u)
  live = direct.moments.live_map(nystrom)
  p, columns = 192, live.projection.shape[1]
  assert columns < p and columns % direct.moments.RANK_STEP == 0
  np.testing.assert_array_equal(np.asarray(nystrom.projection)[:, columns:], 0)
  # ... and only the landmarks with a nonzero row of P there (as many as features, here).
  projection = np.asarray(nystrom.projection)[:, :columns]
  used = np.any(projection != 0, axis=1)
  assert live.landmarks.shape == (columns, 3) and used.sum() <= columns
  kept = [np.flatnonzero(np.all(np.asarray(nystrom.landmarks) == z, axis=1))[0]
          for z in np.asarray(live.landmarks)]
  np.testing.assert_array_equal(np.asarray(live.projection), projection[kept])
  assert set(np.flatnonzero(used)) <= set(kept)
  # Features of the live map and of the full one are two float32 roundings of k(x, Z) P, whose
  # entries here reach |P| ~ 200 (a nearly singular K_ZZ): features and means agree to ~1e-8 |P|,
  # second moments to twice that times |psi|.
  tol = 1e-8 * np.abs(np.asarray(nystrom.projection)).max()
  full = direct.moments.point_features(nystrom, x_u).astype(np.float64)   # every column
  np.testing.assert_allclose(direct.moments.point_features(live, x_u), full[:, :columns],
                             atol=tol)
  shift = direct.moments.feature_shift(nystrom, x_l)
  np.testing.assert_allclose(shift, direct.moments.point_features(nystrom, x_l).mean(axis=0),
                             atol=tol)
  mean, second = _moments_reference(nystrom, x_u, shift)
  mesh = distributed.global_mesh()
  sources = {"array": (x_u, {}), "chunks": ((x_u[a:a + 70] for a in range(0, 300, 70)), {}),
             "mesh": (x_u, dict(mesh=mesh))}
  for name, (source, options) in sources.items():
    stats = direct.moments.group_moments(nystrom, source, shift, chunk_rows=64, **options)
    assert stats.second.shape == (1, p, p) and stats.means.shape == (1, p), name
    np.testing.assert_allclose(stats.means[0], mean, atol=tol, err_msg=name)
    np.testing.assert_allclose(stats.second[0], second, atol=2 * tol * np.sqrt(second.max()),
                               err_msg=name)
  sharded = direct.fitting.unlabeled_moments(
      nystrom, distributed.load_unlabeled(x_u, mesh), shift, chunk_rows=64, mesh=mesh)
  np.testing.assert_allclose(sharded.second[0], second, atol=2 * tol * np.sqrt(second.max()))
  by_class = direct.moments.labeled_moments(nystrom, x_l, y, 3, shift)
  for c in range(3):
    m, sec = _moments_reference(nystrom, x_l[y == c], shift)
    np.testing.assert_allclose(by_class.means[c], m, atol=tol)
    np.testing.assert_allclose(by_class.second[c], sec, atol=2 * tol * np.sqrt(sec.max()))
  fit = direct.fit(x_l, y, x_u, sigma=0.05, lam=1e-3, gamma=0.5, num_features=192,
                   landmarks=np.asarray(nystrom.landmarks))
  reference = direct.moments.concatenate(
      direct.moments.from_sums(*direct.moments.class_sums(
          direct.moments.point_features(nystrom, x_l).astype(np.float64) - shift, y, 3),
          shift.astype(np.float64)),
      direct.moments.Moments(np.array([300.0]), mean[None], second[None],
                             shift.astype(np.float64)))
  weights, _ = direct.system.solve(reference, 1e-3, 0.5, None)
  # The same ranking function: its weakly determined directions (tiny features) may differ.
  np.testing.assert_allclose(full @ fit.weights, full @ weights,
                             atol=1e-4 * np.abs(full @ weights).max())


def test_a_new_size_does_not_recompile():
  x_l, y, x_u = _data()
  psi = direct.fitting.make_feature_map("rff", jax.random.key(0), 0.5, 32, 3, num_frequencies=8)
  shift = direct.moments.feature_shift(psi, x_l)
  direct.moments.group_moments(psi, x_u, shift, chunk_rows=16)
  direct.moments.labeled_moments(psi, x_l[:20], y[:20], 3, shift)   # bucket of 32 rows
  features = direct.moments._features   # pylint: disable=protected-access
  before = direct.moments.add_chunk._cache_size(), features._cache_size()
  direct.moments.group_moments(psi, np.concatenate([x_u, x_u]), shift, chunk_rows=16)
  direct.moments.labeled_moments(psi, x_l[:29], y[:29], 3, shift)
  assert (direct.moments.add_chunk._cache_size(), features._cache_size()) == before


def test_compensated_sums_keep_float64_accuracy():
  """Many chunks of a constant-plus-noise feature: float32 running sums alone drift (1,000
  chunks: plain float32 sums of these features are off by ~1e-6 relative, 8x the tolerance)."""
  x = np.random.default_rng(0).random((8000, 2)).astype(np.float32)
  psi = direct.fitting.make_feature_map("rff", jax.random.key(0), 0.01, 8, 2, num_frequencies=4)
  stats = direct.moments.group_moments(psi, x, np.zeros(8, np.float32), chunk_rows=8)
  mean, second = _moments_reference(psi, x, 0.0)   # float64 sums of the same float32 features
  np.testing.assert_allclose(stats.means[0], mean, rtol=1e-7)
  np.testing.assert_allclose(stats.second[0], second, rtol=1e-7)


def test_cross_validation_equals_a_loop_of_fits():
  x_l, y, x_u = _data(k=3, n_l=36, n_u=50)
  grid = {"lam": [0.0, 0.05, 0.5], "sigma": [0.5, 2.0], "gamma": [0.0, 0.6, 1.0]}
  for kind in ("rff", "nystrom"):
    kwargs = dict(key=2, feature_map=kind, num_features=32,
                  **({"num_frequencies": 8} if kind == "rff" else {}))
    result = direct.cross_validate(x_l, y, x_u, grid=grid, num_folds=3, seed=1, num_repeats=2,
                                   **kwargs)
    assert result.fold_scores.shape == (3, 2, 3, 6, 2)     # repeat 1: the folds of seed 2
    second = direct.cross_validate(x_l, y, x_u, grid=grid, num_folds=3, seed=2, **kwargs)
    np.testing.assert_array_equal(result.fold_scores[:, :, :, 3:], second.fold_scores)
    folds = folds_lib.stratified_folds(y, 3, 1)
    train, _ = folds_lib.fold_training_sets(folds, y)
    for f in range(3):
      valid = folds == f
      for (li, lam), (si, sigma), (gi, gamma) in [((1, 0.05), (0, 0.5), (1, 0.6)),
                                                  ((2, 0.5), (1, 2.0), (0, 0.0))]:
        fit = direct.fit(x_l[train[f]], y[train[f]], x_u, sigma=sigma, lam=lam, gamma=gamma,
                         landmarks=result.grid["landmarks"], **kwargs)
        scores = direct.decision_function(fit.model, x_l[valid])
        expected = [sk_metrics.roc_auc_score(y[valid] > j, scores) for j in range(2)]
        np.testing.assert_allclose(result.fold_scores[li, si, gi, f], expected, atol=1e-6)
    target = folds_lib.nanmean(result.scores)
    assert result.best_score == pytest.approx(np.nanmax(target))


def test_the_cross_validations_shared_solves_are_the_checked_solve_of_each_lam():
  """One tridiagonalization per (fold, gamma) against ``solve_system`` per lam: the same
  solutions to float64 rounding, NaN exactly where it refuses (singular, NaN), its own verdict
  near the refusal line (rcond 5e-8: accepted by the 1-norm rule, so solved by it)."""
  rng = np.random.default_rng(0)
  a, u = rng.random((40, 30)), rng.random((40, 400))
  spread = a @ a.T / 30 - 0.3 * np.outer(a.mean(1), a.mean(1))
  cases = [spread + 0.5 * u @ u.T / 400, spread, np.diag([1.0, 5e-8]), np.array([[2.0]]),
           np.full((3, 3), np.nan), np.diag([np.inf, 1.0, 1.0])]
  lams = np.array([0.0, 1e-12, 2.0**-15, 1e-3, 8.0])
  for matrix in cases:
    r = rng.normal(size=matrix.shape[0])
    got = direct.selection._solutions(matrix, r, lams)   # pylint: disable=protected-access
    for lam, row in zip(lams, got):
      try:
        want = direct.system.solve_system(matrix, r, lam)
      except direct.IllPosedSystemError:
        assert np.isnan(row).all(), (matrix.shape, lam)
        continue
      np.testing.assert_allclose(row, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
  assert np.isfinite(direct.selection._solutions(cases[2], np.ones(2), np.zeros(1))).all()


def test_cross_validation_never_chooses_an_ill_posed_point():
  x_l, y, x_u = _data(k=2, n_l=20, n_u=10)
  grid = {"lam": [0.0, 0.1], "sigma": [1.0], "gamma": [0.5]}
  result = direct.cross_validate(x_l, y, x_u, grid=grid, num_folds=2, feature_map="rff",
                                 num_features=256)
  assert np.isnan(result.fold_scores[0]).all() and np.isfinite(result.fold_scores[1]).all()
  assert result.best["lam"] == 0.1


def test_split_lam_inf_is_the_shared_fit():
  x_l, y, x_u = _data()
  shared = direct.fit(x_l, y, x_u, feature_map="rff", num_features=32, num_frequencies=8)
  frozen = direct.fit(x_l, y, x_u, feature_map="rff", num_features=32, num_frequencies=8,
                      split_lam=float("inf"))
  stiff = direct.fit(x_l, y, x_u, feature_map="rff", num_features=32, num_frequencies=8,
                     split_lam=1e6)
  np.testing.assert_array_equal(frozen.weights, shared.weights)
  assert frozen.split_weights is None
  np.testing.assert_allclose(stiff.weights, shared.weights, atol=1e-4 * np.abs(shared.weights).max())


def test_x64_on_and_off():
  x_l, y, x_u = _data()
  every = np.concatenate([x_l, x_u])
  off = direct.fit(x_l, y, x_u, sigma=2.0, lam=0.05, landmarks=every)
  with jax.enable_x64(True):
    on = direct.fit(x_l, y, x_u, sigma=2.0, lam=0.05, landmarks=every)
    assert on.model.coef.dtype == jnp.float32
    rff = direct.fit(x_l, y, x_u, feature_map="rff", num_features=32, num_frequencies=8)
    np.testing.assert_allclose(direct.decision_function(rff.model, x_l), rff.f_labeled,
                               atol=1e-5)
  np.testing.assert_allclose(on.weights, off.weights, rtol=1e-5, atol=1e-6)


def test_ill_posed_and_bad_inputs_raise():
  x_l, y, x_u = _data(n_u=10)
  with pytest.raises(direct.IllPosedSystemError, match="lam=0.*Increase lam"):
    direct.fit(x_l, y, x_u, lam=0.0, feature_map="rff", num_features=256)
  # lam = 0 with a constant nearly in the span (f + c costs what f costs): a reciprocal
  # condition below float32's rounding of the statistics; f's offset would be rounding (~9).
  x60 = np.random.default_rng(0).random((60, 3)).astype(np.float32)
  y60 = (x60.sum(axis=1) > 1.5).astype(np.int32)
  with pytest.raises(direct.IllPosedSystemError, match=r"reciprocal condition .* < 1\.1e-09"):
    direct.fit(x60, y60, None, lam=0.0, gamma=1.0, sigma=1.0)
  assert np.isfinite(direct.fit(x60, y60, None, lam=1e-4, gamma=1.0, sigma=1.0).weights).all()
  with pytest.raises(ValueError, match="feature_map must be one of"):
    direct.fit(x_l, y, x_u, feature_map="fourier")
  with pytest.raises(ValueError, match="must be a multiple of 2 \\* num_frequencies = 64"):
    direct.fit(x_l, y, x_u, feature_map="rff", num_features=100)
  with pytest.raises(ValueError, match="no unlabeled data but gamma"):
    direct.fit(x_l, y, None, gamma=0.5)
  small = direct.fit(x_l, y, None, gamma=1.0, num_features=64)   # 30 points: all landmarks
  np.testing.assert_array_equal(small.model.landmarks, x_l)
  with pytest.raises(ValueError, match=r"every chunk of x_unlabeled must be \[n_i, 3\]"):
    direct.fit(x_l, y, iter([x_u, x_u[:, :2]]), num_features=8)
  bad = x_u.copy()
  bad[4, 1] = np.nan
  with pytest.raises(ValueError, match=r"NaN or infinite values \(first at row 14\)"):
    direct.fit(x_l, y, iter([x_u, bad]), num_features=8)
  with pytest.raises(ValueError, match="pass the mesh it lives on"):
    direct.fit(x_l, y, distributed.ShardedUnlabeled(jnp.asarray(x_u), 10), num_features=8)
  with pytest.raises(ValueError, match="grid for direct must be a dict with the keys"):
    direct.cross_validate(x_l, y, x_u, grid={"lam": [1.0]})
  with pytest.raises(ValueError, match=r"grid\['sigma'\] must be a non-empty"):
    direct.cross_validate(x_l, y, x_u, grid={"lam": [1.0], "sigma": [0.0], "gamma": [0.5]})
  with pytest.raises(ValueError, match="Rescale the features"), \
      pytest.warns(errors.UnscaledFeaturesWarning, match="x_(un)?labeled has values up to"):
    direct.fit(x_l * 1e6, y, x_u * 1e6, feature_map="rff", num_features=64, sigma=10.0)
  # Finite in float32, but the kernel's squared distances are not (they would be NaN features).
  with pytest.raises(ValueError, match=r"x_labeled have norms up to [0-9.]+e\+20: their squares"):
    direct.fit(x_l * 1e20, y, x_u)
  model = direct.fit(x_l, y, x_u, num_features=16).model
  with pytest.raises(ValueError, match=r"points of x have norms up to [0-9.]+e\+20: their squares"):
    direct.decision_function(model, np.r_[x_l[:2], [[1e20, 0.0, 0.0]]])


def _bad_unlabeled_sources(x_u, tmp_path):
  """(source, error type, message pattern) of bad unlabeled sources, one per class."""
  def memmap(name, array):
    np.save(tmp_path / name, array)
    return np.load(tmp_path / name, mmap_mode="r")
  nan, big, huge = x_u.copy(), x_u.astype(np.float64), x_u.copy()
  nan[7, 2], big[3, 0], huge[5, 1] = np.nan, 1e39, 1e20   # huge: finite, its square is not
  squares = r"x_unlabeled have norms up to [0-9.]+e\+20: their squares .* overflow float32"
  sparse = pytest.importorskip("scipy.sparse")
  pd = pytest.importorskip("pandas")
  frame = pd.DataFrame(x_u).astype("Float64")
  frame.iloc[4, 1] = pd.NA
  float32_range = r"beyond the float32 range \+-3.4e38"
  return [
      (memmap("nan.npy", nan), ValueError, r"NaN or infinite values \(first at row 7\)"),
      (memmap("big.npy", big), ValueError, float32_range + r" \(first at row 3"),
      (memmap("wide.npy", x_u[:, :2]), ValueError, r"must be \[n, 3\].*shape \(10, 2\)"),
      (memmap("text.npy", np.array([["a", "b", "c"]])), TypeError, "real numbers; received dtype"),
      (iter([x_u, big[:5]]), ValueError, float32_range + r" \(first at row 13"),
      (memmap("huge.npy", huge), ValueError, squares),
      (iter([x_u, huge]), ValueError, squares + r" \(the largest at row 15\)"),   # not 5
      (huge, ValueError, squares),
      (iter([x_u, x_u.astype(np.complex64)]), TypeError, "chunk of dtype complex64 at row 10"),
      (iter([x_u, np.array([["a", "b", "c"]])]), TypeError, "chunk of dtype <U1 at row 10"),
      (iter([x_u, [[0.1, 0.2], [0.3]]]), ValueError, "rectangular.*chunk at row 10"),
      (iter([nan[:0], nan]), ValueError, r"NaN or infinite values \(first at row 7\)"),
      (jnp.asarray(x_u[:, :2]), ValueError, r"must be \[n, 3\]"),
      (frame, ValueError, r"NaN or infinite values in 1 rows \(first at row 4\)"),
      (sparse.csr_matrix(x_u), TypeError, r"x_unlabeled.toarray\(\)"),
      (str(tmp_path / "nan.npy"), TypeError, "is a path.*mmap_mode"),
      (5, TypeError, "x_unlabeled must be an array"),
      ({"x": x_u}, TypeError, "received dict"),
  ]


def test_bad_unlabeled_sources_are_refused_at_the_users_row(tmp_path):
  """Every kind of source (memory map, iterator of chunks, JAX array, pandas, a path...) gets
  the checks of an in-memory array, at the row of the whole source, before any solve; float64
  beyond float32 (which the pass would turn into inf) and complex chunks included."""
  x_l, y, x_u = _data(n_u=10)
  for source, error, pattern in _bad_unlabeled_sources(x_u, tmp_path):
    with pytest.raises(error, match=pattern):
      direct.fit(x_l, y, source, num_features=8)
  for source, error, pattern in _bad_unlabeled_sources(x_u, tmp_path)[:4]:
    with pytest.raises(error, match=pattern):
      direct.cross_validate(x_l, y, source, grid={"lam": [0.1], "sigma": [0.5], "gamma": [0.5]},
                            num_folds=3, num_features=8)


def test_equivalent_unlabeled_sources_give_the_same_solution(tmp_path):
  """int / bool / float64 chunks, empty chunks, an int memory map and a DataFrame give the
  solution of the same points as one float32 array (same landmarks)."""
  pd = pytest.importorskip("pandas")
  x_l, y, _ = _data(n_u=10)
  x_u = (np.random.default_rng(5).random((20, 3)) > 0.5).astype(np.int64)
  args = dict(num_features=16, sigma=0.5, lam=0.05, landmarks=x_l[:16])
  reference = direct.fit(x_l, y, x_u.astype(np.float32), **args).weights
  np.save(tmp_path / "u.npy", x_u)
  sources = [iter([x_u[:0], x_u[:7], x_u[7:7], x_u[7:]]), iter([x_u[:9].astype(bool),
                                                             x_u[9:].astype(np.float64)]),
             np.load(tmp_path / "u.npy", mmap_mode="r"), pd.DataFrame(x_u), x_u.tolist()]
  for source in sources:
    np.testing.assert_allclose(direct.fit(x_l, y, source, **args).weights, reference,
                               rtol=1e-6, atol=1e-6)


def test_options_and_sharded_layouts_are_checked_up_front():
  """cross_validate checks the map options fit checks; a ShardedUnlabeled is checked against its
  mesh (axis, width, count, layout); split_lam and mesh of the wrong type are short errors."""
  x_l, y, x_u = _data(n_u=10)
  grid = {"lam": [0.1], "sigma": [0.5], "gamma": [0.5]}
  for options, pattern in [(dict(feature_map="fourier"), "feature_map must be one of"),
                           (dict(feature_map="rff", num_features=0), "num_features must be"),
                           (dict(feature_map="rff", num_frequencies=0), "num_frequencies must"),
                           (dict(chunk_rows=0), "chunk_rows must be"),
                           (dict(landmarks=np.full((4, 3), np.nan)), "landmarks contains 12 NaN"),
                           (dict(landmarks=x_u[0]), r"landmarks must have shape \[n, d\]")]:
    with pytest.raises(ValueError, match=pattern):
      direct.cross_validate(x_l, y, x_u, grid=grid, num_folds=3, **options)
  with pytest.raises(TypeError, match="split_lam must be > 0"):
    direct.fit(x_l, y, x_u, split_lam="x", num_features=8)
  mesh = distributed.global_mesh()
  with pytest.raises(TypeError, match="mesh must be a jax.sharding.Mesh"):
    direct.fit(x_l, y, x_u, mesh="cpu", num_features=8)
  with pytest.raises(ValueError, match="mesh has no axis 'batch'"):
    direct.fit(x_l, y, x_u, mesh=mesh, axis_name="batch", num_features=8)
  rows = jnp.asarray(x_u)
  strata = -(-10 // mesh.devices.size) * mesh.devices.size   # 10 points padded per device
  for unlabeled, pattern in [(distributed.ShardedUnlabeled(rows[:, :2], 10),
                              rf"must be \[{strata}, 3\]"),
                             (distributed.ShardedUnlabeled(rows, 12), r"must be \[12, 3\]"),
                             (distributed.ShardedUnlabeled(rows, -3), "num_unlabeled must be"),
                             (distributed.ShardedUnlabeled(np.pad(x_u, [(0, strata - 10), (0, 0)]),
                                                           10), "not split over the mesh")]:
    with pytest.raises(ValueError, match=pattern):
      direct.fit(x_l, y, unlabeled, mesh=mesh, num_features=8)
  # The DSG path of qsg_jax.fit cannot read strata (was NumPy's "setting an array element").
  with pytest.raises(TypeError, match="x_unlabeled is a distributed.ShardedUnlabeled, which the "
                     "direct solver reads.*solver='dsg'"):
    qsg_jax.fit(x_l, y, distributed.load_unlabeled(x_u, mesh), mesh=mesh, num_steps=64)


def test_scoring_checks_width_and_phases_of_fourier_solutions():
  """decision_function / split_scores take the DirectFit (which knows d for either map); a
  Fourier model refuses points whose phases would be noise instead of scoring NaN."""
  x_l, y, x_u = _data(n_u=10)
  # The map and corrections of test_corrections_have_zero_gradient: its scoring programs.
  fit = direct.fit(x_l, y, x_u, feature_map="rff", num_features=32, num_frequencies=8,
                   split_lam=0.5)
  np.testing.assert_array_equal(direct.decision_function(fit, x_l),
                                direct.decision_function(fit.model, x_l))
  for score in (direct.decision_function, direct.split_scores):
    with pytest.raises(ValueError, match="x has 4 features but the model expects 3"):
      score(fit, np.zeros((2, 4)))
    with pytest.raises(ValueError, match="float32 phases lose their precision"):
      score(fit.model, np.full((2, 3), 1e7))
  with pytest.raises(TypeError, match="received FitResult|received int"):
    direct.decision_function(5, x_l)


def test_a_flat_kernel_gives_f_zero_with_a_warning_and_the_cv_goes_on():
  """A tiny sigma makes every feature constant: f = 0 (the minimizer: the
  objective does not depend on w there), a UserWarning, and the CV scores that grid point 0.5
  instead of failing (it used to raise an IndexError from the empty system)."""
  x_l, y, x_u = _data(n_u=10)
  with pytest.warns(UserWarning, match="every feature of the map is constant"):
    fit = direct.fit(x_l, y, x_u, sigma=1e-30, num_features=8, split_lam=1.0)
  assert not np.any(fit.weights) and not np.any(fit.split_weights)
  with pytest.raises(ValueError, match="x_labeled: every row is the same point"):
    direct.fit(np.ones_like(x_l), y, np.ones_like(x_u), num_features=8)   # no ranking to learn
  cv = direct.cross_validate(x_l, y, x_u, grid={"lam": [0.01], "sigma": [1e-30, 0.5],
                                                "gamma": [0.5]}, num_folds=3, num_features=8)
  np.testing.assert_array_equal(cv.scores[0, 0], 0.5)
  assert cv.best["sigma"] == 0.5


def test_moments_and_solve_check_their_arguments():
  """The public building blocks refuse what they would otherwise drop or misreport: group ids
  out of range (rows counted nowhere), fractions, a wrong length or shift; solve's lam, gamma."""
  x_l, y, x_u = _data(n_u=10)
  fit = direct.fit(x_l, y, x_u, num_features=8)
  psi, shift = fit.feature_map, fit.moments.shift.astype(np.float32)
  for kwargs, pattern in [(dict(groups=np.full(10, 3), num_groups=2), r"lie in 0..1.*3 at row 0"),
                          (dict(groups=np.full(10, 0.5), num_groups=2), "integers 0..1"),
                          (dict(groups=np.zeros(4, int)), r"shape \[10\]"),
                          (dict(num_groups=0), "num_groups must be"),
                          (dict(chunk_rows=0), "chunk_rows must be")]:
    with pytest.raises(ValueError, match=pattern):
      direct.moments.group_moments(psi, x_u, shift, **kwargs)
  with pytest.raises(ValueError, match=r"groups has 4 entries but x has more rows"):
    direct.moments.group_moments(psi, iter([x_u]), shift, groups=np.zeros(4, int))
  with pytest.raises(ValueError, match=r"shift must have shape \[8\]"):
    direct.moments.group_moments(psi, x_u, shift[:5])
  with pytest.raises(ValueError, match="at least one point"):
    direct.moments.feature_shift(psi, x_u[:0])
  for lam, gamma, pattern in [(-1.0, 0.5, "lam must be"), (np.nan, 0.5, "lam must be"),
                              (0.1, 2.0, r"gamma must lie in \[0, 1\]"),
                              (0.1, np.nan, r"gamma must lie in \[0, 1\]")]:
    with pytest.raises(ValueError, match=pattern):
      direct.solve(fit.moments, lam, gamma)
  np.testing.assert_array_equal(direct.solve(fit.moments, 1e-3, 0.5)[0], fit.weights)


def test_statistics_larger_than_memory_are_refused_before_any_allocation(monkeypatch):
  """p^2 moments of every group: a num_features the memory cannot hold is refused up front
  (fit and cross_validate), naming the size and the fix, before any feature is computed."""
  from qsg_jax import memory   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  x_l, y, x_u = _data(n_u=10)
  assert direct.fitting.statistics_bytes(512, 4, 30) < 2**25          # the default: 21 MiB
  monkeypatch.setattr(memory, "available_bytes", lambda device=None: 2**20)
  with pytest.raises(errors.InsufficientMemoryError, match=r"4 groups of 1024 x 1024 .*Lower "
                                                           "num_features"):
    direct.fit(x_l, y, x_u, feature_map="rff", num_features=1024)
  with pytest.raises(errors.InsufficientMemoryError, match="8 groups of 1024 x 1024"):
    direct.cross_validate(x_l, y, x_u, feature_map="rff", num_features=1024)
  direct.fit(x_l, y, x_u, num_features=10**6)   # Nystrom: p <= the 40 candidate points


def test_supervised_fit_without_unlabeled_data():
  x_l, y, _ = _data(k=2, n_l=40)
  fit = direct.fit(x_l, y, None, gamma=1.0, feature_map="rff", num_features=64)
  assert fit.moments.counts[-1] == 0
  assert sk_metrics.roc_auc_score(y, fit.f_labeled) > 0.8


def _mesh_data():
  x_l, y, _ = _data(k=3, n_l=30)
  return x_l, y, np.random.default_rng(3).random((203, 3)).astype(np.float32)


@needs_four
@pytest.mark.parametrize("kind", ["rff", "nystrom"])
def test_mesh_of_four_devices_equals_one_device(kind):
  x_l, y, x_u = _mesh_data()
  mesh = jax.make_mesh((4,), ("data",))
  args = dict(key=1, sigma=0.5, lam=0.05, gamma=0.5, feature_map=kind, num_features=32,
              chunk_rows=16, **({"num_frequencies": 8} if kind == "rff" else {}))
  one = direct.fit(x_l, y, x_u, **args)
  chunked = direct.fit(x_l, y, x_u, mesh=mesh, **args)
  laid_out = distributed.ShardedUnlabeled(
      jax.device_put(engine.shard_unlabeled(x_u, 4),
                     jax.sharding.NamedSharding(mesh, jax.P("data"))), x_u.shape[0])
  strata = direct.fit(x_l, y, laid_out, mesh=mesh, **args)
  expected = direct.decision_function(one.model, x_u)
  for other in (chunked, strata):
    np.testing.assert_allclose(other.moments.second, one.moments.second, atol=1e-7)
    np.testing.assert_allclose(direct.decision_function(other.model, x_u), expected,
                               atol=1e-5 * np.abs(expected).max())


@pytest.mark.slow   # the direct tests again on 4 devices (the 2-process test covers the mesh): `make test-slow`
def test_on_four_cpu_devices():
  if jax.device_count() >= 4:
    pytest.skip("already on 4 devices: the tests above ran directly")
  env = dict(os.environ, XLA_FLAGS=FOUR_DEVICES, JAX_PLATFORMS="cpu")
  proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                         "-W", "error", "-k", "four_devices", __file__], env=env,
                        capture_output=True, text=True, cwd=ROOT, check=False)
  assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
  assert "2 passed" in proc.stdout, proc.stdout[-2000:]


def _free_port():
  with contextlib.closing(socket.socket(socket.AF_INET, socket.SOCK_STREAM)) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


def test_two_processes_equal_one_process(tmp_path):
  """2 processes x 2 CPU devices (gloo on localhost) against this process, no mesh."""
  sys.path.insert(0, os.path.dirname(__file__))
  import _direct_worker   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  x_l, y, x_u = _mesh_data()
  np.savez(tmp_path / "labeled.npz", x=x_l, y=y)
  np.save(tmp_path / "x_u.npy", x_u)
  # XLA's backend optimizations off in the workers (as tests/test_multiprocess.py launches its
  # workers): a third less CPU, nearly all of it compilation. Their scores stay within a fifth
  # of the tolerance of this process's optimized ones (measured: 0.22 for Nystrom, 0.01 rff).
  env = dict(os.environ, JAX_PLATFORMS="cpu",
             XLA_FLAGS="--xla_force_host_platform_device_count=2 "
                 "--xla_backend_optimization_level=0")
  for name in (distributed.COORDINATOR_ENV, distributed.NUM_PROCESSES_ENV,
               distributed.PROCESS_ID_ENV):
    env.pop(name, None)
  port = _free_port()
  procs = [subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "_direct_worker.py"),
                             str(tmp_path), str(tmp_path), "2", str(i), str(port)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
           for i in range(2)]
  try:
    for p in procs:
      output, _ = p.communicate(timeout=240)
      assert p.returncode == 0, output[-4000:]
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
        p.communicate()
  for name, kwargs in _direct_worker.FITS.items():
    one = direct.fit(x_l, y, x_u, **_direct_worker.SETTING, **kwargs)
    expected = direct.decision_function(one.model, x_u)
    for i in range(2):
      worker = np.load(tmp_path / f"p{i}.npz")
      assert int(worker["device_count"]) == 4 and int(worker["process_index"]) == i
      assert str(worker["mismatch"]).startswith(
          "x_labeled differs between the processes (process 1 of 2 holds another x_labeled")
      np.testing.assert_allclose(worker[name], expected, atol=1e-5 * np.abs(expected).max(),
                                 err_msg=f"process {i}: {name}")
      if name == "rff":
        np.testing.assert_allclose(worker["rff_weights"], one.weights, rtol=1e-5,
                                   atol=1e-5 * np.abs(one.weights).max())
      else:   # and scored on the mesh of both processes
        np.testing.assert_allclose(worker["nystrom_mesh"], expected[:100],
                                   atol=1e-5 * np.abs(expected).max(), err_msg=f"process {i}")


@pytest.mark.slow   # benchmark smoke run: `make test-slow`
def test_bench_direct_smoke(tmp_path, shared_data_dir):
  out = tmp_path / "results.json"
  env = dict(os.environ, QSG_JAX_DATA=str(shared_data_dir))
  proc = subprocess.run(
      [sys.executable, "-m", "experiments.bench_direct", "--parts=features,fit,labeled,cv",
       "--feature_datasets=cod_rna", "--fit_datasets=cod_rna", "--splits=1", "--exact_splits=1",
       "--fit_exact_splits=0", "--num_unlabeled=300", "--eval_size=200", "--feature_counts=64",
       "--maps=rff,nystrom", "--labeled_counts=cod_rna:500", f"--output={out}"],
      cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
  assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
  import json   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  results = json.loads(out.read_text())
  default, rough = results["features"]
  assert default["setting"] == "default" and rough["setting"] == "rough"
  assert 0.5 < default["nystrom_64"] <= 1 and 0.5 < default["exact"] <= 1
  assert results["fit"][0]["dsg_over_direct_time"] > 0
  assert results["cv"][0]["best"]["lam"] in folds_lib.PAPER_POWERS


@pytest.mark.parametrize("sigma", [0.1, 30.0])     # a rank-64 map and a full-rank one
def test_the_benchmarks_pass_flops_count_what_xla_compiles(sigma):
  """The unlabeled part's rate (issue 26: the pass at >= 50 % of the device's matmul rate)
  divides ``pass_flops`` by time: it must count the chunk's products as XLA's cost analysis does
  (which adds a few percent of elementwise work)."""
  from experiments import bench_direct  # pylint: disable=import-outside-toplevel
  z = np.random.default_rng(0).uniform(size=(256, 5)).astype(np.float32)
  full = direct.feature_maps.nystrom_map(z, sigma)
  live = direct.moments.live_map(full)
  rows, r = 1024, direct.feature_maps.num_features(live)
  assert r == (64 if sigma == 0.1 else 256)
  compiled = direct.moments.add_chunk.lower(
      direct.moments.init_sums(1, r), live, jnp.zeros(r), jnp.zeros((rows, 5)),
      jnp.zeros(rows, jnp.int32)).compile()
  analysis = compiled.cost_analysis()
  flops = (analysis[0] if isinstance(analysis, list) else analysis)["flops"]
  assert 1.0 <= flops / bench_direct.pass_flops(full, rows) < 1.08


def test_bench_direct_refuses_bad_flags_and_an_unwritable_output_before_any_work(monkeypatch):
  """Nonsense flags are parse errors (they used to run, crash late or write nothing); the output
  folder is checked before the benchmarks (it was written after them: their results were lost).

  In this process (a subprocess each cost 5 s of start-up): absl's flag parsing, then the
  script's main. ``app.run`` prints a ``flags.Error`` of the parse and an ``app.UsageError`` of
  main as a usage message and exits 1, without a traceback; any other exception would be one."""
  from absl import app  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from absl import flags  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from absl.testing import flagsaver  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  from experiments import bench_direct  # pylint: disable=g-import-not-at-top,import-outside-toplevel
  monkeypatch.chdir(ROOT)                    # --output=tests, README.md: the repository's
  for part in ("features", "fit", "unlabeled", "labeled", "cv"):
    monkeypatch.setattr(bench_direct, f"part_{part}",
                        lambda part=part: pytest.fail(f"part {part} ran before the refusal"))
  for args, message in [
      (["--parts=fits"], r"--parts must be entries of"),
      (["--splits=0"], r"flag --splits=0: --splits must be an integer >= 1"),
      (["--labeled_counts=cod_rna"], r"--labeled_counts must be dataset:labels entries"),
      (["--parts=cv", "--output=/proc/no/such/folder/r.json"], r"cannot create its folder"),
      (["--parts=cv", "--output=tests"], r"--output='tests' is a directory; pass a file name"),
      (["--parts=cv", "--output=README.md"], r"--output='README.md' exists .* pass --overwrite")]:
    parsed = flags.FLAGS.is_parsed()
    with flagsaver.flagsaver():
      try:
        with pytest.raises((flags.Error, app.UsageError), match=message):
          flags.FLAGS(["bench_direct"] + args)                       # app.run's parse
          bench_direct._main_or_usage_error(["bench_direct"])  # pylint: disable=protected-access
      finally:
        if not parsed:
          flags.FLAGS.unparse_flags()


def test_qsg_jax_fit_runs_the_direct_solver():
  import qsg_jax   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  x_l, y, x_u = _data()
  args = dict(key=2, sigma=0.7, lam=0.02, gamma=[0.3, 0.6])
  result = qsg_jax.fit(x_l, y, x_u, solver="direct", **args)
  own = direct.fit(x_l, y, x_u, **args)
  assert result.metrics["solver"] == "direct" and result.state is None
  np.testing.assert_array_equal(direct.decision_function(result.model, x_u),
                                direct.decision_function(own.model, x_u))
  assert np.all(np.diff(np.asarray(result.thresholds)) >= 0)
  auto = qsg_jax.fit(x_l, y, x_u, solver="auto", **args)
  assert auto.metrics["solver"] == "direct"
  with pytest.raises(ValueError, match="solver='direct' minimizes the squared pairwise loss"):
    qsg_jax.fit(x_l, y, x_u, solver="direct", loss="hinge", **args)
  # "auto" with another loss runs DSG (a DSG training compilation): checked by default in
  # tests/test_fit.py::test_one_switch_picks_the_solver_and_says_which_ran.


def test_fourier_fit_result_scores_through_the_dsg_paths():
  import qsg_jax   # pylint: disable=g-import-not-at-top,import-outside-toplevel
  x_l, y, x_u = _data()
  result = direct.solver.fit_result(
      x_l, y, x_u, config=qsg_jax.FitConfig(sigma=0.7, lam=0.02), key=0)
  assert isinstance(result.model, direct.NystromModel)
  # The map of test_fourier_solution_is_an_engine_model (4 blocks of 16 frequencies): its
  # compilations serve both tests. block_group by keyword, as the fit passes it (a positional
  # static argument is another cache entry of jit).
  fourier = direct.fit(x_l, y, x_u, feature_map="rff", num_features=128, num_frequencies=16,
                       sigma=0.7, lam=0.02)
  config = engine.make_config(3, 4, num_frequencies=16)
  assert config.block_group == 4
  np.testing.assert_allclose(
      engine.model_scores(fourier.model, jnp.asarray(x_l), block_group=config.block_group),
      fourier.f_labeled, atol=2e-6)


def test_poor_nystrom_approximation_warns():
  x_l, y, x_u = _data(d=3)
  with pytest.warns(direct.ApproximationWarning, match=r"unexplained.*raise num_features"):
    fit = direct.fit(x_l, y, x_u, sigma=10.0, num_features=8)
  assert fit.kernel_residual > 0.05
  fit = direct.fit(x_l, y, x_u, sigma=0.5, num_features=32)
  assert 0 <= fit.kernel_residual < 1e-3
  assert np.isnan(direct.fit(x_l, y, x_u, feature_map="rff", num_features=32,
                             num_frequencies=8).kernel_residual)


def test_a_kernel_flat_to_the_nystrom_tolerance_is_reported():
  """Features spanning 1e-3 at sigma = 0.5: the map dropped the data's directions and ranked at
  chance without a word (DSG and the exact minimizer: 0.96-0.99); now an ApproximationWarning.
  The same data at the [0, 1] scale fits without it and ranks well."""
  rng = np.random.default_rng(0)
  x = rng.uniform(size=(600, 3))
  y = (x[:, 0] + 0.5 * x[:, 1] > 0.75).astype(np.int32)
  options = dict(sigma=0.5, lam=1e-3, gamma=0.5, num_features=128)
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning, match=r"0, 1, 2 span less than"):
    with pytest.warns(direct.ApproximationWarning, match="the kernel is nearly flat over the"):
      direct.fit(1e-3 * x[:200], y[:200], 1e-3 * x[200:], **options)
  with warnings.catch_warnings():
    warnings.simplefilter("error", direct.ApproximationWarning)
    fit = direct.fit(x[:200], y[:200], x[200:], **options)
  assert sk_metrics.roc_auc_score(y[200:], direct.decision_function(fit, x[200:])) > 0.95


def test_a_kernel_too_narrow_to_reach_new_rows_is_reported():
  """sigma = 5e5 on [0, 1] features (length_scale 1e-3): the fit memorized its points
  (training AUC 1) and every new row scored exactly 0, ranked at chance without a word; now an
  ApproximationWarning naming the kernel value between neighbours. sigma = 10 fits quietly."""
  rng = np.random.default_rng(0)
  x = rng.uniform(size=(400, 3))
  y = (x[:, 0] + 0.5 * x[:, 1] > 0.75).astype(np.int32)
  options = dict(lam=1e-3, gamma=1.0, num_features=128)
  with pytest.warns(direct.ApproximationWarning, match=r"too narrow.*lookup table"):
    fit = direct.fit(x[:100], y[:100], sigma=5e5, **options)
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning, match="beyond the kernel's reach"):
    new = np.asarray(direct.decision_function(fit, x[100:]))   # (those outside the box)
  assert np.mean(new == 0.0) > 0.9   # what the warning is about
  with warnings.catch_warnings():
    warnings.simplefilter("error", direct.ApproximationWarning)
    fit = direct.fit(x[:100], y[:100], sigma=10.0, **options)
  assert sk_metrics.roc_auc_score(y[100:], direct.decision_function(fit, x[100:])) > 0.9
  # DSG (Fourier features, no landmarks) measures its labeled points: the same warning (its
  # new rows ranked at 0.49 without a word).
  with pytest.warns(direct.ApproximationWarning, match=r"median training point's nearest other"):
    result = qsg_jax.fit(x[:100], y[:100], sigma=5e5, gamma=1.0, lam=1e-3, num_steps=32)
  with pytest.warns(qsg_jax.errors.UnscaledFeaturesWarning, match="beyond the kernel's reach"):
    new = qsg_jax.decision_function(result, x[100:])   # (those outside its training box)
  assert sk_metrics.roc_auc_score(y[100:], new) < 0.7
  with warnings.catch_warnings():
    warnings.simplefilter("error", direct.ApproximationWarning)
    quiet = qsg_jax.fit(x[:100], y[:100], sigma=10.0, gamma=1.0, lam=1e-3, num_steps=32)
  # DSG resolves far less than an exact expansion: from exp(-0.5) between labeled neighbours
  # (sigma = 50 here: the median labeled point's nearest other at squared distance 0.018) it
  # says so (here AUC 0.93 against 0.996 at sigma = 10; at chance on several real sets), copies
  # of the labeled rows included (they are no neighbours).
  twice = np.concatenate([x[:100], x[:100]]), np.concatenate([y[:100], y[:100]])
  for xl, yl in ((x[:100], y[:100]), twice):
    with pytest.warns(direct.ApproximationWarning, match=r"too narrow for DSG: .* kernel value "
                                                         r"0.4 \(sigma=50, length scale 0.1\), below exp\(-0.5\)"):
      narrow = qsg_jax.fit(xl, yl, sigma=50.0, gamma=1.0, lam=1e-3, num_steps=32)
  aucs = [sk_metrics.roc_auc_score(y[100:], qsg_jax.decision_function(r, x[100:]))
          for r in (quiet, narrow)]
  assert aucs[1] < aucs[0] - 0.03, aucs
  # The direct solver resolves more, but the same bound holds (13 real sets: fits at chance
  # from 0.79; here AUC 0.968 at sigma = 50 against 0.997 at sigma = 1; its landmark check,
  # exp(-20), stays silent): it says so too, and stays quiet at sigma = 10.
  with pytest.warns(direct.ApproximationWarning, match=r"too narrow for the data: .* kernel value "
                                                       r"0.4 \(sigma=50, length scale 0.1\), below "
                                                       r"exp\(-0.5\)"):
    direct.fit(x[:100], y[:100], sigma=50.0, **options)
