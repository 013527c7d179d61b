"""Cross-validated estimators: ``QS3ORAOCV`` and ``QSGS2AUCCV`` (as scikit-learn's
``LogisticRegressionCV``): pick lam, length_scale, labeled_weight and the learning rate by k-fold
CV, then refit.

The search is ``qsg_jax.model_selection.cross_validate`` (the grouped path: the papers' 539-point
grid with 5 folds takes about a minute on 2 CPU cores at 500 labels, 1,000 unlabeled points),
which takes the papers' names (sigma, gamma, step_size); the grid and the results here use the
estimators' names (``_params``). The refit is a ``QS3ORAO`` / ``QSGS2AUC`` with the chosen
values, trained on all the data (``best_estimator_``).
"""

import itertools
import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted

from qsg_jax import _validation as validation
from qsg_jax import folds
from qsg_jax import model_selection
from qsg_jax.config import FitConfig
from qsg_jax.estimators import _params
from qsg_jax.estimators import _ranker
from qsg_jax.estimators._params import DEPRECATED

__docformat__ = "numpy"

# The fixed ``FitConfig`` fields of a search (the grid holds the others).
FIXED = ("num_steps", "num_frequencies", "unlabeled_batch_size", "labeled_batch_size", "loss",
         "solver")
# The estimator parameters the refit takes as they are (the search does not use them).
REFIT_ONLY = ("scale_inputs", "unlabeled_label", "probability")
# The grid's estimator names and their ``FitConfig`` (``cross_validate``) names.
PAPERS = {new: old for old, new in _params.RENAMED.items()}


def papers_grid(grid: dict):
  """(the grid in ``cross_validate``'s names, sigma -> the length_scale it came from), after
  checking it. The papers' names are accepted as keys too, with a FutureWarning."""
  keys = set(grid) if isinstance(grid, dict) else set()
  named = {_params.RENAMED.get(name, name) for name in keys}
  if not keys or not {"lam", "length_scale", "labeled_weight"} <= named or not named <= set(
      PAPERS) | {"lam", "split_lam"}:
    raise ValueError(f"grid must be a dict of value lists with the keys lam, length_scale and "
                     f"labeled_weight (optional: learning_rate, split_lam); received "
                     f"{sorted(keys) if isinstance(grid, dict) else type(grid).__name__}.")
  out, length_scales = {}, {}
  for name, values in grid.items():
    if isinstance(values, str) or np.ndim(values) == 0:
      raise ValueError(f"grid[{name!r}] must be a list of values; received {values!r:.40}. Wrap "
                       f"one value in a list: {{{name!r}: [{values!r:.40}]}}.")
    if name in _params.RENAMED:
      if _params.RENAMED[name] in grid:
        raise ValueError(f"grid has both {name!r} and {_params.RENAMED[name]!r}, the same "
                         f"parameter ({name} is its deprecated name): keep "
                         f"{_params.RENAMED[name]!r}.")
      warnings.warn(f"grid key {_params.deprecation_message(name)}", FutureWarning,
                    stacklevel=validation.outside_stacklevel())
      out[name] = values
    elif name == "length_scale":
      if any(isinstance(v, str) or np.ndim(v) for v in np.atleast_1d(np.asarray(values, object))):
        raise ValueError(
            f"the grid's length_scale values must be numbers (one shared scale per grid point); "
            f"received {validation.summarize(list(values), 4)}. Learned or per-feature scales "
            "are searched by scikit-learn's CV, which learns them on each fold's training rows: "
            "GridSearchCV(QS3ORAO(), {'length_scale': ['ard', 'isotropic']}) (QSGS2AUC alike).")
      scales = [_params.check_length_scale(value, 1) for value in values]
      length_scales = {float(0.5 / scale**2): float(scale) for scale in scales}
      out["sigma"] = list(length_scales)
    else:
      out[PAPERS.get(name, name)] = values
  try:
    folds.check_grid(out)
  except ValueError as e:   # the values' errors, in the grid's names
    message = str(e)
    for old, new in _params.RENAMED.items():
      if old not in grid:
        message = message.replace(f"grid[{old!r}]", f"grid[{new!r}]")
    raise ValueError(message) from None
  return out, length_scales


