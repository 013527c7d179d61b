"""One trial of the ROC-SVM experiments: a timed fit, its test AUC, the CV selection."""

import time

from qsg_jax.roc_svm import model as model_lib
from qsg_jax.roc_svm import selection


def timed_fit(x, y, **kwargs):
  """(fit result, seconds excluding compilation, seconds including it)."""
  start = time.perf_counter()
  result = model_lib.fit(x, y, **kwargs)
  total = time.perf_counter() - start
  return result, total - result.seconds["compile"], total


def auc_percent(result, x, y):
  """AUC (in %) of a fitted model on (x, y)."""
  return 100.0 * model_lib.model_auc(result.model, x, y)


def select(x, y, grid, cv_folds, seed, **fit_kwargs):
  """The grid entry with the best cross-validated AUC (the first entry when there is one)."""
  if len(grid) == 1:
    return dict(grid[0]), None
  cv = selection.cross_validate(x, y, grid, num_folds=cv_folds, seed=seed, **fit_kwargs)
  return cv.best, [float(a) for a in cv.mean_auc]
