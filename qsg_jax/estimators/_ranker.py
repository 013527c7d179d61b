"""scikit-learn estimators around ``qsg_jax.fit``: ``QS3ORAO`` (k ordered classes), ``QSGS2AUC``.

Semi-supervised data follow scikit-learn's convention (``sklearn.semi_supervised``): one array of
points and one of labels, where ``unlabeled_label`` marks the unlabeled points ("auto": -1 where
-1 cannot be a class; with classes 0, 1, ... pass unlabeled_label=-1 to say so). Fully labeled
``y`` is accepted: the unlabeled risks then have no data, so the fit is supervised (``gamma`` is
irrelevant and taken as 1).

Example:
  model = QS3ORAO(num_steps=256, unlabeled_label=-1).fit(x, y)   # y: classes 0..k-1, -1
  model.predict(x_new), model.decision_function(x_new), model.score(x_test, y_test)

Classes may be any sortable labels; their sorted order is the ordinal order (``classes_``).
Inputs of any scale work: with ``scale_inputs=True`` (default) each feature is min-max scaled to
[0, 1] on the training rows (labeled and unlabeled), the range the default hyper-parameters
assume, and the same map is applied at prediction time. Prediction reads stored frequencies
(``qsg_jax.io.FrozenModel``), so a pickled or saved estimator predicts bit-identically under any
JAX PRNG configuration. A fit that fails leaves a fitted estimator exactly as it was.
"""

import contextlib
import json
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.utils import check_random_state
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data

from qsg_jax import _fit
from qsg_jax import _validation as validation
from qsg_jax import io
from qsg_jax.config import FitConfig
from qsg_jax.estimators import _scorers

# The ``FitConfig`` fields the estimators take as parameters (split corrections are not saved in
# model files; the solver follows ``FitConfig``'s default).
HYPERPARAMS = ("sigma", "lam", "gamma", "step_size", "num_steps", "num_frequencies",
               "unlabeled_batch_size", "labeled_batch_size", "loss")


@contextlib.contextmanager
def fitted_state_kept_on_error(estimator):
  """On an exception, restores every fitted attribute (name ending in "_") as it was before."""
  before = {name: value for name, value in vars(estimator).items() if name.endswith("_")}
  try:
    yield
  except BaseException:
    for name in [n for n in vars(estimator) if n.endswith("_")]:
      delattr(estimator, name)
    vars(estimator).update(before)
    raise


def seed_of(random_state) -> int:
  """An int seed from ``random_state``: an int >= 0 as it is, a RandomState or None drawn."""
  if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
    if random_state < 0:
      raise ValueError(f"random_state must be an int >= 0, a np.random.RandomState or None; "
                       f"received {random_state}.")
    return int(random_state)
  return int(check_random_state(random_state).randint(np.iinfo(np.int32).max))


def check_features(X, name="X"):
  """Short, row-naming errors for the commonest bad X before scikit-learn's ``validate_data``
  (whose messages print the whole array): not 2-D, or NaN / inf. Anything NumPy cannot read as
  numbers (sparse matrices, strings) is left to ``validate_data``."""
  if hasattr(X, "toarray") or hasattr(X, "tocsr"):
    return   # sparse: validate_data says to densify
  try:
    values = validation.as_numbers(X)
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
  values = np.array([validation.as_float(c) for c in classes.tolist()])
  if np.all(np.isfinite(values)) and np.all(np.diff(values) > 0):
    return
  shown = [str(c) for c in classes.tolist()[:6]]
  raise ValueError(f"y's classes are strings ({shown}{'...' if classes.size > 6 else ''}) whose "
                   "sorted order is alphabetical, maybe not the ordinal one. Map them to "
                   "integers in their order first, e.g. y = np.searchsorted(order, y) with "
                   "order = the labels from lowest to highest.")


