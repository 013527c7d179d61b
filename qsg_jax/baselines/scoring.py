"""Scoring any fitted baseline and judging the scores by per-split AUC (ordinal paper, Eq. 2).

Every baseline answers ``decision_function(model, x)``: [m] scores for binary models and for
SVOREX (one ranking function for every split), [m, k-1] for M-SAMULT / M-PNU-AUC (column j from
the model of split j). ``split_aucs`` turns either form into the k-1 AUCs of the splits
{y <= j} vs {y > j}; ``mean_split_auc`` averages them (binary: the plain AUC).
"""

import numpy as np

from qsg_jax import metrics
from qsg_jax import _validation as validation
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import svorex


def decision_function(model, x, chunk_size=None):
  """Scores of a fitted baseline model on x.

  Args:
    model: a ``KernelAUCModel`` (SAMULT, PNU-AUC and their multi-class versions) or a
      ``SvorexModel``.
    x: [m, d] points preprocessed like the training data.
    chunk_size: rows per kernel block (kernel models; default keeps blocks near 128 MiB).

  Returns:
    NumPy [m] scores (binary models, SVOREX) or [m, k-1] (multi-class kernel models).
  """
  if isinstance(model, kernel_expansion.KernelAUCModel):
    return kernel_expansion.decision_function(model, x, chunk_size)
  if isinstance(model, svorex.SvorexModel):
    return svorex.decision_function(model, x)
  raise TypeError(f"expected a model from a qsg_jax.baselines fit function (KernelAUCModel or "
                  f"SvorexModel); received {type(model).__name__}. For QSG-S2AUC / QS3ORAO use "
                  "qsg_jax.decision_function.")


def split_aucs(scores, labels, num_classes):
  """AUC of each split {y <= j} vs {y > j}, split j scored by column j (or by shared scores).

  Args:
    scores: [m] scores shared by every split, or [m, k-1] per-split scores.
    labels: [m] int labels 0..k-1.
    num_classes: k.

  Returns:
    [k-1] NumPy AUCs (NaN for a split with an empty side).

  Raises:
    ValueError: non-finite scores, labels outside 0..k-1 (1..k: "subtract 1"), wrong shapes.

  Example:
    >>> split_aucs(np.array([[0., 0.], [1., 0.], [1., 1.]]), np.array([0, 1, 2]), 3)
    array([1., 1.], dtype=float32)
  """
  num_classes = validation.check_num_classes(num_classes)
  validation.check_scores("scores", scores, ndim=np.ndim(scores))
  validation.check_class_labels(labels, num_classes)
  scores, labels = np.asarray(scores), np.asarray(labels)   # exact: the metrics rank on the host
  k1 = num_classes - 1
  if scores.ndim == 1:
    return np.asarray(metrics.ordinal_auc_per_split(scores, labels, int(num_classes)),
                      np.float32)
  if scores.ndim != 2 or scores.shape[1] != k1 or scores.shape[0] != labels.shape[0]:
    raise ValueError(f"scores must have shape [m] or [m, k-1] = [{labels.shape[0]}, {k1}]; "
                     f"received {scores.shape}. Pass num_classes equal to the model's k.")
  return np.array([metrics.masked_auc(scores[:, j], labels > j, labels <= j) for j in range(k1)],
                  np.float32)


def mean_split_auc(scores, labels, num_classes):
  """Mean over the k-1 splits of ``split_aucs`` (ordinal paper, Eq. 2; k = 2: binary AUC)."""
  return float(np.mean(split_aucs(scores, labels, num_classes)))
