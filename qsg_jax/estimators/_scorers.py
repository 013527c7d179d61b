"""Scorers and folds for model selection on semi-supervised labels: unlabeled rows never scored.

Each scorer is a callable ``scorer(estimator, X, y) -> float`` (larger is better), the form
``GridSearchCV(scoring=...)`` and ``cross_val_score`` take. It scores the rows of y that are
labeled and ignores those marked unlabeled (the estimator's ``unlabeled_label``, a
``Pipeline``'s final step's; -1 for an estimator without one, unless -1 is one of its classes).
Why scikit-learn's own scoring strings cannot, and which to use instead: the docstring of
``qsg_jax.estimators``.
"""

import numpy as np
from sklearn import metrics as skmetrics
from sklearn.model_selection import StratifiedGroupKFold
from sklearn.model_selection import StratifiedKFold
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import column_or_1d

from qsg_jax import _validation as validation
from qsg_jax import metrics
from qsg_jax.estimators import _params

__docformat__ = "numpy"


def _check_estimator(name, estimator, method="decision_function"):
  """Raises TypeError for a non-estimator, scikit-learn's NotFittedError for an unfitted one."""
  if not callable(getattr(estimator, method, None)):
    raise TypeError(f"{name} scores an estimator with {method} and classes_ (e.g. a fitted "
                    f"QS3ORAO or QSGS2AUC); received {type(estimator).__name__:.60}. Call it as "
                    f"{name}(estimator, X, y).")
  if callable(getattr(estimator, "fit", None)):
    check_is_fitted(estimator)   # NotFittedError, saying to call fit first
  if not hasattr(estimator, "classes_"):
    raise TypeError(f"{name} needs a fitted classifier or ordinal ranker with classes_; "
                    f"{type(estimator).__name__:.60} has none.")


def _num_rows(X):
  shape = getattr(X, "shape", None)
  return int(shape[0]) if shape is not None and len(shape) else len(X)


def _rows(X, mask):
  """The rows of X where ``mask``, keeping a DataFrame a DataFrame (its column names count)."""
  if hasattr(X, "iloc"):
    return X.iloc[np.nonzero(mask)[0]]
  return np.asarray(X)[mask]


def labeled_rows(estimator, X, y):
  """(X, y) of the rows of y not marked unlabeled by ``estimator`` (its ``unlabeled_label``,
  "auto" decided against its fitted ``classes_``; ``_params.unlabeled_marker``)."""
  X, y, _ = _labeled(estimator, X, y)
  return X, y


def _labels(y, warn=True):
  """[n] labels ``y`` as fit reads them: a column vector (a one-column frame) raveled (``warn``:
  with fit's DataConversionWarning; scikit-learn's folds ravel without one), numbers held as
  objects unboxed (ints, as in fit), a list mixing numbers and text kept so."""
  validation.refuse_unreadable("y", y)   # a masked y: its mask would be read through
  y = validation.unbox_numbers(np.asarray(validation.keep_label_types(y)))
  if y.ndim == 2 and y.shape[1] == 1:   # a column vector: as fit takes it (validate_data)
    y = column_or_1d(y, warn=warn)
  if y.ndim != 1:
    raise ValueError(f"y must have shape [n] (or [n, 1]); received shape {y.shape}.")
  return y


def _labeled(estimator, X, y):
  """``labeled_rows`` and the [n] bool mask of those rows."""
  given, y = y, _labels(y)
  if y.shape[0] != _num_rows(X):
    raise ValueError(f"y has {y.shape[0]} labels but X has {_num_rows(X)} rows; pass one label "
                     "per row of X (the estimator's unlabeled_label on unlabeled rows).")
  classes = getattr(estimator, "classes_", None)
  marker = _params.unlabeled_marker(estimator, y, classes)
  labeled = ~validation.unlabeled_mask(y, marker, classes, given=given)
  if not labeled.any():
    raise ValueError("every row of y is unlabeled: a score needs labeled rows.")
  if classes is not None:   # a label no class has (a typo, another encoding): refused, not a miss
    class_codes(np.asarray(classes), y[labeled], "y")
  return _rows(X, labeled), y[labeled], labeled


