"""scikit-learn estimators around ``qsg_jax.fit``: ``QS3ORAO`` (k ordered classes), ``QSGS2AUC``.

Semi-supervised data follow scikit-learn's convention (``sklearn.semi_supervised``): one array of
points and one of labels, where ``unlabeled_label`` marks the unlabeled points. Fully labeled
``y`` is accepted: the unlabeled risks then have no data, so the fit is supervised
(``labeled_weight`` is irrelevant and taken as 1). Classes may be any sortable labels; their
sorted order is the ordinal order (``classes_``), except for y an ordered pandas Categorical
of k > 2 classes, whose categories state the order (k > 2 text labels otherwise are refused:
their alphabetical order is rarely the ordinal one; two classes are always sorted, as
scikit-learn's binary scorers assume). Parameters, attributes and examples: the class
docstrings (``help(QS3ORAO)``); the names against ``FitConfig``'s: ``_params``.

Prediction reads stored frequencies (``qsg_jax.io.FrozenModel``), so a pickled or saved
estimator predicts bit-identically under any JAX PRNG configuration. A fit that fails leaves a
fitted estimator exactly as it was.
"""

import json
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.exceptions import NotFittedError
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted
from sklearn.utils.validation import validate_data

from qsg_jax import _fit
from qsg_jax import _validation as validation
from qsg_jax import config as config_lib
from qsg_jax import folds
from qsg_jax import io
from qsg_jax import thresholds
from qsg_jax.config import FitConfig
from qsg_jax.data import preprocessing
from qsg_jax.direct import ApproximationWarning
from qsg_jax.errors import UnscaledFeaturesWarning
from qsg_jax.estimators import _auto
from qsg_jax.estimators import _params
from qsg_jax.estimators import _scorers
from qsg_jax.estimators._params import DEPRECATED

__docformat__ = "numpy"

# The ``FitConfig`` fields the estimators take as they are (sigma, gamma and step_size are
# renamed and lam may be "auto", ``_params``; split corrections are not saved in model files).
HYPERPARAMS = ("num_steps", "num_frequencies", "unlabeled_batch_size", "labeled_batch_size",
               "loss", "solver")
# The values a fit chose or used, stored as fitted attributes and in model files.
CHOSEN = ("length_scale_", "lam_", "labeled_weight_", "solver_")
# The fitted state of ``probability=True``; its out-of-fold scores come from at most this many
# folds (scikit-learn's SVC: 5).
PROBABILITY = ("probability_slope_", "probability_cutpoints_")
PROBABILITY_FOLDS = 5
# The model file's arrays of ``training_metrics_`` (DSG's per-step "eta", "max_abs_score").
METRIC_PREFIX = "training_metrics."

# scikit-learn tools that re-encode y as 0..K-1 before fitting the estimator: -1 becomes class 0.
ENCODING_TOOLS = ("cross_val_predict, BaggingClassifier, StackingClassifier, VotingClassifier, "
                  "CalibratedClassifierCV")


def check_ordinal_classes(classes, marker=None, auto=False):
  """Refuses k > 2 classes given as strings whose sorted (alphabetical) order may not be the
  ordinal one: words ("high" < "low" < "medium") or numbers sorting differently as text
  ("10" < "2"). Numeric strings already in numeric order ("10", "20", "30") are accepted.
  ``marker``: that of the rows marked unlabeled, None where none is (the advised categories
  keep it: pd.Categorical makes values outside them NaN); ``auto``: unlabeled_label is "auto"
  and marks no row (the message asks whether one of the classes is the marker)."""
  if not validation.order_unstated(classes):
    return
  shown = [str(c) for c in classes.tolist()[:6]]
  categories, then = "order", (". If one marks unlabeled rows, pass it as unlabeled_label"
                               if auto else "")
  if marker is not None:
    categories, then = f"[*order, {marker!r}]", " (the marker, a category too, stays unlabeled)"
  raise ValueError(f"y's classes are strings ({shown}{'...' if classes.size > 6 else ''}) whose "
                   "sorted order is alphabetical, maybe not the ordinal one. State it: "
                   f"y = pd.Categorical(y, categories={categories}, ordered=True), order = the "
                   f"classes from lowest to highest{then}.")


APART = 10.0   # a class farther than this many spans of the others from them: a missing code


def apart_class(classes):
  """The one numeric class of k >= 3 that lies farther from the others than ``APART`` times
  their span (at least 1): -999 beside 0 / 1, 99 beside 1..5, a missing-value code of a survey
  file rather than an ordered class; None where no class does (or the classes are not
  numbers)."""
  if classes.size < 3 or classes.dtype.kind not in "iuf":
    return None
  values = np.sort(classes.astype(np.float64))
  for value, others in ((values[0], values[1:]), (values[-1], values[:-1])):
    if abs(value - others[0 if value < others[0] else -1]) > APART * max(
        1.0, others[-1] - others[0]):
      found = classes[classes.astype(np.float64) == value][0]
      return found.item() if isinstance(found, np.generic) else found
  return None


