"""Cross-validation of QS3ORAO / QSG-S2AUC: the vmapped grid against a Python loop of fits."""

import itertools

import numpy as np
import pytest

import qsg_jax
from qsg_jax import data as data_lib
from qsg_jax import model_selection
from qsg_jax.errors import UnscaledFeaturesWarning
from tests import _bad_inputs as toy
from tests import _cv_data

_SMALL = _cv_data.SMALL
_ordinal = _cv_data.ordinal


# One CV setting (shapes, folds, batch size, method) for every call below: the vmapped per-task
# grid (_task_aucs) is compiled once for the whole module. The grouped path ("auto"'s choice for
# the squared loss on the whole labeled set) is test_model_selection_grouped.py's.
_CV = dict(num_folds=3, seed=1, key=7, tasks_per_batch=5, method="per_task", **_SMALL)


def test_vmapped_cv_equals_a_loop_of_fits_on_each_fold():
  """Task (point, fold) is qsg_jax.fit on that fold's training set with the shared key."""
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3, 0.1], "sigma": [0.5], "gamma": [0.0, 0.5], "step_size": [1.0, 1e4]}
  # 24 tasks in batches of 5: the last batch is padded, and all batches share one compilation.
  result = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, **_CV)
  folds = qsg_jax.folds.stratified_folds(y_l, 3, seed=1)
  train, valid = qsg_jax.folds.fold_training_sets(folds, y_l)
  for (i, lam), (g, gamma), f in itertools.product(enumerate(grid["lam"]),
                                                   enumerate(grid["gamma"]), range(3)):
    fitted = qsg_jax.fit(x_l[train[f]], y_l[train[f]], x_u, key=7, num_classes=3, lam=lam,
                         sigma=0.5, gamma=gamma, step_size=1.0, **_SMALL)
    scores = qsg_jax.decision_function(fitted, x_l)[valid[f]]   # one shape: one compilation
    expected = qsg_jax.split_aucs(scores, y_l[valid[f]], 3)
    np.testing.assert_allclose(result.fold_scores[i, 0, g, 0, f], expected, atol=1e-6)
  # eta0 = 1e4 blows up on every task (fit refuses it) and scores NaN, so it is never chosen.
  assert np.isnan(result.fold_scores[:, :, :, 1]).all()
  with pytest.raises(qsg_jax.DivergenceError, match="diverged"):
    qsg_jax.fit(x_l[train[0]], y_l[train[0]], x_u, key=7, num_classes=3, lam=0.1, sigma=0.5,
                gamma=0.5, step_size=1e4, **_SMALL)
  assert result.fold_scores.shape == (2, 1, 2, 2, 3, 2)
  np.testing.assert_allclose(result.scores[:, :, :, 0],
                             result.fold_scores[:, :, :, 0].mean(axis=-2), atol=1e-7)
  mean = result.scores[:, :, :, 0].mean(axis=-1)
  assert result.best_score == pytest.approx(mean.max())
  best = np.unravel_index(np.argmax(mean), mean.shape)
  assert result.best == {"lam": grid["lam"][best[0]], "sigma": 0.5,
                         "gamma": grid["gamma"][best[2]], "step_size": 1.0}


def test_fold_training_sets_have_equal_size_and_every_class():
  labels = np.array([0] * 7 + [1] * 11 + [2] * 5)
  folds = qsg_jax.folds.stratified_folds(labels, 4, seed=3)
  train, valid = qsg_jax.folds.fold_training_sets(folds, labels)
  sizes = np.bincount(folds)
  assert train.shape == (4, labels.size - sizes.max())
  for f in range(4):
    assert not np.isin(train[f], np.nonzero(folds == f)[0]).any()
    assert labels.size - sizes[f] - train.shape[1] <= 1            # at most one left out
    assert set(labels[train[f]]) == {0, 1, 2}
    np.testing.assert_array_equal(valid[f], folds == f)
  # The docstring example: the surplus point of fold 1 comes from the larger class (1).
  train, _ = qsg_jax.folds.fold_training_sets(np.array([0, 1, 0, 1, 0]),
                                                np.array([0, 0, 1, 1, 1]))
  np.testing.assert_array_equal(train, [[1, 3], [0, 2]])


