"""The default step ("auto"): power-iteration curvature against a dense eigensolver, and fit."""

import doctest

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import qsg_jax
from qsg_jax.engine import auto_step
from qsg_jax.config import STEP_SIZE_MAX
from qsg_jax import baselines
from qsg_jax import model_selection
from qsg_jax.engine import risk
from tests import _cv_data

_SMALL = _cv_data.SMALL
_ordinal = _cv_data.ordinal
# The CV of _assert_auto_step_cv_equals_fits (3 folds, seed 1, key 7); batches of 3 tasks, the
# grouped program of test_model_selection_grouped.py (shared where a worker runs both).
_CV = dict(num_folds=3, seed=1, key=7, tasks_per_batch=3, **_SMALL)


def _fold_training_set(fold=0):
  """(x_l, y_l, x_u) of fold ``fold``'s training set in ``_assert_auto_step_cv_equals_fits`` (3
  folds, seed 1): 33 labeled points, the shapes of its fits (their compilations are shared)."""
  x_l, y_l, x_u = _ordinal()
  train, _ = qsg_jax.folds.fold_training_sets(qsg_jax.folds.stratified_folds(y_l, 3, seed=1), y_l)
  return x_l[train[fold]], y_l[train[fold]], x_u


@jax.jit   # one compilation for both cases (the same shapes), not one per eager operation
def _risk_hessian(y, gamma, f):
  """H = d^2 R / df^2 of the literal pairwise squared risk of the labeled points (labels y, the
  first y.size entries of f) and the unlabeled ones (the rest), by jax.hessian."""
  pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=3))
  n_l = y.shape[0]
  total = lambda f: risk.minibatch_risk("squared", f[:n_l], f[n_l:], pos_w, neg_w, gamma)
  return jax.hessian(total)(f)


@pytest.mark.parametrize("sigma,gamma", [(0.5, [0.0, 0.3]), (8.0, [1.0, 0.6])])
def test_curvature_is_the_largest_eigenvalue_of_kernel_times_hessian(sigma, gamma):
  # A fold's training set: the curvature's shapes are those of the fits below (one compilation).
  x_l, y_l, x_u = _fold_training_set()
  key = jax.random.key(3)
  rows = np.asarray(auto_step.unlabeled_rows(key, x_u.shape[0], 16))
  points = np.concatenate([x_l, x_u[rows]]).astype(np.float64)
  # Reference: H from jax.hessian of the literal pairwise risk, K dense, numpy eigenvalues.
  hessian = np.asarray(_risk_hessian(jnp.asarray(y_l, jnp.int32), jnp.asarray(gamma, jnp.float32),
                                     jnp.zeros(points.shape[0])), np.float64)
  sq = np.sum(points**2, axis=1)
  kernel = np.exp(-sigma * np.maximum(sq[:, None] + sq[None, :] - 2 * points @ points.T, 0))
  expected = np.max(np.linalg.eigvals(kernel @ hessian).real)
  assert 1 / (expected + 0.01) < STEP_SIZE_MAX   # the cap does not hide the curvature
  eta0 = auto_step.auto_step_size(x_l, y_l, x_u, 3, sigma, 0.01, gamma, key, 16)
  assert eta0 == pytest.approx(min(STEP_SIZE_MAX, 1 / (expected + 0.01)), rel=1e-4)


def test_fit_defaults_to_the_auto_step_and_numbers_stay_literal():
  x_l, y_l, x_u = _fold_training_set()
  fitted = qsg_jax.fit(x_l, y_l, x_u, key=2, sigma=8.0, lam=1e-3, gamma=0.5, **_SMALL)
  eta0 = auto_step.auto_step_size(x_l, y_l, x_u, 3, 8.0, 1e-3, 0.5, jax.random.key(2), 16)
  assert fitted.metrics["eta"][0] == pytest.approx(eta0, rel=1e-6)
  assert eta0 < 3.0
  # The former default eta0 = 3 diverges here; an explicit number is used as given.
  with pytest.raises(qsg_jax.DivergenceError, match="diverged"):
    qsg_jax.fit(x_l, y_l, x_u, key=2, sigma=8.0, lam=1e-3, gamma=0.5, step_size=3.0, **_SMALL)
  explicit = qsg_jax.fit(x_l, y_l, x_u, key=2, sigma=8.0, lam=1e-3, gamma=0.5, step_size=eta0,
                         **_SMALL)
  np.testing.assert_allclose(explicit.state.f_labeled, fitted.state.f_labeled, atol=1e-6)


def test_bad_step_size_strings_are_refused():
  x_l, y_l, x_u = _ordinal()
  with pytest.raises(TypeError, match="step_size must be a number .*, a schedule callable "
                     ".* or 'auto'; received 'fast'"):
    qsg_jax.fit(x_l, y_l, x_u, step_size="fast", **_SMALL)
  with pytest.raises(ValueError, match=r"grid\['step_size'\] must be a non-empty list of numbers "
                     r"in \(0, inf\) or 'auto'; received \['big'\]"):
    model_selection.cross_validate(x_l, y_l, x_u, grid={"lam": [1.0], "sigma": [1.0],
                                                        "gamma": [0.5], "step_size": ["big"]})


