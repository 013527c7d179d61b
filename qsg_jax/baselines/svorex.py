"""Supervised SVOREX (Chu and Keerthi 2007) through ``skordinal``, in the baselines' interface.

``skordinal.classifiers.SVOR(constraints="explicit")`` is the authors' C implementation of support
vector ordinal regression with explicit threshold constraints. Its RBF kernel is
exp(-kappa ||x - z||^2) with kappa = ``gamma`` of SVOR, which is this package's sigma (a test
checks the latent projection against that sum). The latent projection f(x) is one ranking
function for all classes, so its ordinal AUC scores every split with the same f (Eq. 2).
The method is supervised: unlabeled points are accepted and ignored, so an experiment loop can
call every method with the same arguments.
"""

from typing import NamedTuple, Optional

import numpy as np
from skordinal.classifiers import SVOR

from qsg_jax import _validation as validation
from qsg_jax import memory

# Rows per call into the C predictor (it converts its input to Python lists).
PREDICT_CHUNK = 16384


class SvorexModel(NamedTuple):
  """A fitted SVOREX model."""
  estimator: SVOR          # the fitted skordinal estimator.
  num_classes: int         # k.
  num_features: int        # d, checked when scoring.
  c: float                 # SVM cost C.
  sigma: float             # kernel parameter, k(x, z) = exp(-sigma ||x - z||^2).
  feature_names: Optional[tuple] = None  # x_labeled's column names when it was a data frame.
  training_box: Optional[np.ndarray] = None  # [2, d] column minima and maxima of the labeled
                           # points (rows far outside it warn when scored).


def fit_svorex(x_labeled, y_labeled, x_unlabeled=None, *, c=1.0, sigma=1.0, tol=1e-3,
               num_classes=None):
  """Fits SVOREX on the labeled points.

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1, every class present.
    x_unlabeled: ignored (SVOREX is supervised); accepted for a uniform experiment loop.
    c: cost C > 0 of the SVM (larger fits the labeled data harder).
    sigma: Gaussian kernel parameter > 0.
    tol: tolerance of the solver's stopping criterion.
    num_classes: k; default max(y_labeled) + 1.

  Returns:
    ``SvorexModel``.

  Raises:
    ValueError: bad data or hyper-parameters.
    qsg_jax.memory.InsufficientMemoryError: the solver's kernel cache (4 n^2 bytes) would not
      fit; checked before the solver starts (its C code would otherwise fail mid-way).
  """
  del x_unlabeled
  # The C solver computes in float64: the points keep their precision (no float32 rounding).
  x_l = validation.check_points("x_labeled", x_labeled, kernel=True, dtype=np.float64)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  c = validation.check_positive("c", c)
  sigma = validation.check_positive("sigma", sigma)
  tol = validation.check_positive("tol", tol)
  # Identical points or a sigma whose every kernel value rounds to 1 in float64: a constant
  # model. The C solver sums squared differences, so points far from the origin lose nothing.
  validation.check_kernel_scale("x_labeled", x_l, sigma, np.float64, expansion=False)
  n = x_l.shape[0]
  memory.check_allocation(   # the C solver caches the whole lower triangle of the kernel
      8 * n * (n + 1) // 2, f"SVOREX with {n} labeled points caches their {n} x {n} kernel "
      "(lower triangle, float64) and", "Subsample the labeled points (memory grows as n^2), or "
      "use qsg_jax.fit (QS3ORAO), whose memory does not grow with n.")
  estimator = SVOR(C=c, kernel="rbf", gamma=sigma, tol=tol, constraints="explicit")
  estimator.fit(x_l, y_l)
  return SvorexModel(estimator, k, x_l.shape[1], c, sigma, validation.column_names(x_labeled),
                     validation.box_of(x_l))


def decision_function(model: SvorexModel, x):
  """Latent projection f(x) of SVOREX (larger means a higher class).

  Args:
    model: ``SvorexModel``.
    x: [m, d] points preprocessed like the training data.

  Returns:
    [m] NumPy float64 scores.
  """
  x = validation.check_points("x", x, dim=model.num_features, allow_empty=True, kernel=True,
                               dtype=np.float64, columns=model.feature_names)
  if model.training_box is not None:
    validation.warn_if_out_of_reach(model.training_box, model.sigma, x)
  parts = [model.estimator.predict_projection(x[i:i + PREDICT_CHUNK])
           for i in range(0, x.shape[0], PREDICT_CHUNK)]
  return np.concatenate(parts) if parts else np.zeros(0)


def predict(model: SvorexModel, x):
  """Predicted classes 0..k-1 (number of SVOREX thresholds below f(x))."""
  scores = decision_function(model, x)
  thresholds = np.asarray(model.estimator.thresholds_)
  return (scores[:, None] > thresholds[None, :]).sum(axis=1)