def warn_if_apart(classes):
  """A ``UserWarning`` where a class lies apart from the others (``apart_class``): it becomes an
  ordered class (``classes`` in their ordinal order), and no rows of it are unlabeled (sweep
  Z10: -999 on the unlabeled rows, 51 % of rows predicted -999). Only under
  ``unlabeled_label="auto"``: a marker the user names (or None) says that the class is one."""
  value = apart_class(classes)
  if value is not None:
    place = int(np.flatnonzero(classes == value)[0])
    where = ("the lowest ordered class" if place == 0 else "the highest ordered class"
             if place == classes.size - 1 else f"ordered class {place + 1} of {classes.size}")
    warnings.warn(
        f"y's class {value!r} lies far from the others ({validation.summarize(classes.tolist(), 6)}"
        f"), as a missing-value code does; it is trained as {where}. If {value!r} marks "
        f"unlabeled rows, pass unlabeled_label={value!r}; if it is a class, name the marker "
        "(unlabeled_label=-1, or None when every row is labeled) to say so.", UserWarning,
        stacklevel=validation.outside_stacklevel())


# The fitted attributes of QS3ORAO and QSGS2AUC (numpydoc).
ATTRIBUTES = """\
classes_ : ndarray of shape (k,)
      The labeled classes in ordinal order: sorted, or for y an ordered pandas Categorical
      of k >= 3 classes in its categories' order (two classes are always sorted, as
      scikit-learn's binary scorers assume: larger scores mean ``classes_[1]``).
  model_ : qsg_jax.io.FrozenNystrom or qsg_jax.io.FrozenModel
      The fitted f and its k-1 thresholds: the direct solver's kernel expansion over its
      landmarks (``FrozenNystrom``), or DSG's random features (``FrozenModel``: frequencies
      [num_steps, num_frequencies, n_features] and coefficients [num_steps, 2 num_frequencies]).
  length_scale_ : float or ndarray of shape (n_features,)
      The length scale used (the chosen one, or one per feature: learned, or given).
  lam_ : float
      The regularization used ("auto": the chosen one).
  labeled_weight_ : float or list of float
      The labeled weight used ("auto": the chosen one; 1.0 without unlabeled rows).
  solver_ : str
      "direct" or "dsg", the solver that ran (``solver``).
  auto_score_ : float
      The automatic choice's smoothed mean validation AUC; NaN where nothing was "auto" (or
      too few labels to cross-validate). With learned length scales it is measured on the rows
      the scales were learned on: optimistic, not comparable with an isotropic fit's (it beat
      the isotropic score in 6 of 6 development trials on breast_cancer, the test AUC in 3).
  input_min_, input_scale_ : ndarray of shape (n_features,)
      The map x' = (x - input_min_) / input_scale_ applied to X before the kernel: the min-max
      scaling of the training rows (zeros and ones without ``scale_inputs``), times the length
      scales when ``length_scale`` is one per feature.
  input_ranks_ : qsg_jax.data.preprocessing.Ranks
      The columns replaced by their rank before that map (``scale_inputs="auto"``) and their
      training quantiles; no column otherwise.
  seed_ : int
      The seed of the fit (from ``random_state``).
  training_metrics_ : dict
      DSG, per iteration (arrays of shape (num_steps,)): "eta", the step size, and
      "max_abs_score", max |f| on the labeled points. Direct: "solver", "num_features" and
      "kernel_residual" (``qsg_jax.direct.fit``). Kept in model files (``qsg_jax.io.save``);
      empty after loading a file written before they were stored.
  probability_slope_, probability_cutpoints_ : float, ndarray of shape (k - 1,)
      Set only with ``probability=True``: the slope a and ordered cutpoints c_j of
      P(y > j) = sigmoid(a (f(x) - mean(b)) - c_j), b the fitted thresholds
      (``predict_proba``).
  n_features_in_ : int
      Number of features seen in ``fit``.
  feature_names_in_ : ndarray of shape (n_features_in_,)
      Column names of X, set only when X is a DataFrame with string column names."""

