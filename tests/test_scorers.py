"""Scorers that ignore unlabeled rows: against scikit-learn's AUC, and inside GridSearchCV."""

import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.model_selection import GridSearchCV
from sklearn.model_selection import StratifiedKFold
import qsg_jax
from qsg_jax import estimators



class _Fixed:
  """A fitted 'estimator' with given scores, to test the scorers alone."""
  unlabeled_label = -1

  def __init__(self, classes, scores):
    self.classes_ = np.asarray(classes)
    self._scores = np.asarray(scores, np.float32)

  def decision_function(self, x):
    return self._scores[np.asarray(x)[:, 0].astype(int)]


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
  search = GridSearchCV(
      estimators.QS3ORAO(step_size=1.0, num_steps=64, num_frequencies=16, random_state=0,
                         unlabeled_label=-1),
      {"sigma": [1.0, 300.0]},        # 300: a kernel far narrower than the data, deliberately bad
      scoring=qsg_jax.estimators.ordinal_auc_scorer,
      cv=StratifiedKFold(3, shuffle=True, random_state=0))
  search.fit(x, y_semi)
  scores = search.cv_results_["mean_test_score"]
  assert np.all(np.isfinite(scores)), scores
  assert search.best_params_ == {"sigma": 1.0}, scores
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