def _labeled_codes(estimator, X, y, sample_weight=None):
  """(X, codes 0..k-1, k, weights or None) of the labeled rows of (X, y), coded by
  ``estimator.classes_``; ``sample_weight`` [n] checked, then kept on those rows."""
  X, y, labeled = _labeled(estimator, X, y)
  classes = np.asarray(estimator.classes_)
  weights = validation.check_sample_weight(sample_weight, labeled.size)
  return (X, class_codes(classes, y, "y"), classes.size,
          None if weights is None else weights[labeled])


def class_codes(classes, values, name):
  """Positions of ``values`` in ``classes`` (their ordinal ranks: ``classes`` is in ordinal
  order, sorted or an ordered Categorical's), or an error naming labels outside them."""
  values = np.asarray(values)
  try:
    order = np.argsort(classes, kind="stable")
    at = np.minimum(np.searchsorted(classes[order], values), classes.size - 1)
    known = np.asarray(classes[order][at] == values, bool)
    codes = order[at]
    if known.shape != values.shape:   # NumPy gave up comparing element-wise
      raise TypeError
  except TypeError:   # labels of another type than the classes (ints against text): NumPy
    position = {c: i for i, c in enumerate(classes.tolist())}   # cannot sort them together;
    found = [position.get(v) for v in values.tolist()]          # by value, they match none
    known = np.array([f is not None for f in found], bool)
    codes = np.array([-1 if f is None else f for f in found], np.int64)
  if not known.all():
    unknown = validation.distinct_values(values[~known])
    raise ValueError(f"{name} contains labels {unknown[:5]} outside the fitted classes "
                     f"{classes.tolist()[:10]} (nor the unlabeled marker).")
  return codes


def ordinal_auc_scorer(estimator, X, y, sample_weight=None) -> float:
  """Mean AUC over the k-1 ordinal splits {y <= j} vs {y > j} on the labeled rows (Eq. 2).

  Splits with no labeled row (of weight > 0) on one side are left out of the mean; binary
  problems (k = 2) get the ordinary AUC. With ``sample_weight``, each split's AUC weighs a pair
  by the product of its rows' weights (scikit-learn's ``roc_auc_score(sample_weight=...)``).

  Parameters
  ----------
  estimator : fitted estimator with ``decision_function`` and ``classes_``
  X : array-like of shape (n_samples, n_features)
  y : array-like of shape (n_samples,)
      Labels, the estimator's ``unlabeled_label`` on unlabeled rows.
  sample_weight : array-like of shape (n_samples,), optional
      Weights >= 0 of the rows (those of unlabeled rows are not used).

  Returns
  -------
  float in [0, 1]

  Raises
  ------
  ValueError
      No labeled row, labels outside ``classes_``, y and X of different lengths, or no split
      with both sides.
  TypeError
      ``estimator`` is not an estimator with ``decision_function`` and ``classes_``.
  sklearn.exceptions.NotFittedError
      ``estimator`` is not fitted.
  """
  _check_estimator("ordinal_auc_scorer", estimator)
  X, codes, k, weights = _labeled_codes(estimator, X, y, sample_weight)
  scores = np.asarray(estimator.decision_function(X))
  if weights is None:
    per_split = np.asarray(metrics.split_aucs(scores, codes, k))
  else:
    per_split = np.array([
        skmetrics.roc_auc_score(codes > j, scores, sample_weight=weights)
        if weights[codes > j].sum() > 0 and weights[codes <= j].sum() > 0 else np.nan
        for j in range(k - 1)])
  if np.isnan(per_split).all():
    counted = codes if weights is None else codes[weights > 0]
    raise ValueError(f"the labeled rows of y{'' if weights is None else ' with weight > 0'} "
                     f"all belong to one class ({np.unique(counted)}"
                     " as codes of classes_): no split has both sides, so there is no AUC.")
  return float(np.nanmean(per_split))


def auc_scorer(estimator, X, y, sample_weight=None) -> float:
  """Binary AUC of ``decision_function`` on the labeled rows (``classes_[1]`` positive).

  scikit-learn's "roc_auc" restricted to the labeled rows; refuses k > 2 classes (use
  ``ordinal_auc_scorer``). Arguments, result and errors: as ``ordinal_auc_scorer``.
  """
  _check_estimator("auc_scorer", estimator)
  if len(estimator.classes_) != 2:
    raise ValueError(f"auc_scorer is for binary estimators; this one has "
                     f"{len(estimator.classes_)} classes. Use ordinal_auc_scorer.")
  return ordinal_auc_scorer(estimator, X, y, sample_weight)