_NOTES = """\
The objective is lam/2 ||f||^2 + 1/(k-1) sum_j [w_j R_PN^j + (1 - w_j)(R_PU^j + R_NU^j - 1/2)]
  over the k-1 ordinal splits j ({y <= j} against {y > j}), w = labeled_weight, R_PN the pairwise
  risk of labeled pairs and R_PU, R_NU those of labeled against unlabeled points. ``solver``
  says how it is minimized: exactly for the squared loss over Nystrom features (direct), or by
  doubly stochastic functional gradients over random Fourier features (the papers' Algorithm
  1, ``qsg_jax.fit``, whose ``FitConfig`` keeps the papers' names sigma, gamma, step_size).

  "auto" length_scale, lam and labeled_weight (the defaults) are chosen per fit from the
  labeled rows only (``qsg_jax.direct.defaults``): sigma = 1 / (2 length_scale^2) over
  2^-4..2^6 divided by the data's median squared distance, lam over 2^-15..2^3,
  labeled_weight over 0..1 in steps of 0.25, each point scored by the mean validation AUC of
  a 5-fold CV repeated 3 times (folds from ``random_state``), averaged over its grid
  neighbours, the simplest point within one standard error of the best taken (the widest
  kernel, then the largest lam); the given values stay fixed. Where the smallest labeled class
  has at least 2 rows per feature, "auto" length_scale then learns one length scale per
  feature ("ard", ``qsg_jax.direct.learn_length_scales``; with fewer, one per kind of feature,
  two-valued indicators and the others, where both kinds occur and the smallest class has 4
  rows, then refined per feature toward them) and chooses lam and labeled_weight again. It
  costs seconds per fit (at most 1,000 labeled and 2,000 unlabeled rows enter the CV;
  ``experiments/reproduction/RESULTS.md#peers``);
  with fewer than 5 distinct labeled rows in some class the papers' values (sigma 0.1, lam 1e-3,
  labeled_weight 0.5) are used. A chosen narrow kernel may leave part of k(x, x) unexplained
  by the 512 landmarks (``training_metrics_["kernel_residual"]``); the CV chose it with that
  approximation, so that residual raises no ``ApproximationWarning``; a chosen kernel too
  narrow for the data does. The sigma grid leaves out lookup tables (kernel below exp(-20)
  between neighbouring labeled rows, ``direct.defaults.lookup_free``).
  Against the papers' fixed values on the peers' protocol (``experiments/peers.py``) it raised
  the test AUC on skin and bank marketing to the best tuned peer's (``qsg_jax.estimators``
  package docstring).

  ``score`` is the mean AUC over the k-1 ordinal splits on the labeled rows of y (the papers'
  metric; rows marked unlabeled are ignored), not the accuracy, and is what ``GridSearchCV`` and
  ``cross_val_score`` use by default. scikit-learn's scoring strings ("roc_auc", "accuracy",
  "neg_mean_absolute_error") would score the unlabeled rows as a class: pass
  ``qsg_jax.estimators.get_scorer(name)`` or ``cv=qsg_jax.estimators.LabeledStratifiedKFold()``.

  DSG compiles its training program again for every new number of training rows (seconds
  each, e.g. once per fold of a cross-validation); the direct solver pads rows into buckets
  and reuses its programs. JAX's persistent compilation cache keeps compiled programs across
  processes (``qsg_jax.estimators``)."""


# The parameters section of both estimators' docstrings.
PARAMETERS = _params.doc("length_scale", "lam", "labeled_weight", "solver", "learning_rate",
                         "num_steps", "num_frequencies", "unlabeled_batch_size",
                         "labeled_batch_size", "loss", "scale_inputs", "random_state",
                         "unlabeled_label", "probability", "deprecated")


