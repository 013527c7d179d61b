"""QS3ORAOCV / QSGS2AUCCV and select_hyperparams against model_selection.cross_validate."""

import inspect
import re
import warnings

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone
from sklearn.exceptions import NotFittedError
from sklearn.model_selection import StratifiedKFold


from qsg_jax import estimators
from qsg_jax import model_selection
from tests import _cv_data
from tests.test_estimators import _documented
from tests.test_estimators import _fitted_attributes

# One data set (90 rows, 3 features: 60 labeled rows of 3 ordered classes, 30 unlabeled), one
# engine setting (``_cv_data.TINY``) and searches of 2 lam x 3 labeled weights x 3 folds = 18
# tasks per length scale, the size of the quick protocol's (``select_hyperparams``): the DSG
# searches below share their compiled programs (the grouped CV's, the curvature's, the refit's).
_TINY = _cv_data.TINY
_GRID = {"lam": [1e-3, 0.1], "length_scale": [1.0], "labeled_weight": [0.0, 0.5, 1.0],
         "learning_rate": ["auto"]}
# The same grid in the papers' names (``cross_validate``): sigma = 1 / (2 length_scale^2).
_PAPERS_GRID = {"lam": [1e-3, 0.1], "sigma": [0.5], "gamma": [0.0, 0.5, 1.0],
                "step_size": ["auto"]}


def _ordinal():
  """(x_l [60, 3], y_l classes 0..2, x_u [30, 3]) of ``_cv_data.semi_ordinal()``."""
  x, _, y_semi = _cv_data.semi_ordinal()
  labeled = y_semi != -1
  return x[labeled], y_semi[labeled], x[~labeled]


def _named(best):
  """A ``cross_validate`` grid point in the estimators' names (the grid's length scale 1)."""
  names = {"sigma": "length_scale", "gamma": "labeled_weight", "step_size": "learning_rate"}
  return {names.get(k, k): 1.0 if k == "sigma" else v for k, v in best.items()}


def test_cv_estimator_picks_what_cross_validate_picks_and_refits():
  x_l, y_l, x_u = _ordinal()
  x = np.concatenate([x_l, x_u])
  y = np.concatenate([y_l + 10, np.full(x_u.shape[0], -1)])     # any sortable labels
  model = estimators.QS3ORAOCV(grid=_GRID, cv=3, random_state=4, **_TINY).fit(x, y)
  # The CV sees the points as the refit scales them: min-max over all rows.
  low, high = x.min(axis=0), x.max(axis=0)
  scale = lambda a: ((a - low) / (high - low)).astype(np.float32)
  expected = model_selection.cross_validate(scale(x_l), y_l, scale(x_u), grid=_PAPERS_GRID,
                                            num_folds=3, key=4, **_TINY)
  assert model.best_params_ == _named(expected.best)
  assert model.best_score_ == pytest.approx(expected.best_score)
  results = model.cv_results_
  assert len(results["params"]) == 6 and set(results) >= {"mean_test_score", "split2_test_score",
                                                          "param_length_scale"}
  best = int(np.nanargmax(results["mean_test_score"]))
  assert results["params"][best] == _named(expected.best)
  np.testing.assert_allclose(results["mean_test_score"], expected.scores.reshape(6, -1).mean(1))
  assert model.best_estimator_.lam == expected.best["lam"]
  assert set(model.predict(x_l)) <= {10, 11, 12}
  assert model.decision_function(x_l).shape == (60,)
  assert 0.5 < model.score(x_l, y_l + 10) <= 1.0
  assert clone(model).get_params()["grid"] == _GRID
  assert _fitted_attributes(model) <= _documented(estimators.QS3ORAOCV)


def test_cv_estimator_errors():
  x_l, y_l, x_u = _ordinal()
  x = np.concatenate([x_l, x_u])
  y = np.concatenate([y_l + 1, np.full(x_u.shape[0], -1)])   # classes 1..3: -1 is no class
  with pytest.raises(ValueError, match="QSGS2AUCCV needs exactly 2 labeled classes"):
    estimators.QSGS2AUCCV(grid=_GRID, **_TINY).fit(x, y)
  with pytest.raises(ValueError, match="protocol must be one of"):
    estimators.QS3ORAOCV(protocol="full", **_TINY).fit(x, y)
  with pytest.raises(ValueError, match="protocol must be one of"):   # even beside a grid
    estimators.QS3ORAOCV(grid=_GRID, protocol="full", **_TINY).fit(x, y)
  with pytest.raises(TypeError, match="per_split_labeled_weight must be True or False"):
    estimators.QS3ORAOCV(grid=_GRID, per_split_labeled_weight="yes", **_TINY).fit(x, y)
  with pytest.raises(ValueError, match="inconsistent numbers of samples"):
    estimators.QS3ORAOCV(grid=_GRID, **_TINY).fit(x, y[:-1])
  with pytest.raises(NotFittedError, match="not fitted yet"):
    estimators.QS3ORAOCV(grid=_GRID, **_TINY).predict(x)
  with pytest.raises(ValueError, match="could also be an ordered class below 0"):
    estimators.QS3ORAOCV(grid=_GRID, **_TINY).fit(x, np.maximum(y - 1, -1))   # classes 0..2


