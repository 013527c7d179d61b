"""Scoring any fitted baseline and judging the scores by per-split AUC (ordinal paper, Eq. 2).

Every baseline answers ``decision_function(model, x)``: [m] scores for binary models and for
SVOREX (one ranking function for every split), [m, k-1] for M-SAMULT / M-PNU-AUC (column j from
the model of split j). ``qsg_jax.metrics.split_aucs`` turns either form into the k-1 AUCs of the
splits {y <= j} vs {y > j}; ``mean_split_auc`` averages them (binary: the plain AUC).
"""

import numpy as np

from qsg_jax import metrics
from qsg_jax.metrics import split_aucs  # pylint: disable=unused-import  (baselines.split_aucs)
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import svorex


def decision_function(model, x, chunk_size=None):
  """Scores of a fitted baseline model on x.

  Args:
    model: a ``KernelAUCModel`` (SAMULT, PNU-AUC and their multi-class versions) or a
      ``SvorexModel``.
    x: [m, d] points preprocessed like the training data.
    chunk_size: rows per kernel block (kernel models only; default keeps blocks near 128 MiB).

  Returns:
    NumPy [m] scores (binary models, SVOREX) or [m, k-1] (multi-class kernel models).
  """
  if isinstance(model, kernel_expansion.KernelAUCModel):
    return kernel_expansion.decision_function(model, x, chunk_size)
  if isinstance(model, svorex.SvorexModel):
    if chunk_size is not None:   # said, not ignored
      raise ValueError(f"chunk_size={chunk_size!r:.40} applies to the kernel models only; an "
                       "SVOREX model scores through scikit-learn. Drop chunk_size.")
    return svorex.decision_function(model, x)
  raise TypeError(f"expected a model from a qsg_jax.baselines fit function (KernelAUCModel or "
                  f"SvorexModel); received {type(model).__name__}. For QSG-S2AUC / QS3ORAO use "
                  "qsg_jax.decision_function.")


def mean_split_auc(scores, labels, num_classes):
  """``metrics.ordinal_auc`` as a Python float: the mean over the k-1 splits of
  ``metrics.split_aucs`` ([m] or [m, k-1] scores; ordinal paper, Eq. 2; k = 2: binary AUC)."""
  return float(metrics.ordinal_auc(scores, labels, num_classes))