@io.register
class QS3ORAO(ClassifierMixin, BaseEstimator):
  __doc__ = f"""Semi-supervised ordinal regression by AUC optimization (QS3ORAO); k = 2: QSG-S2AUC.

  Learns one ranking function f (a Gaussian-kernel function) and k-1 thresholds on it from
  labeled rows of k ordered classes and unlabeled rows (y == ``unlabeled_label``).

  Parameters
  ----------
  {PARAMETERS}

  Attributes
  ----------
  {ATTRIBUTES}

  Notes
  -----
  ``decision_function`` returns f(x), one score per row ordered like ``classes_`` (not one
  column per class); ``predict`` returns the class whose interval of thresholds holds f(x).
  {_NOTES}

  Examples
  --------
  >>> import numpy as np
  >>> from qsg_jax import QS3ORAO
  >>> rng = np.random.default_rng(0)
  >>> X = rng.uniform(size=(150, 2))
  >>> y = np.digitize(X.sum(axis=1), [0.7, 1.3])          # 3 ordered classes 0, 1, 2
  >>> y[60:] = -1                                          # -1 marks the unlabeled rows
  >>> model = QS3ORAO(unlabeled_label=-1, random_state=0).fit(X, y)
  >>> model.classes_
  array([0, 1, 2])
  >>> model.decision_function(X[:4]).shape                 # one ranking score per row
  (4,)
  >>> bool(model.score(X[:60], y[:60]) > 0.9)              # mean AUC of the 2 ordinal splits
  True
  """

  probability = False   # pickles written before the parameter existed unpickle with it

  def __init__(self, length_scale="auto", lam="auto", labeled_weight="auto", solver="auto",
               learning_rate=FitConfig.step_size, num_steps=FitConfig.num_steps,
               num_frequencies=FitConfig.num_frequencies,
               unlabeled_batch_size=FitConfig.unlabeled_batch_size,
               labeled_batch_size=FitConfig.labeled_batch_size, loss=FitConfig.loss,
               scale_inputs="auto", random_state=None, unlabeled_label="auto", probability=False,
               sigma=DEPRECATED, gamma=DEPRECATED, step_size=DEPRECATED):
    self.length_scale = length_scale
    self.solver = solver
    self.lam = lam
    self.labeled_weight = labeled_weight
    self.learning_rate = learning_rate
    self.num_steps = num_steps
    self.num_frequencies = num_frequencies
    self.unlabeled_batch_size = unlabeled_batch_size
    self.labeled_batch_size = labeled_batch_size
    self.loss = loss
    self.scale_inputs = scale_inputs
    self.random_state = random_state
    self.unlabeled_label = unlabeled_label
    self.probability = probability
    self.sigma = sigma
    self.gamma = gamma
    self.step_size = step_size

  def _check_classes(self, classes):
    """Hook for subclasses restricting the number of classes."""

  def fit(self, X, y):
    """Trains on labeled rows and unlabeled rows (y == unlabeled_label).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
        Numeric features (dense; any scale when ``scale_inputs``).
    y : array-like of shape (n_samples,)
        Class labels, ``unlabeled_label`` on unlabeled rows.

    Returns
    -------
    self
        A failed fit leaves the estimator's fitted state as it was.
    """
    with validation.fitted_state_kept_on_error(self):
      papers = _params.papers_values(self)
      X, unlabeled, classes, codes, (low, scale), ranks = prepare_training_data(self, X, y)
      self._check_classes(classes)
      seed = validation.seed_of(self.random_state)
      if validation.check_bool("probability", self.probability, allow_none=False):
        calibration_folds(X[~unlabeled], codes, classes)   # before the fit: errors first
      has_unlabeled = bool(unlabeled.any())
      _params.check_solver(self.solver)
      with _params.estimator_names(papers):
        gamma = self.labeled_weight if papers["gamma"] is None else papers["gamma"]
        if not _params.is_auto(gamma):
          validation.check_gamma(gamma, classes.size)   # checked even where unused
        lam = _params.check_lam(self.lam)
        _auto.check_ard_lam(self.length_scale, lam)
        config = FitConfig(step_size=(
            self.learning_rate if papers["step_size"] is None else papers["step_size"]),
            **{name: getattr(self, name) for name in HYPERPARAMS})
        solver = config_lib.choose_solver(config)   # before the automatic choice: errors first
      sigma, column_scale = _params.kernel_of(self, papers["sigma"], X.shape[1])
      x = ((X - low) / (scale * column_scale)).astype(np.float32)
      x_l, x_u = x[~unlabeled], (x[unlabeled] if has_unlabeled else None)
      chosen = _auto.resolve(self.length_scale, sigma, lam, gamma if has_unlabeled else 1.0,
                             x_l, codes, x_u, num_classes=classes.size, seed=seed)
      if np.any(chosen.column_scale != 1.0):   # ARD: the learned scales join the input map
        column_scale = column_scale * chosen.column_scale
        x = (x / chosen.column_scale).astype(np.float32)
        x_l, x_u = x[~unlabeled], (x[unlabeled] if has_unlabeled else None)
      config = config.replace(sigma=chosen.sigma, lam=chosen.lam, gamma=chosen.gamma)
      with warnings.catch_warnings():
        if np.any(column_scale != 1.0) and self.scale_inputs:   # x' = x / length_scale: wanted
          warnings.simplefilter("ignore", UnscaledFeaturesWarning)
        if sigma is None:   # chosen by a CV of the same Nystrom approximation: its residual
          warnings.filterwarnings(   # was validated (kernel_residual is kept); a kernel too
              "ignore", r"the Nystrom map of \d+ landmarks leaves", ApproximationWarning)   # narrow
          # for the data is still said: in wide data (500 features, 200 labeled rows) the CV's
          # landmarks hold its held-out rows and it chose a lookup table (sweep Z3).
        result = _fit.fit(x_l, codes, x_u, key=seed, num_classes=classes.size, config=config)
        probabilities = (out_of_fold_probabilities(x_l, codes, x_u, seed, config, classes)
                         if self.probability else {})
      self.input_min_, self.input_scale_, self.seed_ = low, scale * column_scale, seed
      self.input_ranks_ = ranks
      self.classes_, self.model_ = classes, io.freeze(result)
      self.training_metrics_ = result.metrics
      self.length_scale_ = (column_scale if np.any(column_scale != 1.0)
                            else _params.length_scale_of(chosen.sigma))
      self.lam_, self.solver_ = float(chosen.lam), solver
      self.labeled_weight_ = (float(chosen.gamma) if np.ndim(chosen.gamma) == 0
                              else np.asarray(chosen.gamma, np.float64).tolist())
      self.auto_score_ = chosen.cv_score
      for name in PROBABILITY:   # a refit without probability keeps none of the last fit's
        vars(self).pop(name, None)
      vars(self).update(probabilities)
    return self

  def decision_function(self, X) -> np.ndarray:
    """Ranking scores (float64), shape (n_samples,): f(x) ordered like ``classes_``; with 2 classes
    f(x) - b (b the fitted threshold), so that larger means ``classes_[1]`` and > 0 predicts it."""
    check_is_fitted(self)
    x = scaled_points(self, X, kernel=isinstance(self.model_, io.FrozenNystrom))
    scores = io.frozen_scores(self.model_, io.check_phases(   # far rows: said in X's units
        self.model_, x, "X", units=(self.input_min_, self.input_scale_)))
    refuse_non_finite_scores(scores, x)
    scores = np.asarray(scores, np.float64)   # f - b in float32 rounded f away where |f| << |b|
    if self.classes_.size == 2:
      scores = scores - float(self.model_.thresholds[0])
    return scores

  def predict(self, X) -> np.ndarray:
    """Predicted classes (from ``classes_``), shape (n_samples,): the number of fitted
    thresholds below f(x) indexes ``classes_``."""
    scores = self.decision_function(X)
    if self.classes_.size == 2:
      return self.classes_[(scores > 0).astype(int)]
    return self.classes_[np.sum(scores[:, None] > self.model_.thresholds[None, :], axis=1)]

  def _has_probabilities(self) -> bool:
    """``available_if``'s test: ``probability=True`` (as scikit-learn's SVC), else an
    AttributeError saying so (``hasattr(model, "predict_proba")`` is then False)."""
    if not self.probability:
      raise AttributeError(f"predict_proba is not available when probability=False: fit "
                           f"{type(self).__name__}(probability=True) (out-of-fold Platt scaling, "
                           "as SVC), or rank with decision_function.")
    return True

  @available_if(_has_probabilities)
  def predict_proba(self, X) -> np.ndarray:
    """Class probabilities, shape (n_samples, k), columns ordered like ``classes_``: the
    cumulative logistic model of ``probability=True`` on f(x) - mean(b) (b the fitted
    thresholds); with two classes Platt scaling, column 1 = sigmoid(a (f(x) - b) - c)."""
    check_is_fitted(self)
    if not hasattr(self, PROBABILITY[0]):
      raise NotFittedError(f"this {type(self).__name__} was fitted with probability=False (it "
                           "was set afterwards); fit it again to get predict_proba.")
    scores = self.decision_function(X)   # f - b for two classes, f - mean(b) for more:
    if self.classes_.size > 2:           # the origin the probabilities were fitted at
      scores = scores - float(np.mean(self.model_.thresholds))
    return thresholds.class_probabilities(scores, self.probability_slope_,
                                          self.probability_cutpoints_)

  @available_if(_has_probabilities)
  def predict_log_proba(self, X) -> np.ndarray:
    """The log of ``predict_proba`` (-inf where a probability is 0)."""
    with np.errstate(divide="ignore"):
      return np.log(self.predict_proba(X))

  def score(self, X, y, sample_weight=None) -> float:
    """Mean AUC over the k-1 ordinal splits on the labeled rows of (X, y); binary AUC if k = 2.

    Rows marked unlabeled (``unlabeled_label``) are ignored; ``sample_weight`` weighs each pair
    by its rows' weights (``qsg_jax.estimators.ordinal_auc_scorer``). This is the score
    ``GridSearchCV`` and ``cross_val_score`` use when ``scoring`` is None. Other metrics on the
    labeled rows: ``qsg_jax.estimators.get_scorer("accuracy")`` etc.
    """
    return _scorers.ordinal_auc_scorer(self, X, y, sample_weight)

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
                  input_scale=np.asarray(self.input_scale_),
                  input_rank_columns=ranks_of(self).columns,
                  input_rank_quantiles=ranks_of(self).quantiles)
    if hasattr(self, PROBABILITY[0]):
      arrays.update(probability_slope=np.asarray(self.probability_slope_, np.float64),
                    probability_cutpoints=np.asarray(self.probability_cutpoints_, np.float64))
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
    meta.update(params=params, seed=int(self.seed_), chosen={
        name: np.asarray(getattr(self, name)).tolist() if name != "solver_" else self.solver_
        for name in CHOSEN if hasattr(self, name)})
    if hasattr(self, "auto_score_"):
      meta["chosen"]["auto_score_"] = (None if not np.isfinite(self.auto_score_)
                                       else float(self.auto_score_))
    if self.classes_.dtype == object:   # text labels of a pandas y: stored as unicode
      meta["classes_dtype"] = "object"
    meta["training_metrics"] = {}
    for name, value in getattr(self, "training_metrics_", {}).items():
      if np.ndim(value):   # DSG's per-step arrays: as arrays, their dtype kept
        arrays[METRIC_PREFIX + name] = np.asarray(value)
      else:                # the direct solver's str / int / float
        meta["training_metrics"][name] = np.asarray(value).item() if hasattr(
            value, "dtype") else value
    return arrays, meta

  @classmethod
  def _from_arrays(cls, frozen, arrays, meta):
    """The fitted estimator of a model file (``qsg_jax.io.load``)."""
    not_stored = meta.get("params_not_stored", {})
    if not_stored:   # e.g. a callable step_size: the model is whole, a refit would differ
      warnings.warn(f"parameters {sorted(not_stored)} could not be stored (not JSON); they are "
                    "back at their defaults, so a refit (clone().fit) would differ. Set them "
                    "again with set_params before refitting.", UserWarning,
                    stacklevel=validation.outside_stacklevel())
    params = {name: value for name, value in meta["params"].items() if name not in not_stored}
    for old, new in _params.RENAMED.items():   # a file written before the estimators' names
      if old in meta["params"] and new not in meta["params"]:
        value = params.pop(old, DEPRECATED)
        if not (isinstance(value, str) and value == DEPRECATED):
          params[new] = _params.length_scale_of(value) if old == "sigma" else value
    if "solver" not in meta["params"]:   # written before the solver switch: DSG fitted it
      params["solver"] = "dsg"
    estimator = cls(**params)
    classes = arrays["classes"]   # (text classes of a pandas y were objects when fitted)
    if meta.get("classes_dtype") == "object":
      classes = classes.astype(object)
    estimator.model_, estimator.classes_, estimator.seed_ = frozen, classes, meta["seed"]
    estimator.training_metrics_ = {   # empty in files written before they were stored
        **meta.get("training_metrics", {}),
        **{name[len(METRIC_PREFIX):]: value for name, value in arrays.items()
           if name.startswith(METRIC_PREFIX)}}
    estimator.input_min_, estimator.input_scale_ = arrays["input_min"], arrays["input_scale"]
    estimator.input_ranks_ = (   # absent from files written before scale_inputs="auto"
        preprocessing.Ranks(arrays["input_rank_columns"].astype(np.int64),
                            arrays["input_rank_quantiles"])
        if "input_rank_columns" in arrays else preprocessing.no_ranks())
    estimator.n_features_in_ = int(arrays["input_min"].shape[0])
    for name, value in meta.get("chosen", {}).items():   # absent from files before "auto"
      if name == "auto_score_":
        value = float("nan") if value is None else float(value)
      elif name == "length_scale_" and isinstance(value, list):
        value = np.asarray(value, np.float64)
      setattr(estimator, name, value)
    if "probability_slope" in arrays:
      estimator.probability_slope_ = float(arrays["probability_slope"])
      estimator.probability_cutpoints_ = arrays["probability_cutpoints"]
    if "feature_names_in" in arrays:
      estimator.feature_names_in_ = arrays["feature_names_in"].astype(object)
    return estimator