def test_cv_estimator_takes_what_the_plain_one_takes():
  """random_state=None (a fresh seed, recorded) and fully labeled y (supervised, gamma 1)."""
  x_l, y_l, _ = _ordinal()
  grid = dict(_GRID, lam=[1e-3])   # labeled_weight 0, 0.5 or 1: supervised data leave 1 only
  model = estimators.QS3ORAOCV(grid=grid, cv=3, random_state=None, **_TINY).fit(x_l, y_l)
  assert isinstance(model.seed_, int) and model.best_params_["labeled_weight"] == 1.0
  assert model.best_estimator_.get_params()["random_state"] == model.seed_


def _entry(cls, name):
  """The numpydoc entry of attribute ``name`` in ``cls``'s docstring, on one line."""
  lines = inspect.getdoc(cls).splitlines()
  start = next(i for i, line in enumerate(lines) if line.strip().startswith(f"{name} :"))
  end = next(i for i in range(start + 1, len(lines)) if re.match(r"\s*\w+(, \w+)* :", lines[i]))
  return " ".join(line.strip() for line in lines[start + 1:end])


def test_cv_classes_follow_an_ordered_categorical_as_documented():
  """Sweep Z4: QS3ORAOCV's doc said classes_ are in "sorted (ordinal) order"; they follow an
  ordered Categorical's stated order, as QS3ORAO's (whose doc says so)."""
  x_l, y_l, x_u = _ordinal()
  order = ["low", "mid", "high"]   # alphabetically high < low < mid
  y = pd.Series(pd.Categorical(np.array(order)[y_l], categories=order, ordered=True))
  grid = dict(_GRID, lam=[1e-3], labeled_weight=[1.0])
  model = estimators.QS3ORAOCV(grid=grid, cv=3, **_TINY).fit(x_l, y)
  np.testing.assert_array_equal(model.classes_, order)
  np.testing.assert_array_equal(model.best_estimator_.classes_, order)
  for cls in (estimators.QS3ORAOCV, estimators.QS3ORAO):
    assert "ordered pandas Categorical" in _entry(cls, "classes_"), _entry(cls, "classes_")
    assert "categories' order" in _entry(cls, "classes_")


def test_select_hyperparams_is_the_cross_validated_choice():
  x_l, y_l, x_u = _ordinal()
  chosen = model_selection.select_hyperparams(x_l, y_l, x_u, protocol="quick", num_folds=3,
                                              key=1, **_TINY)
  expected = model_selection.cross_validate(x_l, y_l, x_u, quick=True, num_folds=3, key=1,
                                            **_TINY)
  assert chosen == dict(expected.best, cv_auc=expected.best_score)
  with pytest.raises(ValueError, match="protocol must be one of \\('paper', 'quick'\\)"):
    model_selection.select_hyperparams(x_l, y_l, x_u, protocol="full")


def test_cv_estimator_cross_validates_on_the_points_its_refit_sees():
  x, _, y_semi = _cv_data.semi_ordinal()
  grid = dict(_GRID, length_scale=[20.0, 0.4])
  search = estimators.QS3ORAOCV(unlabeled_label=-1, grid=grid, cv=3, **_cv_data.TINY)
  frame = pd.DataFrame(x, columns=["a", "b", "c"])   # a DataFrame: its column names are kept
  fits = [clone(search).fit(scale * frame, y_semi) for scale in (1.0, 100.0)]
  # Min-max scaling makes 100 x the same data as x: same CV scores, same pick, same model.
  np.testing.assert_allclose(fits[0].cv_results_["mean_test_score"],
                             fits[1].cv_results_["mean_test_score"], rtol=1e-6)
  assert fits[0].best_params_ == fits[1].best_params_
  model = fits[0]
  np.testing.assert_array_equal(model.feature_names_in_, ["a", "b", "c"])
  with pytest.raises(ValueError, match="same order"):
    model.predict(frame[["c", "b", "a"]])
  with pytest.raises(ValueError, match="cv_unlabeled must be a whole number >= 1"):
    search.set_params(cv_unlabeled=-1).fit(x, y_semi)
  with pytest.raises(ValueError, match="1 NaN / NA labels"):
    search.set_params(cv_unlabeled=None).fit(x, np.where(np.arange(90) == 5, np.nan, y_semi))


