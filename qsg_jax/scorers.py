"""Scorers for model selection on semi-supervised labels: rows marked unlabeled are ignored.

Each scorer is a callable ``scorer(estimator, X, y) -> float`` (larger is better), the form
``sklearn.model_selection.GridSearchCV(scoring=...)`` and ``cross_val_score`` take, so that a
grid search on semi-supervised ``y`` (unlabeled rows marked -1) scores each fold on its labeled
rows instead of failing or returning NaN:

  search = GridSearchCV(QS3ORAO(), {"sigma": [0.1, 1.0]}, scoring=ordinal_auc_scorer)

The unlabeled marker is the estimator's ``unlabeled_label`` (default -1). Scores come from
``estimator.decision_function``; labels are matched to ``estimator.classes_`` (sorted = ordinal
order; binary: ``classes_[1]`` is positive).
"""

import numpy as np

from qsg_jax import metrics


def _labeled_codes(estimator, X, y):
  """(X, codes 0..k-1) of the labeled rows of (X, y), coded by ``estimator.classes_``."""
  from qsg_jax import estimators   # pylint: disable=g-import-not-at-top  (estimators use us)
  y = np.asarray(y)
  if y.ndim != 1:
    raise ValueError(f"y must have shape [n]; received shape {y.shape}.")
  labeled = ~estimators.unlabeled_mask(y, getattr(estimator, "unlabeled_label", -1))
  if not labeled.any():
    raise ValueError("every row of y is unlabeled: an AUC needs labeled rows to score.")
  classes = np.asarray(estimator.classes_)
  y_labeled = y[labeled]
  codes = np.searchsorted(classes, y_labeled)
  known = (codes < classes.size) & (classes[np.minimum(codes, classes.size - 1)] == y_labeled)
  if not known.all():
    unknown = np.unique(y_labeled[~known])
    raise ValueError(f"y contains labels {unknown.tolist()[:5]} outside the fitted classes "
                     f"{classes.tolist()[:10]} (nor the unlabeled marker).")
  return _rows(X, labeled), codes, classes.size


def _rows(X, mask):
  """The rows of X where ``mask``, keeping a DataFrame a DataFrame (its column names count)."""
  if hasattr(X, "iloc"):
    return X.iloc[np.nonzero(mask)[0]]
  return np.asarray(X)[mask]


def ordinal_auc_scorer(estimator, X, y) -> float:
  """Mean AUC over the k-1 ordinal splits {y <= j} vs {y > j} on the labeled rows (Eq. 2).

  Splits with no labeled row on one side are left out of the mean; binary problems (k = 2) get
  the ordinary AUC.

  Args:
    estimator: fitted estimator with ``decision_function`` and ``classes_``.
    X: [n, d] points.
    y: [n] labels, the estimator's ``unlabeled_label`` on unlabeled rows.

  Returns:
    Python float in [0, 1].

  Raises:
    ValueError: no labeled row, labels outside ``classes_``, or no split with both sides.
  """
  X, codes, k = _labeled_codes(estimator, X, y)
  scores = np.asarray(estimator.decision_function(X))
  per_split = np.asarray(metrics.ordinal_auc_per_split(scores, codes, k))
  if np.isnan(per_split).all():
    raise ValueError(f"the labeled rows of y all belong to one class ({np.unique(codes)}"
                     " as codes of classes_): no split has both sides, so there is no AUC.")
  return float(np.nanmean(per_split))


def auc_scorer(estimator, X, y) -> float:
  """Binary AUC on the labeled rows (``classes_[1]`` positive); refuses k > 2 classes.

  Args:
    estimator: fitted binary estimator with ``decision_function`` and ``classes_``.
    X: [n, d] points.
    y: [n] labels, the estimator's ``unlabeled_label`` on unlabeled rows.

  Returns:
    Python float in [0, 1].
  """
  if len(estimator.classes_) != 2:
    raise ValueError(f"auc_scorer is for binary estimators; this one has "
                     f"{len(estimator.classes_)} classes. Use ordinal_auc_scorer.")
  return ordinal_auc_scorer(estimator, X, y)
