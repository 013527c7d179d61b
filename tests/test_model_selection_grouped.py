"""The grouped CV path (tasks of one sigma trained together) against references."""

import functools
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import qsg_jax
from qsg_jax import baselines
from qsg_jax import model_selection
from qsg_jax.engine import risk
from tests import _cv_data

_SMALL = _cv_data.SMALL
_ordinal = _cv_data.ordinal
# Batches of 3 tasks (every grid below has at least 3 per sigma): one grouped program per dtype.
_CV = dict(num_folds=3, seed=1, key=7, tasks_per_batch=3, **_SMALL)


@functools.partial(jax.jit, static_argnums=0)   # one compilation for every seed (one shape)
def _collapsed_and_pairs(k, y_train, train, f_l, f_u, gamma):
  """(``risk.score_grads``, the mean over splits of the pair sums) with the weights of the
  labeled slots ``train`` (the others weighted 0)."""
  p, n = risk.subproblem_weights(y_train, jnp.bincount(y_train, length=k))
  pos_w = jnp.zeros((k - 1, f_l.shape[0]), jnp.float32).at[:, train].set(p)
  neg_w = jnp.zeros((k - 1, f_l.shape[0]), jnp.float32).at[:, train].set(n)
  fast = risk.score_grads("squared", f_l, f_u, pos_w, neg_w, gamma)
  pairs = jax.vmap(functools.partial(risk.subproblem_score_grads, "squared"),
                   in_axes=(None, None, 0, 0, 0))
  return fast, [a.mean(0) for a in pairs(f_l, f_u, pos_w, neg_w, gamma)]


@pytest.mark.parametrize("seed", range(3))
def test_collapsed_squared_grads_equal_the_pairwise_sums(seed):
  """O(S + B) closed form = the pair sums (O(S^2 + S B)), held-out slots weighted 0."""
  rng = np.random.default_rng(seed)
  k, s, b = 4, 13, 7
  y = np.arange(s) % k
  train = np.zeros(s, bool)                             # 9 training slots of 13 (one shape for
  train[:k] = True                                      # every seed): each class keeps one,
  train[k + rng.permutation(s - k)[:5]] = True          # the others drawn
  f_l = rng.normal(size=s).astype(np.float32)
  f_u = rng.normal(size=b).astype(np.float32)
  gamma = rng.random(k - 1).astype(np.float32)
  fast, slow = _collapsed_and_pairs(k, y[train], np.nonzero(train)[0], f_l, f_u, gamma)
  np.testing.assert_allclose(fast[0], slow[0], atol=1e-5)
  np.testing.assert_allclose(fast[1], slow[1], atol=1e-6)
  assert np.all(np.asarray(fast[0])[~train] == 0)


def test_grouped_cv_equals_fit_on_each_fold():
  """Task (point, fold) is qsg_jax.fit on that fold's training set with the shared key."""
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3, 0.1], "sigma": [0.5, 2.0], "gamma": [0.0, 0.7], "step_size": [1.0, 1e4]}
  grouped = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, method="grouped", **_CV)
  folds = qsg_jax.folds.stratified_folds(y_l, 3, seed=1)
  train, valid = qsg_jax.folds.fold_training_sets(folds, y_l)
  for (i, lam), (s, sigma), f in itertools.product(enumerate(grid["lam"]),
                                                   enumerate(grid["sigma"]), (0, 2)):
    fitted = qsg_jax.fit(x_l[train[f]], y_l[train[f]], x_u, key=7, num_classes=3, lam=lam,
                         sigma=sigma, gamma=0.7, step_size=1.0, **_SMALL)
    scores = qsg_jax.decision_function(fitted, x_l)[valid[f]]
    expected = baselines.split_aucs(scores, y_l[valid[f]], 3)
    np.testing.assert_allclose(grouped.fold_scores[i, s, 1, 0, f], expected, atol=1e-6)
  # eta0 = 1e4 diverges (fit raises DivergenceError): NaN on every task, never chosen.
  assert np.isnan(grouped.fold_scores[..., 1, :, :]).all()
  assert grouped.best["step_size"] == 1.0
  # Rows are padded to size buckets (engine.bucket_data: 56 and 80 rows): one labeled and three
  # unlabeled points fewer train with the same program.
  compiled = qsg_jax.engine.grouped.group_aucs._cache_size()  # pylint: disable=protected-access
  model_selection.cross_validate(x_l[:-1], y_l[:-1], x_u[:-3], grid=dict(grid, lam=[1e-3]),
                                 method="grouped", **_CV)
  assert qsg_jax.engine.grouped.group_aucs._cache_size() == compiled  # pylint: disable=protected-access