def test_all_diverging_is_an_error_and_same_shapes_do_not_recompile():
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3, 0.1], "sigma": [0.5], "gamma": [0.0, 0.5], "step_size": [1.0]}
  model_selection.cross_validate(x_l, y_l, x_u, grid=grid, **_CV)
  compiled = model_selection._task_aucs._cache_size()  # pylint: disable=protected-access
  with pytest.raises(ValueError, match="every grid point diverged"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=dict(grid, step_size=[1e4]), **_CV)
  # Other hyper-parameter values in batches of the same shape reuse the compiled grid.
  assert model_selection._task_aucs._cache_size() == compiled  # pylint: disable=protected-access


def test_a_grid_that_is_not_a_dict_is_refused():
  with pytest.raises(TypeError, match=r"grid must be a dict of value lists .* received list"):
    model_selection.cross_validate(np.zeros((4, 2)), np.array([0, 1, 0, 1]), grid=[1, 2])


def test_grids_follow_the_papers():
  grid = model_selection.paper_grid()
  np.testing.assert_allclose(grid["lam"], 2.0 ** np.arange(-3, 4))
  np.testing.assert_allclose(grid["sigma"], 2.0 ** np.arange(-3, 4))
  np.testing.assert_allclose(grid["gamma"], np.linspace(0, 1, 11))
  assert tuple(grid) == ("lam", "sigma", "gamma", "step_size")
  quick = model_selection.quick_grid(step_size=2.0)
  assert quick["step_size"].tolist() == [2.0] and quick["gamma"].tolist() == [0.0, 0.5, 1.0]


def test_cv_refuses_bad_requests():
  x_l, y_l, x_u = _ordinal()
  quick = model_selection.quick_grid()
  with pytest.raises(ValueError, match="must be a dict with the keys"):
    model_selection.cross_validate(x_l, y_l, x_u, grid={"lam": [1.0]})
  with pytest.raises(ValueError, match=r"grid\['sigma'\] must be .* in \(0, inf\)"):  # no step_size
    model_selection.cross_validate(x_l, y_l, x_u, grid={"lam": [1.0], "sigma": [0.0],
                                                        "gamma": [1.0]})
  with pytest.raises(ValueError, match=r"grid\['gamma'\] must be .* in \[0, 1\]"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=dict(quick, gamma=[1.5]))
  with pytest.raises(ValueError, match=r"grid\['sigma'\] must be .* in \(0, inf\)"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=dict(quick, sigma=[0.0]))
  with pytest.raises(ValueError, match="must be a non-empty list"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=dict(quick, lam=[]))
  with pytest.raises(ValueError, match="no unlabeled data"):
    model_selection.cross_validate(x_l, y_l, None, quick=True)
  with pytest.raises(ValueError, match="at most the smallest labeled class size"):
    model_selection.cross_validate(x_l, y_l, x_u, quick=True, num_folds=40)
  with pytest.raises(ValueError, match="x_unlabeled has 2 features"):
    model_selection.cross_validate(x_l, y_l, x_u[:, :2], quick=True)
  with pytest.raises(ValueError, match="tasks_per_batch must be a whole number >= 1"):
    model_selection.cross_validate(x_l, y_l, x_u, quick=True, tasks_per_batch=-1)


def test_split_lam_is_a_grid_key_scored_by_the_per_split_scores():
  """Task (split_lam, fold) is qsg_jax.fit(split_lam=...) on the fold, scored per split."""
  x_l, y_l, x_u = _ordinal()
  # Two gammas: the 6 plain tasks (split_lam None) fill batches of 5, as in the grids above (the
  # per-task program compiled once for the module); the 6 corrected ones are trained per task.
  grid = {"lam": [1e-3], "sigma": [0.5], "gamma": [0.0, 0.5], "step_size": [1.0],
          "split_lam": [None, 0.1]}
  result = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, **_CV)
  assert result.scores.shape == (1, 1, 2, 1, 2, 2) and result.best["split_lam"] in (None, 0.1)
  train, valid = qsg_jax.folds.fold_training_sets(qsg_jax.folds.stratified_folds(y_l, 3, 1), y_l)
  for s, split_lam in enumerate(grid["split_lam"]):
    fitted = qsg_jax.fit(x_l[train[0]], y_l[train[0]], x_u, key=7, num_classes=3, lam=1e-3,
                         sigma=0.5, gamma=0.5, step_size=1.0, split_lam=split_lam, **_SMALL)
    expected = qsg_jax.split_aucs(qsg_jax.split_scores(fitted, x_l), y_l, 3, valid[0])
    np.testing.assert_allclose(result.fold_scores[0, 0, 1, 0, s, 0], expected, atol=1e-6)
  with pytest.raises(ValueError, match="grid's keys are searched"):
    model_selection.cross_validate(x_l, y_l, x_u, grid=grid, sigma=1.0, **_CV)


