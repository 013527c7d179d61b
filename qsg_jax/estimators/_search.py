"""Cross-validated estimators: ``QS3ORAOCV`` and ``QSGS2AUCCV`` (as scikit-learn's
``LogisticRegressionCV``): pick lam, sigma, gamma and the step by k-fold CV, then refit.

    >>> rng = np.random.default_rng(0)
    >>> x = rng.uniform(size=(300, 2)).astype(np.float32)
    >>> y = np.digitize(x.sum(axis=1), [0.7, 1.3])           # 3 ordered classes
    >>> y[60:] = -1                                          # -1 = unlabeled
    >>> grid = {"lam": [1e-3], "sigma": [1.0], "gamma": [0.5, 1.0]}   # step_size: ["auto"]
    >>> model = QS3ORAOCV(grid=grid, cv=3, num_steps=64, unlabeled_label=-1).fit(x, y)
    >>> sorted(model.best_params_), model.cv_results_["mean_test_score"].shape
    (['gamma', 'lam', 'sigma', 'step_size'], (2,))
    >>> bool(np.mean(model.predict(x[:60]) == y[:60]) > 0.8)
    True

``protocol="quick"`` or ``"paper"`` (the default) searches the papers' grids instead of ``grid``.

The search is ``qsg_jax.model_selection.cross_validate`` (the grouped path: the papers' 539-point
grid with 5 folds takes about a minute on 2 CPU cores at 500 labels, 1,000 unlabeled points).
The refit is a ``qsg_jax.estimators.QS3ORAO`` with the chosen values, trained on all the data
(``best_estimator_``).
"""

import itertools

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.base import ClassifierMixin
from sklearn.utils.validation import check_is_fitted

from qsg_jax import _validation as validation
from qsg_jax import folds
from qsg_jax import model_selection
from qsg_jax.config import FitConfig
from qsg_jax.estimators import _ranker

# The fixed ``FitConfig`` fields of a search (the grid holds lam, sigma, gamma, step_size).
FIXED = ("num_steps", "num_frequencies", "unlabeled_batch_size", "labeled_batch_size", "loss")


