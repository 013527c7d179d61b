"""scikit-learn estimators around ``qsg_jax.fit``: ``QS3ORAO`` (k ordered classes), ``QSGS2AUC``.

Semi-supervised data follow scikit-learn's convention (``sklearn.semi_supervised``): one array of
points and one of labels, where ``unlabeled_label`` (default -1) marks the unlabeled points.
Fully labeled ``y`` is accepted: the unlabeled risks then have no data, so the fit is supervised
(``gamma`` is irrelevant and taken as 1).

Example:
  model = QS3ORAO(num_steps=256).fit(x, y)    # y: ordered classes, -1 = unlabeled
  model.predict(x_new), model.decision_function(x_new), model.score(x_test, y_test)

Classes may be any sortable labels; their sorted order is the ordinal order (``classes_``).
Inputs of any scale work: with ``scale_inputs=True`` (default) each feature is min-max scaled to
[0, 1] on the training rows (labeled and unlabeled), the range the default hyper-parameters
assume, and the same map is applied at prediction time. Prediction reads stored frequencies
(``qsg_jax.io.FrozenModel``), so a pickled or saved estimator predicts bit-identically under any
JAX PRNG configuration.
"""

import numbers

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data

from qsg_jax import _validation as validation
from qsg_jax import defaults
from qsg_jax import io
from qsg_jax import scorers
from qsg_jax import training


def _nan_rows(y):
  """[n] bool: entries of ``y`` that are float NaN (also inside object arrays)."""
  if y.dtype.kind == "f":
    return np.isnan(y)
  if y.dtype == object:
    return np.array([isinstance(v, (float, np.floating)) and np.isnan(v) for v in y], bool)
  return np.zeros(y.shape, bool)


def _as_float(value):
  try:
    return float(value)
  except (TypeError, ValueError):
    return np.nan


def _same(value, marker):
  """Whether one label equals the marker, both numbers or both strings (never across types)."""
  if isinstance(marker, str) or isinstance(value, str):
    return isinstance(marker, str) and isinstance(value, str) and value == marker
  return bool(value == marker)


def unlabeled_mask(y, unlabeled_label) -> np.ndarray:
  """[n] bool mask of the rows of ``y`` equal to ``unlabeled_label``, after refusing labels that
  would silently become a class: NaN, or the marker written as another type ("-1" for -1).

  Args:
    y: [n] labels.
    unlabeled_label: the marker of unlabeled rows (scikit-learn's convention: -1).

  Raises:
    ValueError: NaN labels, or the marker in another type (the message names the first row).

  Example:
    >>> unlabeled_mask(np.array([0, -1, 2]), -1).tolist()
    [False, True, False]
  """
  y = np.asarray(y)
  if isinstance(unlabeled_label, (float, np.floating)) and np.isnan(unlabeled_label):
    raise ValueError("unlabeled_label=nan is not supported (NaN equals nothing, not even NaN): "
                     "mark unlabeled rows with -1 instead, e.g. y = np.where(np.isnan(y), -1, y).")
  nan = _nan_rows(y)
  if nan.any():
    raise ValueError(
        f"y contains {int(nan.sum())} NaN labels (first at row {int(np.argmax(nan))}); NaN is "
        f"neither a class nor the unlabeled marker unlabeled_label={unlabeled_label!r}. Mark "
        f"unlabeled rows with {unlabeled_label!r} (or set unlabeled_label), or drop them.")
  if y.dtype.kind in "biuf":
    unlabeled = (np.zeros(y.shape, bool) if isinstance(unlabeled_label, str)
                 else y == unlabeled_label)
    numbers_ = y.astype(float)
  else:
    unlabeled = np.array([_same(v, unlabeled_label) for v in y.tolist()], bool)
    numbers_ = np.array([_as_float(v) for v in y.tolist()], float)
  text = np.char.strip(y.astype(str)) == str(unlabeled_label).strip()
  lookalike = ~unlabeled & (text | (numbers_ == _as_float(unlabeled_label)))
  if lookalike.any():
    r = int(np.argmax(lookalike))
    value = y[r].item() if isinstance(y[r], np.generic) else y[r]
    raise ValueError(
        f"y[{r}] = {value!r} ({type(value).__name__}) looks like the unlabeled marker but "
        f"unlabeled_label={unlabeled_label!r} is a {type(unlabeled_label).__name__}, so it would "
        "become a class. Use one type for both: e.g. y = y.astype(int), or "
        f"unlabeled_label={str(unlabeled_label)!r}.")
  return np.asarray(unlabeled, bool).reshape(y.shape)