def test_cv_grid_in_the_papers_names_still_works_and_binary_auto_marker():
  """Grid keys sigma / gamma / step_size: FutureWarning, the same search; QSGS2AUCCV takes y
  with classes {0, 1} and -1 rows as it is (-1 cannot be a third class) and refits QSGS2AUC;
  DSG settings ("auto") and solver="dsg" both search and refit with DSG."""
  x, y, _ = _cv_data.semi_ordinal()
  binary = np.where(y == -1, -1, (y > 0).astype(int))
  binary[::3] = -1
  new = estimators.QSGS2AUCCV(grid=_GRID, cv=3, **_cv_data.TINY).fit(x, binary)
  assert type(new.best_estimator_) is estimators.QSGS2AUC
  np.testing.assert_array_equal(new.classes_, [0, 1])
  with pytest.warns(FutureWarning) as record:   # solver="dsg" here; "auto" chose DSG for new
    old = estimators.QSGS2AUCCV(grid=_PAPERS_GRID, cv=3, solver="dsg", **_cv_data.TINY).fit(
        x, binary)
  assert sorted(str(w.message).split()[2] for w in record) == ["gamma", "sigma", "step_size"]
  np.testing.assert_allclose(old.cv_results_["mean_test_score"],
                             new.cv_results_["mean_test_score"], rtol=1e-6)
  assert old.best_params_ == new.best_params_
  for search in (new, old):   # DSG settings given ("auto") or solver="dsg": DSG search and refit
    assert search.solver_ == "dsg" and search.best_estimator_.solver_ == "dsg"
  with pytest.warns(FutureWarning, match="per_split_gamma is deprecated; pass per_split_labeled"):
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
      estimators.QSGS2AUCCV(grid=_GRID, per_split_gamma=True).fit(x, binary[:-1])
  with pytest.raises(ValueError, match="grid has both 'sigma' and 'length_scale'"):
    estimators.QSGS2AUCCV(grid=dict(_GRID, sigma=[1.0])).fit(x, binary)
  with pytest.raises(ValueError, match=r"grid must be a dict of value lists with the keys lam, "
                                       r"length_scale and labeled_weight"):
    estimators.QSGS2AUCCV(grid={"lam": [1.0], "length_scale": [1.0]}).fit(x, binary)
  with pytest.raises(ValueError, match=r"grid\['labeled_weight'\] must be a non-empty list"):
    estimators.QSGS2AUCCV(grid=dict(_GRID, labeled_weight=[2.0])).fit(x, binary)
  with pytest.raises(ValueError, match=r"grid\['lam'\] must be a list of values; received 0\.001\. "
                                       r"Wrap one value in a list: \{'lam': \[0\.001\]\}"):
    estimators.QSGS2AUCCV(grid=dict(_GRID, lam=1e-3)).fit(x, binary)   # (was Python's own)
  with pytest.raises(ValueError, match=r"\[\"grid\['learning_rate'\]\"\] only mean something"):
    estimators.QSGS2AUCCV(solver="direct", grid=dict(_GRID, learning_rate=[0.5])).fit(x, binary)


def test_cv_estimators_take_the_tags_of_the_estimator_they_refit():
  """QSGS2AUCCV said multi_class=True (19 scikit-learn checks failed); now as QSGS2AUC."""
  assert estimators.QSGS2AUCCV().__sklearn_tags__() == estimators.QSGS2AUC().__sklearn_tags__()
  assert estimators.QS3ORAOCV().__sklearn_tags__() == estimators.QS3ORAO().__sklearn_tags__()
  assert not estimators.QSGS2AUCCV().__sklearn_tags__().classifier_tags.multi_class
  # Their data argument is X, as the estimators' (routing offered set_fit_request(x=...)).
  for cv_class, plain in ((estimators.QSGS2AUCCV, estimators.QSGS2AUC),
                          (estimators.QS3ORAOCV, estimators.QS3ORAO)):
    for method in ("fit", "decision_function", "predict", "score"):
      assert (list(inspect.signature(getattr(cv_class, method)).parameters)
              == list(inspect.signature(getattr(plain, method)).parameters)), (cv_class, method)


def test_cv_is_named_in_its_errors_and_a_splitter_is_refused_not_ignored():
  x, y, _ = _cv_data.semi_ordinal()
  search = estimators.QS3ORAOCV(protocol="quick", unlabeled_label=None)
  with pytest.raises(ValueError, match=r"cv must be a whole number >= 2; received 1\. Pass e\.g\. "
                                       r"cv=5"):
    search.set_params(cv=1).fit(x, y)
  with pytest.raises(TypeError, match="cv must be a whole number >= 2; received '3'"):
    search.set_params(cv="3").fit(x, y)
  with pytest.raises(TypeError, match=r"cv must be an int number of folds; received "
                                      r"StratifiedKFold\(n_splits=3.*Pass cv=3 \(the library's "
                                      r"stratified folds"):
    search.set_params(cv=StratifiedKFold(3)).fit(x, y)
  assert not hasattr(search, "best_estimator_")