def estimator_params(point: dict, length_scales: dict) -> dict:
  """A grid point of ``cross_validate`` (papers' names) in the estimators' names."""
  out = {}
  for name, value in point.items():
    if name == "sigma":
      value = length_scales.get(float(value), _params.length_scale_of(value))
    elif isinstance(value, np.ndarray):   # per-split gamma
      value = value.tolist()
    out[_params.RENAMED.get(name, name)] = value
  return out


def _cv_doc(binary: bool) -> str:
  """The class docstring of QS3ORAOCV (binary False) or QSGS2AUCCV."""
  name, model = ("QSGS2AUCCV", "QSGS2AUC") if binary else ("QS3ORAOCV", "QS3ORAO")
  title = ("QSG-S2AUC (two classes)" if binary else "QS3ORAO (k ordered classes)")
  labels = ("(x.sum(axis=1) > 1).astype(int)                # classes 0, 1" if binary else
            "np.digitize(x.sum(axis=1), [0.7, 1.3])          # 3 ordered classes")
  marker = "" if binary else ", unlabeled_label=-1"
  return f"""{title} with lam, length_scale, labeled_weight and the learning
  rate chosen by stratified k-fold CV, then refitted on all the data.

  Parameters
  ----------
  grid : dict or None, default=None
      Lists of values to search, keyed lam, length_scale, labeled_weight and optionally
      learning_rate (default ["auto"]) and split_lam; every combination is one grid point.
      None: the grid of ``protocol``. The papers' keys sigma, gamma, step_size still work
      (deprecated).
  protocol : {{"paper", "quick"}}, default="paper"
      The grid when ``grid`` is None: "paper" is the papers' (lam and sigma = 1 / (2
      length_scale^2) in 2^-3..2^3, labeled_weight 0..1 in steps of 0.1: 539 points,
      ``model_selection.paper_grid()``), "quick" 12 points.
  cv : int, default=5
      Number of folds of the labeled rows (the library's stratified folds,
      ``folds.stratified_folds`` with fold seed 0; copies of a row share a fold); every fold
      trains on the unlabeled rows. Where the smallest labeled class has fewer distinct rows,
      that many folds (at least 2; as
      ``qsg_jax.direct.defaults``), kept in ``n_splits_``. scikit-learn splitter objects are
      refused (their folds cannot be used).
  cv_unlabeled : int or None, default=2000
      The CV trains on a uniform subsample of this many unlabeled rows (``folds.subsample``;
      None: all); the refit uses every unlabeled row.
  per_split_labeled_weight : bool, default=False
      Choose labeled_weight per ordinal split (a coordinate-wise pass after the grid,
      ``cross_validate(per_split_gamma=True)``, DSG only); ``best_params_["labeled_weight"]``
      is then a list of k-1 values.
  {_params.doc("solver")}
      Here: the solver of the search and of the refit (``model_selection.cross_validate``;
      learning_rate is a grid key, its other DSG-only parameters are those below);
      "direct" scores every grid point from shared moments (the 539-point grid in about a
      second at 200 labels), DSG trains every task.
  {_params.doc("num_steps", "num_frequencies", "unlabeled_batch_size", "labeled_batch_size",
               "loss", "scale_inputs")}
  random_state : int, RandomState instance or None, default=0
      Seed of the CV's subsample and random features and of the refit (None: a fresh one, in
      ``seed_``); the folds keep fold seed 0 (``model_selection.cross_validate``'s default).
  {_params.doc("unlabeled_label", "probability")}
      Here: the refit's (``best_estimator_``).
  per_split_gamma : deprecated
      The former name of per_split_labeled_weight (FutureWarning in ``fit``).

  Attributes
  ----------
  best_params_ : dict
      lam, length_scale, labeled_weight, learning_rate (and split_lam when searched) of the
      chosen grid point, the refit's parameters.
  best_score_ : float
      Its mean validation AUC (mean over folds and ordinal splits).
  cv_results_ : dict of ndarray
      As scikit-learn's searches, one entry per grid point: "params", "param_<name>",
      "mean_test_score", "split<f>_test_score".
  solver_ : str
      "direct" or "dsg": the solver of the search (``solver``).
  best_estimator_ : {model}
      The refitted estimator; ``predict``, ``decision_function`` and ``score`` are its own.
  classes_ : ndarray of shape (k,)
      The labeled classes in ordinal order, as ``best_estimator_.classes_``: sorted, or for y
      an ordered pandas Categorical of k >= 3 classes in its categories' order.
  seed_ : int
      The seed used (from ``random_state``).
  n_splits_ : int
      The number of folds used: ``cv``, or the smallest labeled class's size if smaller.
  n_features_in_ : int
      Number of features seen in ``fit``.
  feature_names_in_ : ndarray of shape (n_features_in_,)
      Column names of X, set only when X is a DataFrame with string column names.

  Notes
  -----
  The papers' grid ("paper") keeps lam >= 1/8 and sigma in 2^-3..2^3: on the peers' protocol
  (``experiments/peers.py``) its choice trailed the plain ``{model}()`` defaults, whose
  automatic choice searches lam down to 2^-15 and sigma relative to the data's scale, on
  cod_rna (0.937 against 0.977), ijcnn1 (0.575 against 0.825) and sgemm (0.841 against 0.891);
  for tuning by CV without a grid of your own, prefer ``{model}()``.

  The CV sees the inputs scaled exactly as the refit does (min-max over all rows when
  ``scale_inputs``); fully labeled y is cross-validated supervised (labeled_weight 1), as
  ``{model}`` trains it. Tasks sharing a length scale and a fold share their random features
  (``model_selection.cross_validate``).

  Examples
  --------
  >>> import numpy as np
  >>> from qsg_jax import {name}
  >>> rng = np.random.default_rng(0)
  >>> x = rng.uniform(size=(300, 2)).astype(np.float32)
  >>> y = {labels}
  >>> y[60:] = -1                                          # -1 = unlabeled
  >>> grid = {{"lam": [1e-3], "length_scale": [0.7], "labeled_weight": [0.5, 1.0]}}
  >>> model = {name}(grid=grid, cv=3{marker}).fit(x, y)
  >>> sorted(model.best_params_), model.cv_results_["mean_test_score"].shape
  (['labeled_weight', 'lam', 'learning_rate', 'length_scale'], (2,))
  >>> bool(np.mean(model.predict(x[:60]) == y[:60]) > 0.8)
  True
  """