class QS3ORAOCV(ClassifierMixin, BaseEstimator):
  """QS3ORAO with lam, sigma, gamma and the step chosen by stratified k-fold CV; k = 2: QSG-S2AUC.

  Args:
    grid: dict of value lists with the keys lam, sigma, gamma and optionally step_size (default
      ["auto"]), or None for the grid of ``protocol``.
    protocol: "paper" (``model_selection.paper_grid()``, 539 points) or "quick" (12 points);
      used when ``grid`` is None.
    cv: number of folds F.
    cv_unlabeled: the CV trains on a uniform subsample of this many unlabeled points
      (``folds.subsample``; None: all); the refit uses every unlabeled point.
    per_split_gamma: choose gamma per ordinal split (``cross_validate(per_split_gamma=True)``).
    num_steps, num_frequencies, unlabeled_batch_size, labeled_batch_size, loss, scale_inputs,
      random_state, unlabeled_label: as ``qsg_jax.estimators.QS3ORAO``. The CV sees the inputs
      scaled exactly as the refit does (min-max over all rows when ``scale_inputs``); fully
      labeled ``y`` is cross-validated supervised (gamma 1), as ``QS3ORAO`` trains it.

  Attributes (after ``fit``):
    best_params_: dict lam, sigma, gamma, step_size of the chosen setting.
    best_score_: its mean validation AUC (mean over folds and splits).
    cv_results_: dict of arrays over grid points, as scikit-learn's searches: "params",
      "param_<name>", "mean_test_score", "split<f>_test_score".
    best_estimator_: the refitted ``QS3ORAO``.
    classes_, seed_, n_features_in_ (and feature_names_in_ for DataFrame input).
  """

  def __init__(self, grid=None, protocol="paper", cv=5, cv_unlabeled=2000, per_split_gamma=False,
               num_steps=FitConfig.num_steps, num_frequencies=FitConfig.num_frequencies,
               unlabeled_batch_size=FitConfig.unlabeled_batch_size,
               labeled_batch_size=FitConfig.labeled_batch_size, loss=FitConfig.loss,
               scale_inputs=True, random_state=0, unlabeled_label="auto"):
    self.grid = grid
    self.protocol = protocol
    self.cv = cv
    self.cv_unlabeled = cv_unlabeled
    self.per_split_gamma = per_split_gamma
    self.num_steps = num_steps
    self.num_frequencies = num_frequencies
    self.unlabeled_batch_size = unlabeled_batch_size
    self.labeled_batch_size = labeled_batch_size
    self.loss = loss
    self.scale_inputs = scale_inputs
    self.random_state = random_state
    self.unlabeled_label = unlabeled_label

  def fit(self, x, y):
    """Cross-validates on the labeled rows, then refits on all rows (a failed fit leaves the
    fitted state as it was)."""
    with _ranker.fitted_state_kept_on_error(self):
      validation.check_count("cv_unlabeled", self.cv_unlabeled, allow_none=True,
                             fix="None uses every unlabeled point.")
      raw_x, seed = x, _ranker.seed_of(self.random_state)
      # The refit's own checks and scaling, so that the CV sees the points the refit trains on.
      x, unlabeled, classes, codes, (low, scale) = _ranker.prepare_training_data(self, x, y)
      self._check_classes(classes)
      x = ((x - low) / scale).astype(np.float32)
      grid = dict(model_selection.protocol_grid(self.protocol) if self.grid is None else self.grid)
      if unlabeled.any():
        x_u = folds.subsample(x[unlabeled], self.cv_unlabeled, seed)
      else:   # fully labeled: supervised, as QS3ORAO trains it (gamma is irrelevant)
        x_u, grid["gamma"] = None, [1.0]
      result = model_selection.cross_validate(
          x[~unlabeled], codes, x_u, grid=grid, num_folds=self.cv, key=seed,
          num_classes=classes.size, per_split_gamma=self.per_split_gamma,
          config=FitConfig(**{name: getattr(self, name) for name in FIXED}))
      best = _ranker.QS3ORAO(**result.best, **{name: getattr(self, name) for name in FIXED + (
          "scale_inputs", "unlabeled_label")}, random_state=seed).fit(raw_x, y)
      self.best_params_, self.best_score_ = dict(result.best), result.best_score
      self.cv_results_, self.best_estimator_ = _cv_results(result), best
      self.classes_, self.seed_ = best.classes_, seed
    return self

  def _check_classes(self, classes):
    """Hook for subclasses restricting the number of classes."""

  def decision_function(self, x):
    """Ranking scores f(x) of the refitted model: [n]."""
    check_is_fitted(self)
    return self.best_estimator_.decision_function(x)

  def predict(self, x):
    """Predicted classes of the refitted model."""
    check_is_fitted(self)
    return self.best_estimator_.predict(x)

  def score(self, x, y, sample_weight=None):
    """Mean AUC over the k-1 ordinal splits (``QS3ORAO.score``)."""
    check_is_fitted(self)
    return self.best_estimator_.score(x, y, sample_weight)


class QSGS2AUCCV(QS3ORAOCV):
  """QSG-S2AUC (binary semi-supervised AUC) with hyper-parameters chosen by k-fold CV."""

  def _check_classes(self, classes):
    if classes.size != 2:
      raise ValueError(f"QSGS2AUCCV needs exactly 2 labeled classes; found {classes.size}: "
                       f"{classes.tolist()[:10]}. Use QS3ORAOCV for k ordered classes.")


def _cv_results(result):
  """scikit-learn style ``cv_results_`` of a ``CVResult`` (grid points in C order)."""
  names = list(result.grid)
  points = list(itertools.product(*(result.grid[name] for name in names)))
  num_folds = result.fold_scores.shape[-2]
  fold = result.fold_scores.reshape(len(points), num_folds, -1)          # [P, F, k-1]
  out = {"params": [dict(zip(names, p)) for p in points],
         "mean_test_score": folds.nanmean(result.scores.reshape(len(points), -1))}
  for i, name in enumerate(names):
    out[f"param_{name}"] = np.array([p[i] for p in points], dtype=object)
  for f in range(num_folds):
    out[f"split{f}_test_score"] = folds.nanmean(fold[:, f])
  return out