def test_fit_over_grid_equals_separate_fits():
  x_l, y_l, x_u = _ordinal()
  # A fold's training rows, scored on every labeled row: the shapes of the loop of fits in
  # test_vmapped_cv_equals_a_loop_of_fits_on_each_fold (the fits' programs compiled once).
  train, _ = qsg_jax.folds.fold_training_sets(qsg_jax.folds.stratified_folds(y_l, 3, 1), y_l)
  x_t, y_t = x_l[train[0]], y_l[train[0]]
  out = model_selection.fit_over_grid(x_t, y_t, x_u, x_l, {"gamma": [0.0, 1.0],
                                                           "lam": [1e-3, 1e4]},
                                      key=3, sigma=0.5, step_size=2.0, **_SMALL)
  assert [p["gamma"] for p in out["params"]] == [0.0, 0.0, 1.0, 1.0]
  for p, params in enumerate(out["params"]):
    try:
      fitted = qsg_jax.fit(x_t, y_t, x_u, key=3, sigma=0.5, step_size=2.0, **params, **_SMALL)
    except qsg_jax.DivergenceError as error:
      assert out["diverged"][p] and out["messages"][p] == str(error)
      assert np.isnan(out["scores"][p]).all()
      continue
    assert not out["diverged"][p] and out["eta0"][p] == pytest.approx(2.0)
    np.testing.assert_allclose(out["scores"][p], qsg_jax.decision_function(fitted, x_l),
                               rtol=1e-5)   # float32 rounding: a vmapped run sums in another order
  with pytest.raises(ValueError, match="grid must be a non-empty dict of value lists over"):
    model_selection.fit_over_grid(x_l, y_l, x_u, x_u, {"num_steps": [8, 16]})
  with pytest.raises(ValueError, match="fit_over_grid vmaps DSG trainings.*solver='direct'"):
    model_selection.fit_over_grid(x_l, y_l, x_u, x_u, {"gamma": [0.0]}, solver="direct")


def test_folds_subsample_and_best_point():
  x = np.arange(20)[:, None]
  picked = qsg_jax.folds.subsample(x, 5, seed=1)
  assert picked.shape == (5, 1) and np.all(np.diff(picked[:, 0]) > 0)   # original order
  np.testing.assert_array_equal(picked, qsg_jax.folds.subsample(x, 5, seed=1))
  assert qsg_jax.folds.subsample(x, None, seed=1) is x or np.array_equal(
      qsg_jax.folds.subsample(x, 50, seed=1), x)
  assert qsg_jax.folds.best_point(np.array([np.nan, 0.7, 0.7]), "none") == (1,)
  with pytest.raises(ValueError, match="nothing converged"):
    qsg_jax.folds.best_point(np.full((2, 2), np.nan), "nothing converged")


def test_cross_validate_warns_on_unscaled_features_and_minmax_refuses_overflow():
  x_l, y_l, x_u = _ordinal()
  # The grid and shapes of test_all_diverging_is_an_error_and_same_shapes_do_not_recompile.
  grid = {"lam": [1e-3, 0.1], "sigma": [0.5], "gamma": [0.0, 0.5], "step_size": [1.0]}
  with pytest.warns(UnscaledFeaturesWarning):
    model_selection.cross_validate(1e4 * x_l, y_l, 1e4 * x_u, grid=grid, **_CV)
  with pytest.raises(ValueError, match="spans more than float64 holds"):
    data_lib.minmax_fit([[1e308], [-1e308]])


@pytest.mark.parametrize("changes, error, pattern", [
    (dict(num_folds=1), ValueError, "num_folds must be a whole number >= 2; received 1"),
    (dict(tasks_per_batch=0), ValueError, "tasks_per_batch must be a whole number >= 1; received"),
    (dict(seed=None), TypeError, "seed must be a whole number >= 0; received None"),
    (dict(key=None), TypeError, "key must be an int seed"),
    (dict(num_steps=0), ValueError, "num_steps must be a whole number >= 1; received 0"),
    (dict(progress=3), TypeError, "progress must be a callable"),
])
def test_cross_validate_checks_arguments_first(changes, error, pattern):
  """Bad inputs (RELIABILITY.md): refused before any training."""
  with pytest.raises(error, match=pattern):
    model_selection.cross_validate(toy.X_L, toy.Y_L, toy.X_U, quick=True, **changes)