# What a row the float32 model cannot score gets told after the cause ("X (scaled)": X after
# the fit's map (X - input_min_) / input_scale_).
_FAR_ROWS = "Pass rows on the training data's scale, or drop that row"


def ranks_of(estimator) -> preprocessing.Ranks:
  """The fitted estimator's rank transforms (``scale_inputs="auto"``; none in files and pickles
  written before them)."""
  return getattr(estimator, "input_ranks_", None) or preprocessing.no_ranks()


def scaled_points(estimator, X, kernel: bool = False) -> np.ndarray:
  """float32 [n, d] X after a fitted estimator's input map (X - input_min_) / input_scale_,
  X checked as in fit. Refused, naming the row, as ``qsg_jax.decision_function`` refuses them:
  values float32 cannot hold after the map (``_validation.refuse_beyond_float32``) and, with
  ``kernel`` (a Nystrom model), rows whose squared norms overflow float32
  (``_validation.check_kernel_scale``: the kernel would be NaN)."""
  validation.check_features(X)
  with np.errstate(over="ignore", invalid="ignore"):   # validate_data's finite check sums them
    X = validate_data(estimator, X, reset=False, dtype=[np.float64, np.float32])
  with np.errstate(over="ignore"):   # inf where float64 overflows: refused just below
    x = (preprocessing.apply_ranks(X, ranks_of(estimator)) - estimator.input_min_) / \
        estimator.input_scale_
  validation.refuse_beyond_float32("X (scaled)", x, fix=_FAR_ROWS)
  if kernel:
    validation.check_kernel_scale("X (scaled)", x, fix=_FAR_ROWS)
  return x.astype(np.float32)