def check_features(X, name="X"):
  """Short, row-naming errors for the commonest bad X before scikit-learn's ``validate_data``
  (whose messages print the whole array): not 2-D, or NaN / inf. Anything NumPy cannot read as
  numbers (sparse matrices, strings) is left to ``validate_data``."""
  if hasattr(X, "toarray") or hasattr(X, "tocsr"):
    return   # sparse: validate_data says to densify
  try:
    values = np.asarray(X)
  except (TypeError, ValueError):
    return
  if values.dtype.kind not in "biuf":
    return   # complex, strings, objects: validate_data says what to do
  values = values.astype(np.float64)
  if values.ndim != 2:
    raise ValueError(f"{name} must be 2-D [n_samples, n_features]; received shape "
                     f"{values.shape}. Reshape your data: for one feature use "
                     f"{name}.reshape(-1, 1), for one sample {name}.reshape(1, -1).")
  bad = ~np.isfinite(values)
  if bad.any():
    row, col = (int(i[0]) for i in np.nonzero(bad))
    raise ValueError(f"{name} contains NaN or inf: {int(bad.any(axis=1).sum())} rows, the first "
                     f"at row {row} (column {col}, value {values[row, col]}). Impute or drop "
                     "those rows.")


def check_ordinal_classes(classes):
  """Refuses k > 2 classes given as strings whose sorted (alphabetical) order may not be the
  ordinal one: words ("high" < "low" < "medium") or numbers sorting differently as text
  ("10" < "2"). Numeric strings already in numeric order ("10", "20", "30") are accepted."""
  if classes.size <= 2 or np.issubdtype(classes.dtype, np.number) or classes.dtype == bool or all(
      isinstance(c, numbers.Number) for c in classes.tolist()):
    return
  values = np.array([_as_float(c) for c in classes.tolist()])
  if np.all(np.isfinite(values)) and np.all(np.diff(values) > 0):
    return
  shown = [str(c) for c in classes.tolist()[:6]]
  raise ValueError(f"y's classes are strings ({shown}{'...' if classes.size > 6 else ''}) whose "
                   "sorted order is alphabetical, maybe not the ordinal one. Map them to "
                   "integers in their order first, e.g. y = np.searchsorted(order, y) with "
                   "order = the labels from lowest to highest.")


class QS3ORAO(ClassifierMixin, BaseEstimator):
  """Semi-supervised ordinal regression by AUC optimization (QS3ORAO); k = 2 is QSG-S2AUC.

  Hyper-parameters are those of ``qsg_jax.fit`` (see its docstring), plus:
    scale_inputs: min-max scale each feature on the training rows (default True); set False
      only for data already in [0, 1].
    random_state: int seed, ``np.random.RandomState`` or None (a fresh seed per fit, recorded
      in ``seed_``).
    unlabeled_label: the marker of unlabeled rows in ``y``.

  ``decision_function`` returns [n] ranking scores; with k = 2 they are f(x) - b (the fitted
  threshold), so that larger means ``classes_[1]`` and ``predict`` is ``decision > 0``. With
  k > 2 they are f(x), one score ordered like ``classes_`` (not one column per class).
  ``score`` is the mean AUC over the k-1 ordinal splits (Eq. 2) on the labeled rows, the papers'
  metric, rather than accuracy.
  """

  def __init__(self, sigma=defaults.SIGMA, lam=defaults.LAM, gamma=defaults.GAMMA,
               step_size=defaults.STEP_SIZE, num_steps=defaults.NUM_STEPS,
               num_frequencies=defaults.NUM_FREQUENCIES,
               unlabeled_batch_size=defaults.UNLABELED_BATCH_SIZE,
               labeled_batch_size=defaults.LABELED_BATCH_SIZE, loss=defaults.LOSS,
               scale_inputs=True, random_state=None, unlabeled_label=-1):
    self.sigma = sigma
    self.lam = lam
    self.gamma = gamma
    self.step_size = step_size
    self.num_steps = num_steps
    self.num_frequencies = num_frequencies
    self.unlabeled_batch_size = unlabeled_batch_size
    self.labeled_batch_size = labeled_batch_size
    self.loss = loss
    self.scale_inputs = scale_inputs
    self.random_state = random_state
    self.unlabeled_label = unlabeled_label

  def _check_classes(self, classes):
    """Hook for subclasses restricting the number of classes."""

  def fit(self, X, y):
    """Trains on labeled rows (y != unlabeled_label) and unlabeled rows (y == unlabeled_label).

    Args:
      X: [n, d] numeric features (dense; any scale when ``scale_inputs``).
      y: [n] class labels, ``unlabeled_label`` for unlabeled rows.

    Returns:
      self.
    """
    X, y, unlabeled, classes, codes = prepare_training_data(self, X, y)
    self._check_classes(classes)
    x = self._scaled(X)
    rs = self.random_state
    if isinstance(rs, numbers.Integral) and not isinstance(rs, bool):
      if rs < 0:
        raise ValueError(f"random_state must be an int >= 0, a np.random.RandomState or None; "
                         f"received {rs}.")
      self.seed_ = int(rs)
    else:
      self.seed_ = int(check_random_state(rs).randint(np.iinfo(np.int32).max))
    has_unlabeled = bool(unlabeled.any())
    validation.check_gamma(self.gamma, classes.size)   # checked even where unused (no unlabeled)
    result = training.fit(
        x[~unlabeled], codes, x[unlabeled] if has_unlabeled else None, key=self.seed_,
        num_classes=classes.size, sigma=self.sigma, lam=self.lam,
        gamma=self.gamma if has_unlabeled else 1.0, step_size=self.step_size,
        num_steps=self.num_steps, num_frequencies=self.num_frequencies,
        unlabeled_batch_size=self.unlabeled_batch_size,
        labeled_batch_size=self.labeled_batch_size, loss=self.loss)
    self.classes_ = classes
    self.model_ = io.freeze(result)
    self.training_metrics_ = result.metrics
    return self

  def _scaled(self, X):
    return ((X - self.input_min_) / self.input_scale_).astype(np.float32)

  def decision_function(self, X) -> np.ndarray:
    """Ranking scores: [n]; binary: f(x) - b, larger = ``classes_[1]``; ordinal: f(x)."""
    check_is_fitted(self)
    check_features(X)
    X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
    x = self._scaled(X)
    scores = io.frozen_scores(self.model_, io.check_phases(self.model_, x, "X (scaled)"))
    if self.classes_.size == 2:
      scores = scores - self.model_.thresholds[0]
    return scores

  def predict(self, X) -> np.ndarray:
    """Predicted classes (from ``classes_``) by the fitted thresholds: [n]."""
    scores = self.decision_function(X)
    if self.classes_.size == 2:
      return self.classes_[(scores > 0).astype(int)]
    return self.classes_[np.sum(scores[:, None] > self.model_.thresholds[None, :], axis=1)]

  def score(self, X, y, sample_weight=None) -> float:
    """Mean AUC over the k-1 ordinal splits on the labeled rows of (X, y); binary AUC if k = 2.

    Rows labeled ``unlabeled_label`` are ignored (``qsg_jax.scorers.ordinal_auc_scorer``).
    """
    if sample_weight is not None:
      raise ValueError("sample_weight is not supported by the AUC score; pass None.")
    return scorers.ordinal_auc_scorer(self, X, y)

  def __sklearn_tags__(self):
    tags = super().__sklearn_tags__()
    tags.input_tags.sparse = False
    tags.non_deterministic = False
    return tags