def test_a_fitted_cv_estimator_names_itself_when_the_feature_count_differs():
  """The refitted estimator's own message named it: "QSGS2AUC is expecting 1 features"."""
  rng = np.random.default_rng(0)
  x = rng.random((40, 2))
  model = estimators.QSGS2AUCCV(protocol="quick", random_state=0).fit(x, x[:, 0] > 0.5)
  for method in (model.decision_function, model.predict, lambda z: model.score(z, x[:, 0] > 0.5)):
    with pytest.raises(ValueError, match="X has 3 features, but QSGS2AUCCV is expecting 2"):
      method(np.zeros((40, 3)))
  np.testing.assert_array_equal(model.decision_function(x),
                                model.best_estimator_.decision_function(x))


def test_cv_uses_fewer_folds_where_the_smallest_class_is_smaller():
  """10 rows, classes of 7 and 3 (scikit-learn's check_fit2d_1feature): 3 folds, the search
  cross_validate makes with num_folds=3 (the estimator's solver, direct); a class of 1 row cannot
  be cross-validated."""
  rng = np.random.default_rng(0)
  x = rng.random((10, 1))
  y = (np.arange(10) >= 7).astype(int)
  model = estimators.QSGS2AUCCV(protocol="quick", random_state=0).fit(x, y)
  assert model.n_splits_ == 3
  scaled = ((x - x.min()) / (x.max() - x.min())).astype(np.float32)
  expected = model_selection.cross_validate(scaled, y, None, grid=dict(
      model_selection.quick_grid(), gamma=[1.0]), num_folds=3, key=0, solver="direct")
  assert model.best_score_ == pytest.approx(expected.best_score)
  assert _fitted_attributes(model) <= _documented(estimators.QSGS2AUCCV)
  with pytest.raises(ValueError, match="needs at least 2 distinct labeled rows of each class "
                                       r"\(copies of a row share a fold\); class 1 has 1"):
    estimators.QSGS2AUCCV(protocol="quick").fit(x, (np.arange(10) >= 9).astype(int))


def test_cv_estimator_refuses_rows_float32_cannot_score():
  x, y, _ = _cv_data.semi_ordinal()
  model = estimators.QS3ORAOCV(protocol="quick", unlabeled_label=None).fit(x, y)
  far = np.array(x[:3])
  far[1, 2] = 1e39 * (x[:, 2].max() - x[:, 2].min())
  with pytest.raises(ValueError, match="beyond the float32 range .*first at row 1, column 2"):
    model.predict(far)


def test_learned_scales_are_searched_by_scikit_learns_cv_and_refused_in_the_grid():
  """Issue 27's learned bandwidths in a CV: GridSearchCV learns them on each fold's training rows
  (a grid of the CV estimators holds numbers only, and says where the others go)."""
  from sklearn.model_selection import GridSearchCV  # pylint: disable=g-import-not-at-top
  x, _, y_semi = _cv_data.semi_ordinal(n=150)
  for values in (["ard"], [[1.0, 1.0, 1.0]], [0.7, "isotropic"]):
    with pytest.raises(ValueError, match=r"length_scale values must be numbers .* GridSearchCV\("
                       r"QS3ORAO\(\), \{'length_scale': \['ard', 'isotropic'\]\}\)"):
      estimators.QS3ORAOCV(grid=dict(_GRID, length_scale=values), unlabeled_label=-1,
                           **_TINY).fit(x, y_semi)
  search = GridSearchCV(estimators.QS3ORAO(unlabeled_label=-1, lam=1e-3, labeled_weight=0.5,
                                           random_state=0),
                        {"length_scale": ["ard", "isotropic"]},
                        scoring=estimators.ordinal_auc_scorer, cv=estimators.LabeledStratifiedKFold(
                            n_splits=2, unlabeled_label=-1))
  search.fit(x, y_semi)
  assert np.isfinite(search.cv_results_["mean_test_score"]).all()
  chosen = search.best_estimator_.length_scale_
  assert np.ndim(chosen) == (1 if search.best_params_["length_scale"] == "ard" else 0)


def test_a_warning_of_the_data_is_said_once_at_the_callers_line():
  """The CV checks the data as its refit does: the refit's repeats (unlabeled_label marking no
  row, here) were said twice, the second from inside the library."""
  x, _, y_semi = _cv_data.semi_ordinal()
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    estimators.QS3ORAOCV(grid=_GRID, cv=3, unlabeled_label=-2, **_TINY).fit(x, y_semi)
  said = [w for w in caught if "marks no row of y" in str(w.message)]
  assert len(said) == 1 and said[0].filename == __file__, [(w.filename, w.message) for w in said]
