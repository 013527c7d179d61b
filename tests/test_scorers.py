"""Scorers and folds that ignore unlabeled rows: against scikit-learn's metrics on the labeled
rows, and inside GridSearchCV / cross_val_score."""

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.exceptions import DataConversionWarning
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.model_selection import StratifiedKFold
from sklearn.model_selection import cross_val_score
from sklearn.model_selection import cross_validate

import qsg_jax
from qsg_jax import estimators
from tests import _cv_data
from tests.conftest import raises_short


class _Fixed(ClassifierMixin, BaseEstimator):
  """A fitted 'estimator' with given scores and predictions, to test the scorers alone."""
  unlabeled_label = -1

  def __init__(self, classes, scores, predicted=None):
    self.classes_ = np.asarray(classes)
    self._scores = np.asarray(scores, np.float32)
    self._predicted = None if predicted is None else np.asarray(predicted)

  def decision_function(self, x):
    return self._scores[np.asarray(x)[:, 0].astype(int)]

  def predict(self, x):
    return self._predicted[np.asarray(x)[:, 0].astype(int)]


def test_scorers_match_sklearn_on_labeled_rows():
  rng = np.random.default_rng(0)
  y = rng.choice([10, 20, 30], size=60)
  scores = y + rng.normal(scale=8.0, size=60)
  y_semi = np.where(np.arange(60) % 3 == 0, -1, y)
  rows = np.arange(60)[:, None]
  model = _Fixed([10, 20, 30], scores)
  labeled = y_semi != -1
  expected = np.mean([skm.roc_auc_score(y[labeled] > c, scores[labeled]) for c in (10, 20)])
  assert estimators.ordinal_auc_scorer(model, rows, y_semi) == pytest.approx(expected, abs=1e-6)
  binary = np.where(y_semi == -1, -1, (y > 10).astype(int))
  expected = skm.roc_auc_score(binary[labeled], scores[labeled])
  assert estimators.auc_scorer(_Fixed([0, 1], scores), rows, binary) == pytest.approx(expected,
                                                                                    abs=1e-6)


def test_score_weighs_pairs_by_sample_weight_as_scikit_learn_does():
  """Sweep R: score(sample_weight=...) refused every weight, so with metadata routing a
  requested weight scored NaN in every fold. Now scikit-learn's weighted AUC per split; the
  weights of unlabeled rows are not used, and whole weights equal repeated rows."""
  rng = np.random.default_rng(0)
  y = rng.choice([10, 20, 30], size=60)
  scores = y + rng.normal(scale=8.0, size=60)
  y_semi = np.where(np.arange(60) % 3 == 0, -1, y)
  rows = np.arange(60)[:, None]
  weights = rng.integers(0, 4, size=60).astype(float)
  model = _Fixed([10, 20, 30], scores)
  labeled = y_semi != -1
  expected = np.mean([skm.roc_auc_score(y[labeled] > c, scores[labeled],
                                        sample_weight=weights[labeled]) for c in (10, 20)])
  got = estimators.ordinal_auc_scorer(model, rows, y_semi, sample_weight=weights)
  assert got == pytest.approx(expected, abs=1e-9)
  repeated = np.repeat(np.arange(60), weights.astype(int))
  assert got == pytest.approx(estimators.ordinal_auc_scorer(model, rows[repeated],
                                                             y_semi[repeated]), abs=1e-6)
  unused = np.where(labeled, weights, 1e6)
  assert estimators.ordinal_auc_scorer(model, rows, y_semi, sample_weight=unused) == got
  with pytest.raises(ValueError, match=r"sample_weight must hold 60 finite numbers >= 0"):
    estimators.ordinal_auc_scorer(model, rows, y_semi, sample_weight=-weights)
  with pytest.raises(ValueError, match=r"received shape \(60,\) with inf"):
    estimators.ordinal_auc_scorer(model, rows, y_semi, sample_weight=weights + np.inf)
  with pytest.raises(ValueError, match=r"received shape \(59,\)\.$"):
    estimators.ordinal_auc_scorer(model, rows, y_semi, sample_weight=weights[1:])
  with pytest.raises(ValueError, match=r"with weight > 0 all belong to one class"):
    estimators.ordinal_auc_scorer(model, rows, y_semi, sample_weight=(y == 20) * 1.0)
  x, y_o, y_semi_o = _cv_data.semi_ordinal()
  fitted = estimators.QS3ORAO(unlabeled_label=-1, length_scale=1.0, lam=1e-3, labeled_weight=0.5,
                              random_state=0).fit(x, y_semi_o)
  w = np.linspace(0.5, 2.0, y_o.size)
  assert fitted.score(x, y_o, sample_weight=w) == estimators.ordinal_auc_scorer(
      fitted, x, y_o, sample_weight=w)
  assert fitted.score(x, y_o, sample_weight=np.ones(y_o.size)) == pytest.approx(
      fitted.score(x, y_o), abs=1e-6)


