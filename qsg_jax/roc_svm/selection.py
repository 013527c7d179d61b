"""Hyper-parameter selection for the ROC-SVM by stratified k-fold cross-validated AUC.

The paper selects lambda by cross-validation (Sec. 4); ``cross_validate`` scores any list of
``fit`` keyword arguments (lambda, sigma, ...) by the mean validation AUC over folds that keep
each class's share (``qsg_jax.folds``: the folds, ``CVResult`` and best-point rule of every
cross-validation in the package).
"""

import difflib
import inspect
import warnings

import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import errors
from qsg_jax import folds
from qsg_jax.roc_svm import model as model_lib


def cross_validate(x, y, grid, *, num_folds=5, seed=0, **fit_kwargs) -> folds.CVResult:
  """Mean validation AUC of ``roc_svm.fit`` for each entry of ``grid``.

  Args:
    x: [n, p] training points.
    y: [n] labels, positive where > 0.
    grid: sequence of dicts of ``fit`` keyword arguments to compare, e.g.
      ``[{"lam": 1e-3}, {"lam": 1e-2}]``.
    num_folds: number of stratified folds, a whole number >= 2 (copies of a row share one).
    seed: whole number >= 0 seeding the folds and each fit's key (fold f uses seed + f).
    **fit_kwargs: keyword arguments shared by every fit (kernel, risk, ...).

  Returns:
    ``folds.CVResult``: ``best`` the chosen entry, ``scores`` [len(grid), 1] mean validation AUC,
    ``fold_scores`` [len(grid), num_folds, 1], ``grid`` the entries; ties go to the earlier
    entry, entries without a finite AUC are never chosen: from a fold whose fit diverged
    (``DivergenceError``) on, the entry's folds score NaN (not fitted), and so does its mean.
  """
  num_folds, seed = folds.check_num_folds(num_folds), folds.check_seed(seed)
  entries = () if isinstance(grid, dict) else tuple(grid)
  if isinstance(grid, dict) or not all(isinstance(g, dict) for g in entries):
    raise TypeError("grid must be a sequence of dicts of fit arguments, e.g. "
                    "[{'lam': 1e-3}, {'lam': 1e-2}]; received "
                    f"{type(grid).__name__} {grid!r:.60}.")
  grid = tuple(dict(g) for g in entries)
  if not grid:
    raise ValueError("grid is empty; pass at least one dict of fit arguments.")
  known = set(inspect.signature(model_lib.fit).parameters) - {"x", "y"}
  if "key" in fit_kwargs:
    raise ValueError("key is not an argument of cross_validate: fold f's fit uses key seed + f "
                     "(pass seed).")
  closest = lambda name: difflib.get_close_matches(name, sorted(known - {"key"}), n=2,
                                                   cutoff=0.4)
  unknown = sorted(set(fit_kwargs) - known)
  if unknown:
    raise TypeError(f"{unknown} are not arguments of cross_validate or roc_svm.fit (closest: "
                    f"{closest(unknown[0])}).")
  for entry in grid:
    unknown = sorted(set(entry) - known)
    twice = sorted(set(entry) & (set(fit_kwargs) | {"key"}))
    if unknown or twice:
      raise ValueError(f"grid entry {entry!r:.80}: " + (
          f"{unknown} are not arguments of roc_svm.fit (closest: {closest(unknown[0])})"
          if unknown else f"{twice} are also given outside the grid (or are the folds' keys, "
          "seed + fold): pass each argument in one place") + ".")
  x = validation.check_points("x", x)
  y = np.asarray(y)
  model_lib.check_binary_labels(y, x.shape[0])
  validation.refuse_one_point("x", x)   # before the folds, which count distinct rows
  fold_of = folds.stratified_folds(y > 0, num_folds, seed, points=x)
  fold_scores = np.zeros((len(grid), num_folds, 1))
  for g, params in enumerate(grid):
    for f in range(num_folds):
      train, valid = fold_of != f, fold_of == f
      try:
        result = model_lib.fit(x[train], y[train], key=seed + f, **fit_kwargs, **params)
      except errors.DivergenceError:   # NaN: never chosen (as the library's other CVs)
        fold_scores[g, f:] = np.nan      # its mean is NaN already: the other folds are not fitted
        break
      with warnings.catch_warnings():   # the user's own rows: out of a narrow kernel's reach
        warnings.simplefilter("ignore", errors.UnscaledFeaturesWarning)   # is its low score
        fold_scores[g, f] = model_lib.model_auc(result.model, x[valid], y[valid])
  scores = fold_scores.mean(axis=1)
  (best,) = folds.best_point(scores[:, 0], fix="no grid entry gave a finite validation AUC: "
                             "every fit diverged or made no progress; fit one entry with "
                             "roc_svm.fit to see why (e.g. the learning rate, or lam too small "
                             "or too large).")
  return folds.CVResult(grid[best], float(scores[best, 0]), scores, fold_scores, grid)