class QS3ORAOCV(ClassifierMixin, BaseEstimator):
  __doc__ = _cv_doc(binary=False)
  _estimator = _ranker.QS3ORAO
  probability = False   # pickles written before the parameter existed unpickle with it

  def __init__(self, grid=None, protocol="paper", cv=5, cv_unlabeled=2000,
               per_split_labeled_weight=False, solver="auto", num_steps=FitConfig.num_steps,
               num_frequencies=FitConfig.num_frequencies,
               unlabeled_batch_size=FitConfig.unlabeled_batch_size,
               labeled_batch_size=FitConfig.labeled_batch_size, loss=FitConfig.loss,
               scale_inputs="auto", random_state=0, unlabeled_label="auto", probability=False,
               per_split_gamma=DEPRECATED):
    self.grid = grid
    self.protocol = protocol
    self.cv = cv
    self.cv_unlabeled = cv_unlabeled
    self.per_split_labeled_weight = per_split_labeled_weight
    self.solver = solver
    self.num_steps = num_steps
    self.num_frequencies = num_frequencies
    self.unlabeled_batch_size = unlabeled_batch_size
    self.labeled_batch_size = labeled_batch_size
    self.loss = loss
    self.scale_inputs = scale_inputs
    self.random_state = random_state
    self.unlabeled_label = unlabeled_label
    self.probability = probability
    self.per_split_gamma = per_split_gamma

  def fit(self, X, y):   # pylint: disable=invalid-name (scikit-learn's name)
    """Cross-validates on the labeled rows, then refits on all rows.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features)
    y : array-like of shape (n_samples,)
        Class labels, ``unlabeled_label`` on unlabeled rows.

    Returns
    -------
    self
        A failed fit leaves the fitted state as it was.
    """
    with validation.fitted_state_kept_on_error(self):
      validation.check_count("cv_unlabeled", self.cv_unlabeled, allow_none=True,
                             fix="None uses every unlabeled point.", maximum=None)
      per_split = self.per_split_labeled_weight
      if not (isinstance(self.per_split_gamma, str) and self.per_split_gamma == DEPRECATED):
        warnings.warn("per_split_gamma is deprecated; pass per_split_labeled_weight (it will be "
                      "removed in the next release).", FutureWarning,
                      stacklevel=validation.outside_stacklevel())
        per_split = self.per_split_gamma
      raw_x, seed = X, validation.seed_of(self.random_state)
      _params.check_solver(self.solver)
      validation.check_bool("probability", self.probability, allow_none=False)   # before the CV
      validation.check_bool("per_split_labeled_weight", per_split, allow_none=False)
      model_selection.protocol_grid(self.protocol)   # checked even when a grid replaces it
      # The refit's own checks and scaling, so that the CV sees the points the refit trains on.
      with validation.warnings_at() as said:   # reported once: the refit repeats the checks
        x, unlabeled, classes, codes, (low, scale), _ = _ranker.prepare_training_data(self, X, y)
      self._check_classes(classes)
      num_folds = fold_count(self.cv, codes, classes, x[~unlabeled])
      x = ((x - low) / scale).astype(np.float32)
      if self.grid is None:   # the papers' grids, in their names
        grid, length_scales = dict(model_selection.protocol_grid(self.protocol)), {}
      else:
        grid, length_scales = papers_grid(self.grid)
      if unlabeled.any():
        x_u = folds.subsample(x[unlabeled], self.cv_unlabeled, seed)
      else:   # fully labeled: supervised, as QS3ORAO trains it (labeled_weight is irrelevant)
        x_u, grid["gamma"] = None, [1.0]
      given = {old: True for old in (self.grid or {}) if old in _params.RENAMED}
      with _params.estimator_names(given), validation.warnings_at(said=said) as in_cv:
        result = model_selection.cross_validate(   # (errors in the grid's own names)
            x[~unlabeled], codes, x_u, grid=grid, num_folds=num_folds, key=seed,
            num_classes=classes.size, per_split_gamma=per_split,
            config=FitConfig(**{name: getattr(self, name) for name in FIXED}))
      self.best_params_ = estimator_params(result.best, length_scales)
      self.solver_ = result.solver
      with validation.warnings_at(said=list(said) + list(in_cv)):   # each warning once
        best = self._estimator(**self.best_params_, **{name: getattr(self, name) for name in
                                                       FIXED + REFIT_ONLY},
                               random_state=seed).fit(raw_x, y)
      self.best_score_, self.cv_results_ = result.best_score, _cv_results(result, length_scales)
      self.best_estimator_, self.classes_, self.seed_ = best, best.classes_, seed
      self.n_splits_ = num_folds
    return self

  def _check_classes(self, classes):
    """The classes check of the estimator it refits (``QSGS2AUC``: exactly 2)."""
    self._estimator._check_classes(self, classes)

  def __sklearn_tags__(self):
    """The tags of the estimator it refits (``QS3ORAO`` / ``QSGS2AUC``): it takes and returns
    what that one does."""
    return self._estimator().__sklearn_tags__()

  def _refitted(self, x):
    """The refitted estimator, after the feature count is checked in this class's name (the
    refitted one's own message named it, "QS3ORAO is expecting 3 features")."""
    check_is_fitted(self)
    shape = getattr(x, "shape", None)   # arrays and frames; others: the refitted one's checks
    if shape is not None and len(shape) == 2 and shape[1] != self.n_features_in_:
      raise ValueError(f"X has {shape[1]} features, but {type(self).__name__} is expecting "
                       f"{self.n_features_in_} features as input.")
    return self.best_estimator_

  def decision_function(self, X):   # pylint: disable=invalid-name
    """Ranking scores of the refitted model, shape (n_samples,) (``QS3ORAO.decision_function``)."""
    return self._refitted(X).decision_function(X)

  def predict(self, X):   # pylint: disable=invalid-name
    """Predicted classes of the refitted model, shape (n_samples,)."""
    return self._refitted(X).predict(X)

  @available_if(_ranker.QS3ORAO._has_probabilities)   # pylint: disable=protected-access
  def predict_proba(self, X):   # pylint: disable=invalid-name
    """Class probabilities of the refitted model, shape (n_samples, k) (``probability``)."""
    return self._refitted(X).predict_proba(X)

  @available_if(_ranker.QS3ORAO._has_probabilities)   # pylint: disable=protected-access
  def predict_log_proba(self, X):   # pylint: disable=invalid-name
    """The log of ``predict_proba``."""
    return self._refitted(X).predict_log_proba(X)

  def score(self, X, y, sample_weight=None):   # pylint: disable=invalid-name
    """Mean AUC over the k-1 ordinal splits on the labeled rows (``QS3ORAO.score``)."""
    return self._refitted(X).score(X, y, sample_weight)