def _assert_auto_step_cv_equals_fits(result, x_l, y_l, x_u):
  """Fold f's scores of the CV (3 folds, seed 1, key 7) equal fit's on the fold's training set."""
  folds = qsg_jax.folds.stratified_folds(y_l, 3, seed=1)
  train, valid = qsg_jax.folds.fold_training_sets(folds, y_l)
  for f in range(3):
    fitted = qsg_jax.fit(x_l[train[f]], y_l[train[f]], x_u, key=7, num_classes=3, lam=1e-3,
                         sigma=8.0, gamma=0.5, **_SMALL)
    scores = qsg_jax.decision_function(fitted, x_l)[valid[f]]
    np.testing.assert_allclose(result.fold_scores[0, 0, 0, 0, f],
                               baselines.split_aucs(scores, y_l[valid[f]], 3), atol=1e-5)


def test_cv_auto_step_equals_fit_with_the_auto_step_on_each_fold():
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3], "sigma": [8.0], "gamma": [0.5], "step_size": ["auto", 3.0]}
  result = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, **_CV)
  assert result.best["step_size"] == "auto"
  _assert_auto_step_cv_equals_fits(result, x_l, y_l, x_u)
  # The memory check counts the capped kernel: an unlabeled batch far larger than the data
  # (100,000 rows drawn from the unlabeled set) was refused as a 100,000 x 100,000 kernel.
  # 8 steps: each scores 100,000 points (64 steps took most of this test's run time). The model's
  # scores on x_l are its cached f_labeled (equal to decision_function's: test_engine.py's
  # test_engine_equals_literal_algorithm), read without compiling a scoring program for T = 8.
  fitted = qsg_jax.fit(x_l, y_l, x_u, **dict(_SMALL, unlabeled_batch_size=100_000, num_steps=8))
  assert fitted.config.num_steps == 8 and np.isfinite(np.asarray(fitted.state.f_labeled)).all()


def test_curvature_subsamples_the_labeled_points_past_the_kernel_budget(monkeypatch):
  """The dense kernel is capped (MAX_KERNEL_POINTS): past it the curvature is that of a
  class-stratified subsample, chosen per point (order-free), and the CV still equals fit."""
  # Fold 0's training set (33 points), capped at 20: "full" is the curvature of the fits of
  # _assert_auto_step_cv_equals_fits, "capped" that of the CV's fold 0 below (order-free
  # selection): their compilations are shared.
  x_t, y_t, x_u = _fold_training_set()
  keep = auto_step.curvature_points(x_t, y_t, 3, 20)
  assert keep.sum() <= 22 and set(np.unique(y_t[keep])) == {0, 1, 2}
  for c in range(3):      # each class keeps its share
    assert abs(keep[y_t == c].sum() - 20 * np.mean(y_t == c)) <= 1
  order = np.random.default_rng(0).permutation(y_t.size)
  np.testing.assert_array_equal(auto_step.curvature_points(x_t[order], y_t[order], 3, 20),
                                keep[order])
  assert auto_step.curvature_points(x_t, y_t, 3, y_t.size).all()    # at the budget: every point
  key = jax.random.key(3)
  full = auto_step.auto_step_size(x_t, y_t, x_u, 3, 8.0, 0.01, 0.5, key, 16)
  monkeypatch.setattr(auto_step, "MAX_KERNEL_POINTS", 36)           # 20 labeled + 16 unlabeled
  capped = auto_step.auto_step_size(x_t, y_t, x_u, 3, 8.0, 0.01, 0.5, key, 16)
  subset = auto_step.auto_step_size(x_t[keep], y_t[keep], x_u, 3, 8.0, 0.01, 0.5, key, 16)
  assert capped == subset and capped != full
  # The grid of the test above (same shapes: its compilations are reused); "auto" is index 0.
  x_l, y_l, _ = _ordinal()
  grid = {"lam": [1e-3], "sigma": [8.0], "gamma": [0.5], "step_size": ["auto", 3.0]}
  result = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, **_CV)
  _assert_auto_step_cv_equals_fits(result, x_l, y_l, x_u)


def test_docstring_examples_run():
  for module in (auto_step, risk):
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner()
    for test in finder.find(module, globs={"np": np, "jnp": jnp, "jax": jax, **vars(module)}):
      runner.run(test)
    assert runner.summarize(verbose=False).failed == 0
    assert runner.summarize(verbose=False).attempted >= 1


@pytest.mark.slow   # benchmark / reproduction smoke run: `make test-slow`
def test_select_step_smoke():
  """experiments/select_step on an embedded dataset, one trial of the quick grid, tiny T."""
  from experiments import select_step  # pylint: disable=import-outside-toplevel
  out = select_step.study("lev", num_trials=1, num_unlabeled=100, cv_unlabeled=100,
                          eval_size=100, num_steps=32, grids=("quick",))
  record = out["quick"]
  assert record["grid_tasks"] == 60 and set(record["grid_diverged_tasks"]) == {
      "auto", "1.0", "3.0", "10.0"}
  assert record["diverged_trials"]["auto"] == 0 and 0 < record["mean_auc"]["auto"] <= 1