def calibration_folds(x_l, codes, classes) -> int:
  """The folds of ``probability=True``'s out-of-fold scores: ``PROBABILITY_FOLDS``, or the
  smallest class's number of distinct labeled rows if smaller; fewer than 2 refused."""
  counts = folds.class_counts(codes, x_l)[1]
  if counts.min() < 2:
    raise ValueError(f"probability=True needs at least 2 distinct labeled rows of each class (its "
                     f"probabilities are fitted to held-out scores); class "
                     f"{np.asarray(classes)[np.argmin(counts)].tolist()!r} has 1. Label more "
                     "rows of it, or fit with probability=False.")
  return int(min(PROBABILITY_FOLDS, counts.min()))


def out_of_fold_probabilities(x_l, codes, x_u, seed, config, classes) -> dict:
  """{"probability_slope_", "probability_cutpoints_"}: ``thresholds.fit_probabilities`` on the
  scores of refits (same config, seed and unlabeled rows) on the stratified folds of the
  labeled rows (copies of a row share a fold), each scoring its held-out rows as
  ``predict_proba`` reads them: f - mean(b), each refit's own thresholds (for two classes
  ``decision_function``'s f - b). The origin of f moves between refits (by more than the spread
  of the thresholds, with 2 folds): raw f pooled over refits gave flat, off-centre probabilities
  (a helper's measurement: per-split calibration error 0.17-0.31 against 0.02-0.05 centred;
  sgemm log loss 0.977 against 0.925). The refits' warnings repeat the fit's: not shown."""
  num_classes, num_folds = classes.size, calibration_folds(x_l, codes, classes)
  fold_of = folds.stratified_folds(codes, num_folds, seed, points=x_l)
  held_out = np.zeros(codes.size, np.float64)
  for fold in range(num_folds):
    train = fold_of != fold
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      result = _fit.fit(x_l[train], codes[train], x_u, key=seed, num_classes=num_classes,
                        config=config)
    scores = np.asarray(_fit.decision_function(result, x_l[~train]), np.float64)
    held_out[~train] = scores - float(np.mean(result.thresholds))   # each refit's own origin
  slope, cutpoints = thresholds.fit_probabilities(held_out, codes, num_classes)
  if slope == 0.0:   # said, not a silent constant: P(class) is the same for every row
    warnings.warn(f"probability=True: the {num_folds} held-out folds' scores do not rank the "
                  "labeled classes (the fitted slope is 0), so predict_proba gives every row the "
                  "same probabilities, the smoothed class frequencies. Label more rows of the "
                  "smallest class, or rank with decision_function.", UserWarning,
                  stacklevel=validation.outside_stacklevel())
  return dict(zip(PROBABILITY, (slope, cutpoints)))


