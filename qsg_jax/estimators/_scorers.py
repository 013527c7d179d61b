"""Scorers for model selection on semi-supervised labels: rows marked unlabeled are ignored.

Each scorer is a callable ``scorer(estimator, X, y) -> float`` (larger is better), the form
``sklearn.model_selection.GridSearchCV(scoring=...)`` and ``cross_val_score`` take, so that a
grid search on semi-supervised ``y`` (unlabeled rows marked -1) scores each fold on its labeled
rows instead of failing or returning NaN:

  search = GridSearchCV(QS3ORAO(), {"sigma": [0.1, 1.0]}, scoring=ordinal_auc_scorer)

The unlabeled marker is the estimator's ``unlabeled_label`` ("auto": -1 where -1 is no fitted class
and cannot be one below class 0, ``qsg_jax._validation.unlabeled_mask``). Scores come from
``estimator.decision_function``; labels are matched to ``estimator.classes_`` (sorted = ordinal
order; binary: ``classes_[1]`` is positive).
"""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from qsg_jax import _validation as validation
from qsg_jax import metrics


def _check_estimator(name, estimator):
  """Raises TypeError for a non-estimator, scikit-learn's NotFittedError for an unfitted one."""
  if not callable(getattr(estimator, "decision_function", None)):
    raise TypeError(f"{name} scores an estimator with decision_function and classes_ (e.g. a "
                    f"fitted QS3ORAO or QSGS2AUC); received {type(estimator).__name__:.60}. Call "
                    f"it as {name}(estimator, X, y).")
  if callable(getattr(estimator, "fit", None)):
    check_is_fitted(estimator)   # NotFittedError, saying to call fit first
  if not hasattr(estimator, "classes_"):
    raise TypeError(f"{name} needs a fitted classifier or ordinal ranker with classes_; "
                    f"{type(estimator).__name__:.60} has none.")


def _num_rows(X):
  shape = getattr(X, "shape", None)
  return int(shape[0]) if shape is not None and len(shape) else len(X)


def _labeled_codes(estimator, X, y):
  """(X, codes 0..k-1) of the labeled rows of (X, y), coded by ``estimator.classes_``."""
  y = np.asarray(y)
  if y.ndim != 1:
    raise ValueError(f"y must have shape [n]; received shape {y.shape}.")
  if y.shape[0] != _num_rows(X):
    raise ValueError(f"y has {y.shape[0]} labels but X has {_num_rows(X)} rows; pass one label "
                     "per row of X (the estimator's unlabeled_label on unlabeled rows).")
  classes = np.asarray(estimator.classes_)
  labeled = ~validation.unlabeled_mask(y, getattr(estimator, "unlabeled_label", -1), classes)
  if not labeled.any():
    raise ValueError("every row of y is unlabeled: an AUC needs labeled rows to score.")
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
    ValueError: no labeled row, labels outside ``classes_``, y and X of different lengths, or no
      split with both sides.
    TypeError: ``estimator`` is not an estimator with ``decision_function`` and ``classes_``.
    sklearn.exceptions.NotFittedError: ``estimator`` is not fitted.
  """
  _check_estimator("ordinal_auc_scorer", estimator)
  X, codes, k = _labeled_codes(estimator, X, y)
  scores = np.asarray(estimator.decision_function(X))
  per_split = np.asarray(metrics.split_aucs(scores, codes, k))
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

  Raises:
    ValueError, TypeError, NotFittedError: as ``ordinal_auc_scorer``; also for k > 2 classes.
  """
  _check_estimator("auc_scorer", estimator)
  if len(estimator.classes_) != 2:
    raise ValueError(f"auc_scorer is for binary estimators; this one has "
                     f"{len(estimator.classes_)} classes. Use ordinal_auc_scorer.")
  return ordinal_auc_scorer(estimator, X, y)