def accuracy_scorer(estimator, X, y) -> float:
  """Fraction of the labeled rows whose ``predict`` equals y (scikit-learn's "accuracy" on the
  labeled rows). Arguments and errors: as ``ordinal_auc_scorer``, with ``predict``."""
  _check_estimator("accuracy_scorer", estimator, "predict")
  X, y = labeled_rows(estimator, X, y)
  return float(np.mean(np.asarray(estimator.predict(X)) == y))


def neg_mae_scorer(estimator, X, y) -> float:
  """Minus the mean absolute error of ``predict`` on the labeled rows, counted in classes: the
  distance between the ranks (positions in ``classes_``) of the predicted and the true class.

  The papers' MAE, negated so that larger is better (scikit-learn's "neg_mean_absolute_error",
  which equals it for classes 0, 1, ..., k-1; it would use the label values otherwise).
  Arguments and errors: as ``ordinal_auc_scorer``, with ``predict``.
  """
  _check_estimator("neg_mae_scorer", estimator, "predict")
  X, codes, _, _ = _labeled_codes(estimator, X, y)
  classes = np.asarray(estimator.classes_)
  predicted = class_codes(classes, np.asarray(estimator.predict(X)), "predict(X)")
  return -float(np.mean(np.abs(predicted - codes)))


SCORERS = {"roc_auc": auc_scorer, "ordinal_auc": ordinal_auc_scorer,
           "accuracy": accuracy_scorer, "neg_mean_absolute_error": neg_mae_scorer}


class LabeledRowsScorer:
  """A scikit-learn scorer applied to the labeled rows only (``get_scorer``'s wrapper)."""

  def __init__(self, scorer):
    self.scorer = scorer

  def __call__(self, estimator, X, y, **kwargs):
    X, y = labeled_rows(estimator, X, y)
    return self.scorer(estimator, X, y, **kwargs)

  def __repr__(self):
    return f"LabeledRowsScorer({self.scorer!r})"


def get_scorer(scoring):
  """The scorer of a scikit-learn scoring name that ignores rows marked unlabeled.

  Parameters
  ----------
  scoring : str or callable
      "roc_auc", "accuracy", "neg_mean_absolute_error" and "ordinal_auc" give this module's
      scorers (table above); any other name of ``sklearn.metrics.get_scorer_names()``, or a
      scorer callable(estimator, X, y), is applied to the labeled rows only.

  Returns
  -------
  callable(estimator, X, y) -> float, for ``GridSearchCV(scoring=...)``, ``cross_val_score``.
  A dict ``{name: get_scorer(name) for name in names}`` scores several metrics at once.

  Examples
  --------
  >>> get_scorer("roc_auc") is auc_scorer
  True
  >>> get_scorer("balanced_accuracy")
  LabeledRowsScorer(make_scorer(balanced_accuracy_score, response_method='predict'))
  """
  if isinstance(scoring, str) and scoring in SCORERS:
    return SCORERS[scoring]
  if isinstance(scoring, str):
    try:
      scoring = skmetrics.get_scorer(scoring)
    except ValueError as e:
      raise ValueError(f"{scoring!r} is not a scoring name: use one of {sorted(SCORERS)} or of "
                       "sklearn.metrics.get_scorer_names().") from e
  if not callable(scoring):
    raise TypeError(f"scoring must be a name or a scorer callable(estimator, X, y); received "
                    f"{type(scoring).__name__} {scoring!r:.60}.")
  return LabeledRowsScorer(scoring)