def prepare_training_data(estimator, X, y):
  """``validate_data`` of (X, y) plus the checks and the input scaling of a QS3ORAO-like fit.

  Sets ``estimator.input_min_`` / ``input_scale_`` (min-max over all rows when
  ``estimator.scale_inputs``, else the identity) and, through ``validate_data``,
  ``n_features_in_`` / ``feature_names_in_``.

  Returns:
    (X [n, d] float, y [n], unlabeled [n] bool, classes [k], codes [n_l] int 0..k-1).
  """
  if not isinstance(estimator.scale_inputs, (bool, np.bool_)):
    raise ValueError(f"scale_inputs must be True or False; received {estimator.scale_inputs!r}.")
  check_features(X)
  if y is not None:   # NaN or look-alike markers: a clear error before validate_data's
    unlabeled_mask(np.asarray(y).ravel(), estimator.unlabeled_label)
  with np.errstate(over="ignore", invalid="ignore"):   # its finite check sums huge values
    X, y = validate_data(estimator, X, y, dtype=[np.float64, np.float32])
  unlabeled = unlabeled_mask(y, estimator.unlabeled_label)
  y_labeled = y[~unlabeled]
  check_classification_targets(y_labeled)
  classes, codes = np.unique(y_labeled, return_inverse=True)
  if classes.size < 2:
    raise ValueError(
        f"y has labeled points of only one class ({classes.tolist()}); a ranking needs at "
        f"least 2 classes (unlabeled points are marked {estimator.unlabeled_label!r}).")
  check_ordinal_classes(classes)
  if estimator.scale_inputs:
    low, high = X.min(axis=0), X.max(axis=0)
    with np.errstate(over="ignore"):
      span = high.astype(np.float64) - low
    if not np.all(np.isfinite(span)):
      c = int(np.argmax(~np.isfinite(span)))
      raise ValueError(f"X's column {c} spans more than float64 holds (min {low[c]:.3g}, max "
                       f"{high[c]:.3g}); rescale it (e.g. divide by 1e300) before fitting.")
    estimator.input_min_, estimator.input_scale_ = low, np.where(high > low, span, 1.0)
  else:
    estimator.input_min_, estimator.input_scale_ = np.zeros(X.shape[1]), np.ones(X.shape[1])
  return X, y, unlabeled, classes, codes


class QSGS2AUC(QS3ORAO):
  """Semi-supervised binary AUC maximization (QSG-S2AUC): ``QS3ORAO`` restricted to 2 classes."""

  def _check_classes(self, classes):
    if classes.size != 2:
      raise ValueError(f"Only binary classification is supported. The type of the target is "
                       f"multiclass: QSGS2AUC needs exactly 2 labeled classes; found "
                       f"{classes.size}: {classes.tolist()[:10]}. Use QS3ORAO for k ordered "
                       "classes.")

  def __sklearn_tags__(self):
    tags = super().__sklearn_tags__()
    tags.classifier_tags.multi_class = False
    return tags