class QSGS2AUCCV(QS3ORAOCV):
  __doc__ = _cv_doc(binary=True)
  _estimator = _ranker.QSGS2AUC
  _binary_only = True   # "auto" unlabeled_label: -1 beside two classes is the marker

  def fit(self, X, y):   # pylint: disable=invalid-name (defined here so that Python's argument
    return super().fit(X, y)   # errors name this class)

  fit.__doc__ = QS3ORAOCV.fit.__doc__


def fold_count(cv, codes, classes, x_l) -> int:
  """The number of folds of ``cv`` (an int >= 2) on labeled classes ``codes`` (0..k-1) of rows
  ``x_l``: at most the smallest class's number of distinct rows (copies share a fold:
  ``folds.stratified_folds``), else a clear error naming ``cv``.

  A scikit-learn splitter is refused: the search uses the library's own stratified folds
  (``folds.stratified_folds``), which it could not make equal to the splitter's.
  """
  if not isinstance(cv, str) and (hasattr(cv, "split") or hasattr(cv, "n_splits")):
    n = getattr(cv, "n_splits", None)
    raise TypeError(f"cv must be an int number of folds; received {cv!r:.80}. Pass "
                    f"cv={n if isinstance(n, numbers.Integral) else 5} (the library's stratified "
                    "folds of the labeled rows); the search cannot use another splitter's folds.")
  cv = validation.check_count("cv", cv, minimum=2, fix="Pass e.g. cv=5 (the number of folds).")
  counts = folds.class_counts(codes, x_l)[1]
  if counts.min() < 2:
    small = classes[int(np.argmin(counts))].tolist()
    raise ValueError(f"cross-validation needs at least 2 distinct labeled rows of each class "
                     f"(copies of a row share a fold); class {small!r} has "
                     f"{int(counts.min())}. Label more rows, or fit "
                     "QS3ORAO / QSGS2AUC (with a 1-row class their automatic choices take "
                     "fixed defaults).")
  return min(cv, int(counts.min()))


def _cv_results(result, length_scales):
  """scikit-learn style ``cv_results_`` of a ``CVResult`` (grid points in C order), in the
  estimators' names."""
  names = list(result.grid)
  points = list(itertools.product(*(result.grid[name] for name in names)))
  num_folds = result.fold_scores.shape[-2]
  fold = result.fold_scores.reshape(len(points), num_folds, -1)          # [P, F, k-1]
  params = [estimator_params(dict(zip(names, p)), length_scales) for p in points]
  out = {"params": params,
         "mean_test_score": folds.nanmean(result.scores.reshape(len(points), -1))}
  for name in params[0]:
    out[f"param_{name}"] = np.array([p[name] for p in params], dtype=object)
  for f in range(num_folds):
    out[f"split{f}_test_score"] = folds.nanmean(fold[:, f])
  return out