class LabeledStratifiedKFold:
  """Stratified k folds of the labeled rows; every unlabeled row trains in every fold and is
  never tested.

  With it as ``cv``, scikit-learn's own scoring strings are right on semi-supervised y (no test
  fold holds the unlabeled marker), and each fold trains on all unlabeled rows, as the papers'
  cross-validation does (``qsg_jax.model_selection.cross_validate``).

  Parameters
  ----------
  n_splits : int, default=5
      Number of folds (each labeled class needs at least that many rows).
  unlabeled_label : int, str or None, default=-1
      The marker of unlabeled rows in y; None: every row is labeled (plain stratified folds).
      Pass the estimator's own marker when it is not -1 (``QSGS2AUC(unlabeled_label="u")``:
      ``LabeledStratifiedKFold(unlabeled_label="u")``): a marker that marks no row makes every
      row labeled, and scikit-learn's scoring strings then score the unlabeled rows too.
  shuffle, random_state
      As ``sklearn.model_selection.StratifiedKFold`` (on the labeled rows).

  ``split(X, y, groups)`` with groups keeps each group's labeled rows in one test fold
  (``sklearn.model_selection.StratifiedGroupKFold`` on the labeled rows), e.g. copies of a row:
  ``groups=qsg_jax.folds.copy_groups(X, y)``. Without groups copies may land in different folds,
  and a held-out row's copy then trains the model that scores it.

  Examples
  --------
  >>> y = np.array([0, 1, -1, 0, 1, -1, 0, 1])
  >>> [test.tolist() for _, test in LabeledStratifiedKFold(3).split(np.zeros((8, 1)), y)]
  [[0, 1], [3, 4], [6, 7]]
  >>> next(LabeledStratifiedKFold(3).split(np.zeros((8, 1)), y))[0].tolist()
  [2, 3, 4, 5, 6, 7]
  """

  def __init__(self, n_splits=5, *, unlabeled_label=-1, shuffle=False, random_state=None):
    self.n_splits = n_splits
    self.unlabeled_label = unlabeled_label
    self.shuffle = shuffle
    self.random_state = random_state

  def split(self, X, y, groups=None):  # pylint: disable=unused-argument  (scikit-learn's API)
    """Yields (train indices, test indices) for each fold (``groups``: the class docstring)."""
    if y is None:
      raise ValueError("LabeledStratifiedKFold needs y (the labels with the unlabeled marker).")
    given, y = y, _labels(y, warn=False)
    if X is not None and _num_rows(X) != y.shape[0]:   # rows beyond y: no fold
      raise ValueError(f"Found input variables with inconsistent numbers of samples: "
                       f"[{_num_rows(X)}, {y.shape[0]}]: X has {_num_rows(X)} rows and y "
                       f"{y.shape[0]} labels; pass one label per row of X (the marker "
                       f"{self.unlabeled_label!r} on unlabeled rows).")
    unlabeled = validation.unlabeled_mask(y, self.unlabeled_label, given=given)
    labeled, rest = np.flatnonzero(~unlabeled), np.flatnonzero(unlabeled)
    if not labeled.size:
      raise ValueError(f"y has no labeled rows: all {y.size} rows are marked unlabeled "
                       f"({self.unlabeled_label!r}); the folds test labeled rows only. Label "
                       "some rows, or pass the marker your y uses as unlabeled_label.")
    n_splits = validation.check_count("n_splits", self.n_splits, minimum=2)
    if n_splits > labeled.size:
      raise ValueError(f"n_splits={n_splits} exceeds the {labeled.size} labeled rows of y (the "
                       f"{rest.size} unlabeled rows are never tested): each fold tests at least "
                       f"one labeled row. Use n_splits <= {labeled.size}, or label more rows.")
    splitter = StratifiedKFold if groups is None else StratifiedGroupKFold
    folds = splitter(n_splits, shuffle=self.shuffle, random_state=self.random_state)
    if groups is not None:
      validation.refuse_masked("groups", groups)
      groups = np.asarray(groups)
      if groups.shape != y.shape:
        raise ValueError(f"groups must have one entry per row of y {y.shape}; received shape "
                         f"{groups.shape}.")
      groups = groups[labeled]
    # numbers beside a text marker: numbers (scikit-learn's "unknown" type as objects), as in fit
    for train, test in folds.split(labeled, validation.unbox_numbers(y[labeled]), groups):
      yield np.sort(np.concatenate([labeled[train], rest])), labeled[test]

  def get_n_splits(self, X=None, y=None, groups=None):  # pylint: disable=unused-argument
    """The number of folds."""
    return self.n_splits

  def __repr__(self):
    return (f"LabeledStratifiedKFold(n_splits={self.n_splits}, unlabeled_label="
            f"{self.unlabeled_label!r}, shuffle={self.shuffle}, random_state={self.random_state})")