def test_scorer_errors():
  rows = np.arange(4)[:, None]
  model = _Fixed([0, 1, 2], [0.0, 1.0, 2.0, 3.0])
  with pytest.raises(ValueError, match="auc_scorer is for binary estimators"):
    estimators.auc_scorer(model, rows, np.array([0, 1, 2, 0]))
  with pytest.raises(ValueError, match="every row of y is unlabeled"):
    estimators.ordinal_auc_scorer(model, rows, np.full(4, -1))
  with pytest.raises(ValueError, match=r"labels \[7\] outside the fitted classes"):
    estimators.ordinal_auc_scorer(model, rows, np.array([0, 1, 7, -1]))
  with pytest.raises(ValueError, match="all belong to one class"):
    estimators.ordinal_auc_scorer(model, rows, np.array([1, 1, -1, -1]))
  with pytest.raises(ValueError, match="looks like the unlabeled marker"):
    estimators.ordinal_auc_scorer(model, rows, np.array(["0", "1", "-1", "2"]))


def test_grid_search_on_semi_supervised_lev_picks_a_sensible_setting():
  """README example: GridSearchCV with the ordinal-AUC scorer on lev with 80% labels hidden."""
  ds = qsg_jax.data.load("lev")
  x, y = ds.x, ds.y
  rng = np.random.default_rng(0)
  labeled = np.concatenate([rng.permutation(np.flatnonzero(y == c))[:max(4, (y == c).sum() // 5)]
                            for c in np.unique(y)])   # 20% of each class, at least 4
  y_semi = np.full_like(y, -1)
  y_semi[labeled] = y[labeled]
  # The default (direct) solver: one solve per fit on padded row buckets; DSG here compiled per
  # fold size (40 s of the suite for the same scorer plumbing).
  search = GridSearchCV(
      estimators.QS3ORAO(random_state=0, unlabeled_label=-1, lam=1e-3, labeled_weight=0.5),
      {"length_scale": [0.7, 0.04]},   # 0.04: a kernel far narrower than the data, deliberately bad
      scoring=qsg_jax.estimators.ordinal_auc_scorer,
      cv=StratifiedKFold(3, shuffle=True, random_state=0))
  with pytest.warns(qsg_jax.direct.ApproximationWarning, match="too narrow for the data"):
    search.fit(x, y_semi)   # (said for 0.04 at the user's line)
  scores = search.cv_results_["mean_test_score"]
  assert np.all(np.isfinite(scores)), scores
  assert search.best_params_ == {"length_scale": 0.7}, scores
  assert scores[0] > scores[1] + 0.05 and scores[0] > 0.7, scores
  # The estimator's default score ignores unlabeled rows the same way.
  assert search.best_estimator_.score(x, y_semi) == pytest.approx(
      estimators.ordinal_auc_scorer(search.best_estimator_, x, y_semi))


def test_scorers_check_the_estimator_and_the_length_of_y():
  """Bad inputs (RELIABILITY.md): unfitted, not an estimator, y of the wrong length."""
  from sklearn.exceptions import NotFittedError  # pylint: disable=g-import-not-at-top
  from tests.conftest import raises_short  # pylint: disable=g-import-not-at-top
  rows = np.arange(6)[:, None]
  raises_short(ValueError, "y has 5 labels but X has 6 rows", estimators.ordinal_auc_scorer,
               _Fixed([0, 1, 2], np.arange(6.0)), rows, np.array([0, 1, 2, 0, 1]))
  with pytest.raises(NotFittedError):
    estimators.ordinal_auc_scorer(estimators.QS3ORAO(), rows, np.array([0, 1, 2, 0, 1, 2]))
  for scorer in (estimators.ordinal_auc_scorer, estimators.auc_scorer):
    raises_short(TypeError,
                 "scores an estimator with decision_function and classes_.*received object",
                 scorer, object(), rows, np.array([0, 1, 0, 0, 1, 1]))


def test_accuracy_and_mae_scorers_match_sklearn_on_labeled_rows():
  rng = np.random.default_rng(1)
  y = rng.choice([10, 20, 30], size=60)
  predicted = np.where(rng.random(60) < 0.6, y, rng.choice([10, 20, 30], size=60))
  y_semi = np.where(np.arange(60) % 4 == 0, -1, y)
  rows, labeled = np.arange(60)[:, None], y_semi != -1
  model = _Fixed([10, 20, 30], np.zeros(60), predicted)
  assert estimators.accuracy_scorer(model, rows, y_semi) == pytest.approx(
      skm.accuracy_score(y[labeled], predicted[labeled]))
  # MAE in classes (ranks 0, 1, 2), not in label units: scikit-learn's on the ranks.
  assert estimators.neg_mae_scorer(model, rows, y_semi) == pytest.approx(
      -skm.mean_absolute_error(y[labeled] // 10 - 1, predicted[labeled] // 10 - 1))
  assert estimators.get_scorer("balanced_accuracy")(model, rows, y_semi) == pytest.approx(
      skm.balanced_accuracy_score(y[labeled], predicted[labeled]))
  custom = skm.make_scorer(skm.f1_score, average="macro")
  assert estimators.get_scorer(custom)(model, rows, y_semi) == pytest.approx(
      skm.f1_score(y[labeled], predicted[labeled], average="macro"))
  with pytest.raises(ValueError, match=r"predict\(X\) contains labels \[40\] outside"):
    estimators.neg_mae_scorer(_Fixed([10, 20, 30], np.zeros(60), predicted + 10), rows, y_semi)


def test_every_scorer_refuses_a_label_outside_the_fitted_classes():
  """A label no class has (a typo, another encoding) is an error for every scorer, never a
  silent miss: accuracy and scikit-learn's names used to count it as a wrong prediction."""
  rows = np.arange(6)[:, None]
  model = _Fixed([10, 20, 30], np.zeros(6), np.array([10, 20, 30, 10, 20, 30]))
  y = np.array([10, 20, 7, -1, 20, 30])
  for scorer in (estimators.accuracy_scorer, estimators.neg_mae_scorer,
                 estimators.get_scorer("balanced_accuracy"), estimators.get_scorer("f1_macro")):
    with pytest.raises(ValueError, match=r"y contains labels \[7\] outside the fitted classes"):
      scorer(model, rows, y)
  assert estimators.accuracy_scorer(model, rows, np.array([10, 20, 10, -1, 20, 30])) == 0.8


def test_labels_of_another_type_than_the_classes_are_outside_them():
  """Text classes held as objects (an ordered Categorical's) scored with ints: NumPy's "'<' not
  supported between instances of 'str' and 'int'" from inside the sort."""
  rows = np.arange(6)[:, None]
  for classes in (np.array(["lo", "mid", "hi"], object), np.array(["lo", "mid", "hi"])):
    model = _Fixed(classes, np.arange(6.0), np.array(["lo", "mid", "hi"] * 2, object))
    for scorer in (estimators.ordinal_auc_scorer, estimators.accuracy_scorer,
                   estimators.neg_mae_scorer, estimators.get_scorer("f1_macro")):
      raises_short(ValueError, r"y contains labels \[0, 1, 2\] outside the fitted classes "
                   r"\['lo', 'mid', 'hi'\]", scorer, model, rows, np.array([0, 1, 2, 0, 1, 2]))
    assert estimators.accuracy_scorer(model, rows, model.predict(rows)) == 1.0


def test_labeled_folds_check_y_against_x_and_count_labeled_rows():
  """y shorter than X split rows 0..n_y-1 only (scikit-learn's folds refuse it); no labeled row
  gave scikit-learn's "Found array with 0 sample(s)"; n_splits beyond the labeled rows was said
  in samples without saying they are the labeled ones."""
  y = np.array([0, 1, -1, 0, 1, -1, 0, 1, 0, 1])
  folds = estimators.LabeledStratifiedKFold(3)
  raises_short(ValueError, r"inconsistent numbers of samples: \[12, 10\]: X has 12 rows",
               lambda: list(folds.split(np.zeros((12, 1)), y)))
  raises_short(ValueError, r"y has no labeled rows: all 10 rows are marked unlabeled \(-1\)",
               lambda: list(folds.split(np.zeros((10, 1)), np.full(10, -1))))
  raises_short(ValueError, r"n_splits=9 exceeds the 8 labeled rows of y \(the 2 unlabeled rows",
               lambda: list(estimators.LabeledStratifiedKFold(9).split(np.zeros((10, 1)), y)))
  assert len(list(folds.split(None, y))) == 3   # scikit-learn's split(X=None, y) still works


def test_get_scorer_maps_scikit_learns_names_to_the_labeled_rows():
  assert estimators.get_scorer("roc_auc") is estimators.auc_scorer
  assert estimators.get_scorer("accuracy") is estimators.accuracy_scorer
  assert estimators.get_scorer("neg_mean_absolute_error") is estimators.neg_mae_scorer
  assert estimators.get_scorer("ordinal_auc") is estimators.ordinal_auc_scorer
  assert isinstance(estimators.get_scorer("f1"), estimators.LabeledRowsScorer)
  with pytest.raises(ValueError, match="'auc_roc' is not a scoring name: use one of"):
    estimators.get_scorer("auc_roc")
  with pytest.raises(TypeError, match="scoring must be a name or a scorer callable"):
    estimators.get_scorer(3)


def test_labeled_folds_test_labeled_rows_only_and_train_on_every_unlabeled_row():
  y = np.array([0, 1, -1, 0, 1, -1, 0, 1, 0, 1, -1, 1, 0, -1, 0])
  labeled, unlabeled = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
  folds = list(estimators.LabeledStratifiedKFold(3, shuffle=True, random_state=0).split(
      np.zeros((y.size, 1)), y))
  reference = StratifiedKFold(3, shuffle=True, random_state=0).split(labeled, y[labeled])
  for (train, test), (ref_train, ref_test) in zip(folds, reference, strict=True):
    np.testing.assert_array_equal(test, labeled[ref_test])
    np.testing.assert_array_equal(train, np.sort(np.r_[labeled[ref_train], unlabeled]))
  assert estimators.LabeledStratifiedKFold(4).get_n_splits() == 4
  with pytest.raises(ValueError, match="needs y"):
    next(estimators.LabeledStratifiedKFold().split(np.zeros((3, 1)), None))


def test_labeled_folds_keep_a_group_in_one_test_fold():
  """groups (e.g. ``folds.copy_groups``: copies of a row) are honoured, as scikit-learn's
  StratifiedGroupKFold on the labeled rows (reference); they used to be ignored silently."""
  y = np.array([0, 1, -1, 0, 1, -1, 0, 1, 0, 1, -1, 1, 0, -1, 0, 1])
  groups = np.arange(y.size) // 2
  labeled, unlabeled = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
  folds = list(estimators.LabeledStratifiedKFold(3).split(np.zeros((y.size, 1)), y, groups))
  reference = StratifiedGroupKFold(3).split(labeled, y[labeled], groups[labeled])
  for (train, test), (ref_train, ref_test) in zip(folds, reference, strict=True):
    np.testing.assert_array_equal(test, labeled[ref_test])
    np.testing.assert_array_equal(train, np.sort(np.r_[labeled[ref_train], unlabeled]))
    assert not set(groups[test]) & set(groups[np.setdiff1d(train, unlabeled)])
  with pytest.raises(ValueError, match=r"groups must have one entry per row of y \(16,\)"):
    next(estimators.LabeledStratifiedKFold().split(np.zeros((16, 1)), y, groups[:3]))


def test_scikit_learns_strings_are_right_with_labeled_folds_and_wrong_without():
  """scoring="accuracy" counts the unlabeled rows of a test fold wrong (documented; nothing can
  see y there); with LabeledStratifiedKFold it equals our scorer."""
  x, y, _ = _cv_data.semi_ordinal(n=120)
  binary = np.where(np.arange(120) % 4 == 0, -1, (y > 0).astype(int))
  # Fixed hyper-parameters and the direct solver: no "auto" CV, no per-fold compilation.
  model = estimators.QSGS2AUC(random_state=0, lam=1e-3, labeled_weight=0.5, length_scale=1.0,
                              solver="direct")
  folds = estimators.LabeledStratifiedKFold(3)
  # Both scorers on the same fitted fold models (one fit per fold).
  both = cross_validate(model, x, binary, cv=folds,
                        scoring={"ours": estimators.get_scorer("accuracy"), "sklearn": "accuracy"})
  ours = both["test_ours"]
  np.testing.assert_allclose(both["test_sklearn"], ours)
  assert ours.min() > 0.8
  plain = cross_val_score(model, x, binary, cv=StratifiedKFold(3), scoring="accuracy")
  assert plain.max() <= 0.76   # a quarter of each test fold is -1, never predicted


def test_score_takes_a_column_vector_y_as_fit_does():
  """fit accepts y [n, 1] with scikit-learn's DataConversionWarning; so does score (it said
  "y must have shape [n]"). Other 2-D shapes are refused."""
  x, y, _ = _cv_data.semi_ordinal()
  model = estimators.QS3ORAO(unlabeled_label=None, length_scale=1.0, lam=1e-3,
                             labeled_weight=0.5, random_state=0)
  with pytest.warns(DataConversionWarning):
    model.fit(x, y[:, None])
  with pytest.warns(DataConversionWarning):
    assert model.score(x, y[:, None]) == model.score(x, y)
  with pytest.warns(DataConversionWarning):
    assert estimators.accuracy_scorer(model, x, y[:, None]) == estimators.accuracy_scorer(
        model, x, y)
  with pytest.raises(ValueError, match=r"y must have shape \[n\] \(or \[n, 1\]\); received shape "
                                       r"\(90, 2\)"):
    model.score(x, np.c_[y, y])


def test_the_marker_comes_from_the_final_step_and_is_never_a_fitted_class():
  """get_scorer read -1 as the marker of any estimator without unlabeled_label: ROCSVM on its
  -1 / +1 labels scored its positives only (accuracy 0.869 for 0.883), and a Pipeline ignored
  its final step's unlabeled_label. Reference: scikit-learn's metric on every row."""
  from sklearn.pipeline import make_pipeline   # pylint: disable=import-outside-toplevel
  from sklearn.preprocessing import StandardScaler   # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  x = rng.normal(size=(150, 3))
  y = np.where(x[:, 0] + 0.5 * rng.normal(size=150) > 0, 1, -1)
  accuracy = estimators.get_scorer("accuracy")
  for model in (qsg_jax.roc_svm.ROCSVM(random_state=0).fit(x, y),
                make_pipeline(StandardScaler(), estimators.QSGS2AUC(
                    unlabeled_label=None, length_scale=1.0, random_state=0)).fit(x, y)):
    assert accuracy(model, x, y) == pytest.approx(skm.accuracy_score(y, model.predict(x)))
  # A meta-estimator: the marker of the estimator it wraps (GridSearchCV fell back to -1 and
  # refused the 0 rows as an unknown label).
  from sklearn.model_selection import GridSearchCV as Search   # pylint: disable=C0415
  zeros = np.where(np.arange(150) < 100, y, 0)
  search = Search(estimators.QSGS2AUC(unlabeled_label=0, random_state=0),
                  {"length_scale": [1.0]}, cv=2, scoring=estimators.get_scorer("roc_auc"))
  search.fit(x, zeros)
  assert estimators.get_scorer("roc_auc")(search, x, zeros) == pytest.approx(
      skm.roc_auc_score(y[:100], search.decision_function(x[:100])), abs=1e-6)
  # An estimator without a marker whose classes do not hold -1: -1 rows are unlabeled, as before.
  from sklearn.linear_model import LogisticRegression   # pylint: disable=import-outside-toplevel
  semi = np.where(np.arange(150) < 100, (y > 0).astype(int), -1)
  logistic = LogisticRegression().fit(x[:100], semi[:100])
  assert estimators.get_scorer("roc_auc")(logistic, x, semi) == pytest.approx(
      skm.roc_auc_score(semi[:100], logistic.decision_function(x[:100])), abs=1e-6)


def test_integer_labels_held_as_objects_fit_and_score_as_integers():
  """0 / 1 / -1 in an object array (a pandas object column) were refused as an ambiguous -1 by
  the binary estimator's "auto" marker, in fit and in score; now the integers' fit."""
  x, y, _ = _cv_data.semi_ordinal()
  y = np.where(np.arange(y.size) % 3 == 0, -1, (y > 0).astype(int))
  ints = estimators.QSGS2AUC(length_scale=1.0, random_state=0).fit(x, y)
  objects = estimators.QSGS2AUC(length_scale=1.0, random_state=0).fit(x, y.astype(object))
  np.testing.assert_array_equal(objects.classes_, ints.classes_)
  np.testing.assert_array_equal(objects.decision_function(x), ints.decision_function(x))
  assert ints.score(x, y.astype(object)) == ints.score(x, y)
  for name in ("balanced_accuracy", "f1", "average_precision"):   # scikit-learn's own metrics
    scorer = estimators.get_scorer(name)
    assert scorer(ints, x, y.astype(object)) == scorer(ints, x, y)


def test_labeled_folds_take_the_estimators_marker_and_integers_held_as_objects():
  """The folds read unlabeled rows by their own marker (pass the estimator's): "unl" rows never in
  a test fold; fully labeled text is plain stratified folds, without a word; 0 / 1 / -1 held as
  objects split as the integers (were scikit-learn's "unknown label type")."""
  import warnings   # pylint: disable=import-outside-toplevel
  y = np.array(["a", "b", "unl"] * 10)
  folds = estimators.LabeledStratifiedKFold(3, unlabeled_label="unl")
  assert all("unl" not in y[test] for _, test in folds.split(np.zeros((30, 1)), y))
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    plain = list(estimators.LabeledStratifiedKFold(3).split(np.zeros((20, 1)), y[y != "unl"]))
  assert sorted(np.concatenate([test for _, test in plain]).tolist()) == list(range(20))
  semi = np.array([0, 1, -1] * 10)
  as_ints = list(estimators.LabeledStratifiedKFold(3).split(np.zeros((30, 1)), semi))
  as_objects = list(estimators.LabeledStratifiedKFold(3).split(np.zeros((30, 1)),
                                                               semi.astype(object)))
  for (a, b), (c, d) in zip(as_ints, as_objects):
    np.testing.assert_array_equal(a, c)
    np.testing.assert_array_equal(b, d)