@io.register
class QS3ORAO(ClassifierMixin, BaseEstimator):
  """Semi-supervised ordinal regression by AUC optimization (QS3ORAO); k = 2 is QSG-S2AUC.

  Hyper-parameters are the fields of ``qsg_jax.FitConfig`` (same names and defaults), plus:
    scale_inputs: min-max scale each feature on the training rows (default True); set False
      only for data already in [0, 1].
    random_state: int seed, ``np.random.RandomState`` or None (a fresh seed per fit, recorded
      in ``seed_``).
    unlabeled_label: the marker of unlabeled rows in ``y``; "auto" (default): -1 where -1 cannot
      be a class; None: every row is labeled.

  ``decision_function`` returns [n] ranking scores; with k = 2 they are f(x) - b (the fitted
  threshold), so that larger means ``classes_[1]`` and ``predict`` is ``decision > 0``. With
  k > 2 they are f(x), one score ordered like ``classes_`` (not one column per class).
  ``score`` is the mean AUC over the k-1 ordinal splits (Eq. 2) on the labeled rows, the papers'
  metric, rather than accuracy.
  """

  def __init__(self, sigma=FitConfig.sigma, lam=FitConfig.lam, gamma=FitConfig.gamma,
               step_size=FitConfig.step_size, num_steps=FitConfig.num_steps,
               num_frequencies=FitConfig.num_frequencies,
               unlabeled_batch_size=FitConfig.unlabeled_batch_size,
               labeled_batch_size=FitConfig.labeled_batch_size, loss=FitConfig.loss,
               scale_inputs=True, random_state=None, unlabeled_label="auto"):
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
    """Trains on labeled rows and unlabeled rows (y == unlabeled_label).

    Args:
      X: [n, d] numeric features (dense; any scale when ``scale_inputs``).
      y: [n] class labels, ``unlabeled_label`` for unlabeled rows.

    Returns:
      self. A failed fit leaves the estimator's fitted state as it was.
    """
    with fitted_state_kept_on_error(self):
      X, unlabeled, classes, codes, (low, scale) = prepare_training_data(self, X, y)
      self._check_classes(classes)
      x = ((X - low) / scale).astype(np.float32)
      seed = seed_of(self.random_state)
      has_unlabeled = bool(unlabeled.any())
      validation.check_gamma(self.gamma, classes.size)   # checked even where unused
      config = FitConfig(**{name: getattr(self, name) for name in HYPERPARAMS})
      result = _fit.fit(x[~unlabeled], codes, x[unlabeled] if has_unlabeled else None,
                        key=seed, num_classes=classes.size,
                        config=config if has_unlabeled else config.replace(gamma=1.0))
      self.input_min_, self.input_scale_, self.seed_ = low, scale, seed
      self.classes_, self.model_ = classes, io.freeze(result)
      self.training_metrics_ = result.metrics
    return self

  def decision_function(self, X) -> np.ndarray:
    """Ranking scores: [n]; binary: f(x) - b, larger = ``classes_[1]``; ordinal: f(x)."""
    check_is_fitted(self)
    check_features(X)
    X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
    x = ((X - self.input_min_) / self.input_scale_).astype(np.float32)
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

    Rows labeled ``unlabeled_label`` are ignored (``qsg_jax.estimators.ordinal_auc_scorer``).
    """
    if sample_weight is not None:
      raise ValueError("sample_weight is not supported by the AUC score; pass None.")
    return _scorers.ordinal_auc_scorer(self, X, y)

  def __sklearn_tags__(self):
    tags = super().__sklearn_tags__()
    tags.input_tags.sparse = False
    tags.non_deterministic = False
    return tags

  def _to_arrays(self):
    """(arrays, metadata) of the fitted state, for ``qsg_jax.io.save``."""
    check_is_fitted(self)
    arrays, meta = io.frozen_arrays(self.model_)
    arrays.update(classes=io.plain_array("classes_", self.classes_),
                  input_min=np.asarray(self.input_min_),
                  input_scale=np.asarray(self.input_scale_))
    if hasattr(self, "feature_names_in_"):
      arrays["feature_names_in"] = io.plain_array("feature_names_in_", self.feature_names_in_)
    params = {}
    for name, value in self.get_params().items():
      if hasattr(value, "dtype") and hasattr(value, "shape"):
        value = np.asarray(value).tolist()   # NumPy / JAX scalars and arrays: as Python values
      try:
        params[name] = json.loads(json.dumps(value))
      except (TypeError, ValueError):   # a schedule callable: not stored
        meta.setdefault("params_not_stored", {})[name] = repr(value)[:200]
        params[name] = None
    meta.update(params=params, seed=int(self.seed_))
    return arrays, meta

  @classmethod
  def _from_arrays(cls, frozen, arrays, meta):
    """The fitted estimator of a model file (``qsg_jax.io.load``)."""
    not_stored = meta.get("params_not_stored", {})
    if not_stored:   # e.g. a callable step_size: the model is whole, a refit would differ
      warnings.warn(f"parameters {sorted(not_stored)} could not be stored (not JSON); they are "
                    "back at their defaults, so a refit (clone().fit) would differ. Set them "
                    "again with set_params before refitting.", UserWarning, stacklevel=3)
    estimator = cls(**{name: value for name, value in meta["params"].items()
                       if name not in not_stored})
    estimator.model_, estimator.classes_, estimator.seed_ = frozen, arrays["classes"], meta["seed"]
    estimator.input_min_, estimator.input_scale_ = arrays["input_min"], arrays["input_scale"]
    estimator.n_features_in_ = int(arrays["input_min"].shape[0])
    if "feature_names_in" in arrays:
      estimator.feature_names_in_ = arrays["feature_names_in"].astype(object)
    return estimator


def prepare_training_data(estimator, X, y):
  """``validate_data`` of (X, y) plus the checks and the input scaling of a QS3ORAO-like fit.

  Sets ``n_features_in_`` / ``feature_names_in_`` (through ``validate_data``; callers restore
  them on error, ``fitted_state_kept_on_error``).

  Returns:
    (X [n, d] float, unlabeled [n] bool, classes [k], codes [n_l] int 0..k-1, (input_min [d],
    input_scale [d]): min-max over all rows when ``estimator.scale_inputs``, else the identity).
  """
  if not isinstance(estimator.scale_inputs, (bool, np.bool_)):
    raise ValueError(f"scale_inputs must be True or False; received {estimator.scale_inputs!r}.")
  check_features(X)
  if y is not None:   # NaN or look-alike markers: a clear error before validate_data's
    validation.unlabeled_mask(np.asarray(y).ravel(), estimator.unlabeled_label)
  with np.errstate(over="ignore", invalid="ignore"):   # its finite check sums huge values
    X, y = validate_data(estimator, X, y, dtype=[np.float64, np.float32])
  unlabeled = validation.unlabeled_mask(y, estimator.unlabeled_label)
  y_labeled = y[~unlabeled]
  check_classification_targets(y_labeled)
  classes, codes = np.unique(y_labeled, return_inverse=True)
  if classes.size < 2:
    raise ValueError(
        f"y has labeled points of only one class ({classes.tolist()}); a ranking needs at "
        f"least 2 classes (unlabeled points are marked {estimator.unlabeled_label!r}).")
  check_ordinal_classes(classes)
  if not estimator.scale_inputs:
    return X, unlabeled, classes, codes, (np.zeros(X.shape[1]), np.ones(X.shape[1]))
  low, high = X.min(axis=0), X.max(axis=0)
  with np.errstate(over="ignore"):
    span = high.astype(np.float64) - low
  if not np.all(np.isfinite(span)):
    c = int(np.argmax(~np.isfinite(span)))
    raise ValueError(f"X's column {c} spans more than float64 holds (min {low[c]:.3g}, max "
                     f"{high[c]:.3g}); rescale it (e.g. divide by 1e300) before fitting.")
  return X, unlabeled, classes, codes, (low, np.where(high > low, span, 1.0))


@io.register
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