def test_per_split_gamma_searches_each_coordinate():
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3], "sigma": [0.5], "gamma": [0.0, 0.5, 1.0], "step_size": [1.0]}
  shared = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, **_CV)
  split = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, per_split_gamma=True, **_CV)
  gamma = np.asarray(split.best["gamma"])
  assert gamma.shape == (2,) and set(gamma.tolist()) <= {0.0, 0.5, 1.0}
  assert split.best_score >= shared.best_score
  # The reported score is the CV score of that gamma vector (recomputed task by task).
  folds = qsg_jax.folds.stratified_folds(y_l, 3, seed=1)
  train, valid = qsg_jax.folds.fold_training_sets(folds, y_l)
  aucs = []
  for f in range(3):
    fitted = qsg_jax.fit(x_l[train[f]], y_l[train[f]], x_u, key=7, num_classes=3, lam=1e-3,
                         sigma=0.5, gamma=gamma, step_size=1.0, **_SMALL)
    scores = qsg_jax.decision_function(fitted, x_l)[valid[f]]
    aucs.append(baselines.split_aucs(scores, y_l[valid[f]], 3))
  assert split.best_score == pytest.approx(np.mean(aucs), abs=1e-6)
  # One gamma in the grid: nothing to change per split, still one value per split.
  one = model_selection.cross_validate(x_l, y_l, x_u, grid=dict(grid, gamma=[0.5]),
                                       per_split_gamma=True, **_CV)
  np.testing.assert_array_equal(one.best["gamma"], [0.5, 0.5])


def test_method_errors_name_the_fix():
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3], "sigma": [0.5], "gamma": [0.5], "step_size": [1.0]}
  with pytest.raises(ValueError, match="method must be 'auto', 'grouped' or 'per_task'"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=grid, method="fast", **_CV)
  with pytest.raises(ValueError, match="needs loss='squared'.*method='per_task'"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=grid, method="grouped", loss="hinge",
                                   **_CV)


@pytest.mark.slow   # benchmark / reproduction smoke run: `make test-slow`
def test_bench_cv_smoke():
  """experiments/bench_cv on an embedded dataset (continuous features: no tied scores), tiny T."""
  from experiments import bench_cv  # pylint: disable=import-outside-toplevel
  row = bench_cv.bench_dataset("breast_cancer", num_unlabeled=100, num_steps=32, old_points=1,
                               skip_full=True)
  assert row["old_points"] == 1 and row["old_full_est_s"] > row["old_s"] > 0
  assert row["max_score_diff"] < 1e-5


def test_grouped_cv_and_fit_under_x64_equal_the_float32_run():
  """jax_enable_x64 on, float64 inputs: the engine computes in float32 as without x64."""
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3, 1e-2], "sigma": [1.0], "gamma": [0.5]}   # "auto" step sizes
  narrow = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, method="grouped", **_CV)
  # The fit of test_grouped_cv_equals_fit_on_each_fold (fold 0): its float32 programs are
  # compiled already; only the x64 ones are new.
  train, _ = qsg_jax.folds.fold_training_sets(qsg_jax.folds.stratified_folds(y_l, 3, seed=1), y_l)
  kw = dict(key=7, num_classes=3, lam=1e-3, sigma=0.5, gamma=0.7, step_size=1.0, **_SMALL)
  fitted = qsg_jax.fit(x_l[train[0]], y_l[train[0]], x_u, **kw)
  with jax.enable_x64(True):
    x_l64, x_u64 = x_l.astype(np.float64), x_u.astype(np.float64)
    wide = model_selection.cross_validate(x_l64, y_l, x_u64, grid=grid, method="grouped", **_CV)
    scores = qsg_jax.decision_function(qsg_jax.fit(x_l64[train[0]], y_l[train[0]], x_u64, **kw),
                                       x_l64)
  np.testing.assert_allclose(wide.fold_scores, narrow.fold_scores, atol=1e-6)
  np.testing.assert_allclose(scores, qsg_jax.decision_function(fitted, x_l), rtol=1e-5,
                             atol=1e-6)