def test_direct_solver_cv_is_the_direct_cv_in_the_same_layout():
  """solver="direct" (and "auto" for the squared loss) runs direct.cross_validate."""
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3, 0.1], "sigma": [0.5, 2.0], "gamma": [0.0, 0.5, 1.0]}
  reports = []
  result = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, num_folds=3, seed=1, key=7,
                                          solver="direct", progress=reports.append)
  own = qsg_jax.direct.cross_validate(x_l, y_l, x_u, grid=grid, num_folds=3, seed=1, key=7)
  assert result.solver == "direct" and list(result.grid) == ["lam", "sigma", "gamma",
                                                             "step_size"]
  np.testing.assert_array_equal(result.scores[..., 0, :], own.scores)
  np.testing.assert_array_equal(result.fold_scores[..., 0, :, :], own.fold_scores)
  assert result.best == dict(own.best, step_size="auto")
  assert reports == [{"tasks_done": 36, "num_tasks": 36}]
  auto = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, num_folds=3, seed=1, key=7,
                                        solver="auto")
  np.testing.assert_array_equal(auto.scores, result.scores)
  fitted = qsg_jax.fit(x_l, y_l, x_u, solver=result.solver, **result.best)
  assert fitted.solver == "direct"
  chosen = model_selection.select_hyperparams(x_l, y_l, x_u, protocol="quick", solver="direct",
                                              num_folds=3)
  assert set(chosen) == {"lam", "sigma", "gamma", "step_size", "cv_auc"}


@pytest.mark.parametrize("changes, pattern", [
    (dict(grid={"lam": [1e-3], "sigma": [1.0], "gamma": [0.5], "step_size": [1.0]}),
     r"\[\"grid\['step_size'\]\"\] only mean something to DSG"),
    (dict(grid={"lam": [1e-3], "sigma": [1.0], "gamma": [0.5], "split_lam": [None, 1.0]}),
     r"\[\"grid\['split_lam'\] \(the direct CV does not search it; direct fits take it\)\"\] "
     r"only mean something to DSG"),
    (dict(quick=True, split_lam=1.0), r"split_lam \(the direct CV does not search it"),
    (dict(quick=True, method="grouped"), r"\['method'\] only mean something to DSG"),
    (dict(quick=True, per_split_gamma=True), r"\['per_split_gamma'\] only mean something"),
    (dict(quick=True, num_steps=64), r"\['num_steps'\] only mean something to DSG"),
    (dict(quick=True, tasks_per_batch=4), r"\['tasks_per_batch'\] only mean something"),
    (dict(quick=True, loss="hinge"), "solver='direct' minimizes the squared pairwise loss"),
])
def test_direct_solver_cv_refuses_dsg_only_settings(changes, pattern):
  x_l, y_l, x_u = _ordinal()
  with pytest.raises(ValueError, match=pattern):
    model_selection.cross_validate(x_l, y_l, x_u, solver="direct", **changes)


def test_auto_cv_runs_dsg_when_a_dsg_setting_is_given():
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3, 0.1], "sigma": [0.5], "gamma": [0.5]}   # 6 tasks: batches of 5, as above
  result = model_selection.cross_validate(x_l, y_l, x_u, grid=grid, solver="auto", **_CV)
  assert result.solver == "dsg" and result.best["step_size"] == "auto"


def test_a_slow_num_steps_warns_at_the_callers_line():
  x_l, y_l, x_u = _ordinal()
  grid = {"lam": [1e-3], "sigma": [0.5], "gamma": [0.5], "step_size": [1.0]}
  # The warning comes with the engine's configuration, before the tasks run; the bad method
  # (refused just after) spares compiling a CV for num_steps=37.
  with pytest.warns(qsg_jax.SlowConfigWarning, match="num_steps=37 has no divisor") as caught:
    with pytest.raises(ValueError, match="method must be 'auto', 'grouped' or 'per_task'"):
      model_selection.cross_validate(x_l, y_l, x_u, grid=grid, num_folds=2, num_steps=37,
                                     num_frequencies=4, method="fast")
  assert caught[0].filename == __file__
