"""Hyper-parameter selection for the ROC-SVM by stratified k-fold cross-validated AUC.

The paper selects lambda by cross-validation (Sec. 4); ``cross_validate`` scores any grid of
``fit`` keyword arguments (lambda, sigma, ...) by the mean validation AUC over folds that keep
each class's share.
"""

from typing import NamedTuple

import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import cv as cv_lib
from qsg_jax.roc_svm import model as model_lib


class CrossValidation(NamedTuple):
  best: dict                # the grid entry with the highest mean validation AUC.
  mean_auc: np.ndarray      # [len(grid)] mean validation AUC per entry.
  fold_auc: np.ndarray      # [len(grid), num_folds] validation AUC per entry and fold.
  grid: tuple               # the grid entries (dicts), in order.


def cross_validate(x, y, grid, *, num_folds=5, seed=0, **fit_kwargs):
  """Mean validation AUC of ``roc_svm.fit`` for each entry of ``grid``.

  Args:
    x: [n, p] training points.
    y: [n] labels, positive where > 0.
    grid: sequence of dicts of ``fit`` keyword arguments to compare, e.g.
      ``[{"lam": 1e-3}, {"lam": 1e-2}]``.
    num_folds: number of stratified folds, a whole number >= 2.
    seed: whole number >= 0 seeding the folds and each fit's key (fold f uses seed + f).
    **fit_kwargs: keyword arguments shared by every fit (kernel, risk, ...).

  Returns:
    ``CrossValidation``; ties go to the earlier grid entry.
  """
  num_folds = cv_lib.check_num_folds(num_folds)
  seed = cv_lib.check_seed(seed)
  entries = () if isinstance(grid, dict) else tuple(grid)
  if isinstance(grid, dict) or not all(isinstance(g, dict) for g in entries):
    raise TypeError("grid must be a sequence of dicts of fit arguments, e.g. "
                    "[{'lam': 1e-3}, {'lam': 1e-2}]; received "
                    f"{type(grid).__name__} {grid!r:.60}.")
  grid = tuple(dict(g) for g in entries)
  if not grid:
    raise ValueError("grid is empty; pass at least one dict of fit arguments.")
  x = validation.check_points("x", x)
  y = np.asarray(y)
  model_lib.check_binary_labels(y, x.shape[0])
  fold_of = cv_lib.stratified_folds(y > 0, num_folds, seed)
  folds = [(np.nonzero(fold_of != f)[0], np.nonzero(fold_of == f)[0])
           for f in range(num_folds)]
  fold_auc = np.zeros((len(grid), num_folds))
  for g, params in enumerate(grid):
    for f, (train, valid) in enumerate(folds):
      result = model_lib.fit(x[train], y[train], key=seed + f, **fit_kwargs, **params)
      fold_auc[g, f] = model_lib.model_auc(result.model, x[valid], y[valid])
  mean_auc = fold_auc.mean(axis=1)
  return CrossValidation(grid[int(np.argmax(mean_auc))], mean_auc, fold_auc, grid)