def refuse_non_finite_scores(scores, x) -> None:
  """``ValueError`` naming the first row of ``x`` (float32 [n, d], scaled) whose score is NaN /
  inf: in float32 its squared distances to the model's points overflowed (|x'| near 1e38)."""
  bad = ~np.isfinite(scores)
  if bad.any():
    row = int(np.argmax(bad))
    raise ValueError(f"{int(bad.sum())} rows of X get a non-finite score (first at row {row}, "
                     f"whose scaled values reach |x'| = {float(np.max(np.abs(x[row]))):.3g}: its "
                     f"squared distances overflow float32 in the kernel). {_FAR_ROWS}.")


def prepare_training_data(estimator, X, y):
  """``validate_data`` of (X, y) plus the checks and the input scaling of a QS3ORAO-like fit.

  Sets ``n_features_in_`` / ``feature_names_in_`` (through ``validate_data``; callers restore
  them on error, ``_validation.fitted_state_kept_on_error``).

  Returns:
    (X [n, d] float, unlabeled [n] bool, classes [k], codes [n_l] int 0..k-1, (input_min [d],
    input_scale [d]): min-max over all rows when ``estimator.scale_inputs``, else the identity).
  """
  scaling = estimator.scale_inputs
  if not isinstance(scaling, (bool, np.bool_)) and not (isinstance(scaling, str)
                                                          and scaling == "auto"):
    raise ValueError(f'scale_inputs must be "auto", True or False; received {scaling!r:.60}.')
  validation.check_features(X, training=True)
  validation.refuse_unreadable("y", y)   # a masked y: its mask would be read through
  y = validation.keep_label_types(y)
  order = validation.stated_order(y)
  marker = None if y is None else _params.unlabeled_marker(estimator, np.asarray(y).ravel())
  if y is not None:   # NaN or look-alike markers: a clear error before validate_data's
    validation.unlabeled_mask(np.asarray(y).ravel(), marker, given=y)
  with np.errstate(over="ignore", invalid="ignore"):   # its finite check sums huge values
    X, y = validate_data(estimator, X, y, dtype=[np.float64, np.float32])
  boxed, y = y, validation.unbox_numbers(y)   # ints kept as objects: scikit-learn's "unknown"
  unlabeled = validation.unlabeled_mask(y, marker)
  # numbers beside a text marker: numbers; bools beside -1 (objects): bool classes
  y_labeled = validation.unbox_numbers(boxed[~unlabeled])
  shown = validation.MARKER if isinstance(marker, str) and marker == "auto" else marker
  minus_ones = int(np.sum(y == validation.MARKER)) if y.dtype.kind in "biuf" else 0
  if shown is not None and shown != validation.MARKER and minus_ones and not unlabeled.any():
    warnings.warn(
        f"unlabeled_label={shown!r} marks no row of y, so all rows are labeled and the "
        f"{minus_ones} rows of -1 are trained as a class. If -1 marks "
        "the unlabeled rows, pass unlabeled_label=-1; if -1 is a class and every row is labeled, "
        "pass unlabeled_label=None.", UserWarning, stacklevel=validation.outside_stacklevel())
  elif estimator.unlabeled_label not in ("auto", None) and not unlabeled.any():
    warnings.warn(
        f"unlabeled_label={shown!r} marks no row of y, so every row is trained as labeled. A "
        f"scikit-learn tool that label-encodes y ({ENCODING_TOOLS}) makes the marker a class: "
        "fit such tools on the labeled rows. If every row is labeled, pass "
        "unlabeled_label=None.", UserWarning, stacklevel=validation.outside_stacklevel())
  if not y_labeled.size:
    raise ValueError(f"y has no labeled rows: all {y.size} rows are marked unlabeled ({shown!r}); "
                     "a ranking needs labeled rows of at least 2 classes.")
  validation.refuse_fractional_labels(y_labeled, shown if unlabeled.any() else None,
                                      binary=getattr(estimator, "_binary_only", False))
  check_classification_targets(y_labeled)
  if order is not None and sum(np.any(y_labeled == c) for c in order) == 2:
    order = None   # two classes: sorted, as scikit-learn's binary scorers read them (classes_[1]
                   # positive is np.unique(y)[1] for roc_auc_score)
  if order is None:   # the sorted order is the ordinal one (text: refused where ambiguous)
    classes, codes = np.unique(y_labeled, return_inverse=True)
  else:               # an ordered Categorical: its categories' order, those with labeled rows
    classes = np.array([c for c in order if np.any(y_labeled == c)], dtype=y_labeled.dtype)
    codes = _scorers.class_codes(classes, y_labeled, "y")
  if classes.size < 2:
    fix = (" If -1 is a class (labels -1 / +1), pass unlabeled_label=None."
           if unlabeled.any() and shown == -1 else "")
    raise ValueError(f"y has labeled points of only one class ({classes.tolist()}) and "
                     f"{int(unlabeled.sum())} rows marked unlabeled ({shown!r}); a ranking needs "
                     f"at least 2 classes.{fix}")
  if order is None:
    check_ordinal_classes(classes, shown if unlabeled.any() else None,
                          auto=isinstance(marker, str) and marker == "auto")
  if not getattr(estimator, "_binary_only", False) and isinstance(marker, str) and (
      marker == "auto"):   # (a binary estimator refuses k = 3)
    warn_if_apart(classes)
  validation.refuse_one_point("X's labeled rows", X[~unlabeled])
  if not estimator.scale_inputs:   # the fit casts X to float32 as it is
    validation.warn_if_float32_merges("X", X)
    return (X, unlabeled, classes, codes, (np.zeros(X.shape[1]), np.ones(X.shape[1])),
            preprocessing.no_ranks())
  low, high = X.min(axis=0), X.max(axis=0)
  with np.errstate(over="ignore"):
    span = high.astype(np.float64) - low
  if not np.all(np.isfinite(span)):
    c = int(np.argmax(~np.isfinite(span)))
    raise ValueError(f"X's column {c} spans more than float64 holds (min {low[c]:.3g}, max "
                     f"{high[c]:.3g}); rescale it (e.g. divide by 1e300) before fitting.")
  ranks = preprocessing.tail_ranks(X) if isinstance(scaling, str) else preprocessing.no_ranks()
  if ranks.columns.size:   # ranked columns span [0, 1] (their CDF at the training rows)
    X = preprocessing.apply_ranks(X, ranks)
    low, high = X.min(axis=0), X.max(axis=0)
    span = high - low
  scale = np.where(high > low, span, 1.0)
  preprocessing.warn_if_squashed(X, low, scale)
  return X, unlabeled, classes, codes, (low, scale), ranks


@io.register
class QSGS2AUC(QS3ORAO):
  __doc__ = f"""Semi-supervised binary AUC maximization (QSG-S2AUC): ``QS3ORAO`` for 2 classes.

  Learns a ranking function f (a Gaussian-kernel function) maximizing the AUC from labeled rows
  of two classes and unlabeled rows (y == ``unlabeled_label``), and a threshold b on it.

  Parameters
  ----------
  {PARAMETERS}

  Attributes
  ----------
  {ATTRIBUTES}

  Notes
  -----
  ``decision_function`` returns f(x) - b: larger means ``classes_[1]`` (the positive class),
  and ``predict`` returns ``classes_[1]`` where it is > 0.
  {_NOTES}

  Examples
  --------
  >>> import numpy as np
  >>> from qsg_jax import QSGS2AUC
  >>> rng = np.random.default_rng(0)
  >>> X = rng.uniform(size=(150, 2))
  >>> y = (X[:, 0] + X[:, 1] > 1).astype(int)              # classes 0, 1
  >>> y[60:] = -1                                           # unlabeled: -1 cannot be a 3rd class
  >>> model = QSGS2AUC(random_state=0).fit(X, y)
  >>> model.classes_
  array([0, 1])
  >>> bool(model.score(X[:60], y[:60]) > 0.9)               # AUC on the labeled rows
  True
  """
  _binary_only = True   # "auto" unlabeled_label: -1 beside two classes is the marker

  def fit(self, X, y):   # defined here so that Python's argument errors name this class
    return super().fit(X, y)

  fit.__doc__ = QS3ORAO.fit.__doc__

  def _check_classes(self, classes):
    """Exactly 2 classes (also for ``QSGS2AUCCV``, whose name the message takes)."""
    if classes.size != 2:
      name = type(self).__name__
      apart = apart_class(classes)
      encoded = (" If y marked unlabeled rows with -1, a scikit-learn tool that label-encodes y"
                 f" ({ENCODING_TOOLS}) made the marker class 0: fit it on the labeled rows."
                 if np.array_equal(classes, np.arange(3)) else "") + (
                     f" If {apart!r} marks unlabeled rows, pass unlabeled_label={apart!r}."
                     if apart is not None else " If one of these values marks unlabeled rows, "
                     "pass it as unlabeled_label." if classes.size == 3 else "")
      raise ValueError(f"Only binary classification is supported. The type of the target is "
                       f"multiclass: {name} needs exactly 2 labeled classes; found "
                       f"{classes.size}: {classes.tolist()[:10]}. Use "
                       f"{name.replace('QSGS2AUC', 'QS3ORAO')} for k ordered classes.{encoded}")

  def __sklearn_tags__(self):
    tags = super().__sklearn_tags__()
    tags.classifier_tags.multi_class = False
    return tags

