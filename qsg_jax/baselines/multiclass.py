"""M-SAMULT and M-PNU-AUC: k-1 exact binary models, one per ordinal split (ordinal paper, Sec. 5).

The ordinal paper extends the binary baselines "by using a multiclass training paradigm": model j
is trained on the binary problem {y <= j} (negative) vs {y > j} (positive) with the shared
unlabeled data, and the reported AUC is the mean over splits of the AUC of split j scored by
model j (its Eq. 2; ``qsg_jax.baselines.mean_split_auc``). The k-1 models are independent, so
each may have its own lam, sigma and gamma (pass scalars or [k-1] arrays; the paper searches
gamma per subproblem). All models expand over the same training points; they are solved one after
the other, so memory is that of one binary fit.
"""

import jax.numpy as jnp

from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import pnu_auc
from qsg_jax.baselines import samult


def fit_m_samult(x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, num_classes=None,
                 dtype=jnp.float32, memory_fraction=0.8):
  """Fits M-SAMULT: one exact SAMULT model per split.

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1, every class present.
    x_unlabeled: [n_u, d] unlabeled points (None allowed only with every gamma = 1).
    lam: scalar or [k-1] lambda > 0.
    sigma: scalar or [k-1] Gaussian kernel parameter > 0.
    gamma: scalar or [k-1] trade-off in [0, 1] (1 = supervised).
    num_classes: k; default max(y_labeled) + 1.
    dtype: float32 (default) or float64.
    memory_fraction: share of free memory the 4 n^2 numbers may take before the fit refuses.

  Returns:
    ``KernelAUCModel``; ``decision_function`` gives [m, k-1] scores (column j: model j).
  """
  return kernel_expansion.fit_splits(
      "m_samult", samult.samult_coefficients, x_labeled, y_labeled, x_unlabeled, lam=lam,
      sigma=sigma, gamma=gamma, gamma_range=samult.GAMMA_RANGE, num_classes=num_classes,
      binary=False, dtype=dtype, memory_fraction=memory_fraction, unlabeled_unused_at=1.0)


def fit_m_pnu_auc(x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, prior=None,
                  num_classes=None, dtype=jnp.float32, memory_fraction=0.8):
  """Fits M-PNU-AUC: one exact PNU-AUC model per split.

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1, every class present.
    x_unlabeled: [n_u, d] unlabeled points (None allowed only with every gamma = 0).
    lam: scalar or [k-1] lambda > 0.
    sigma: scalar or [k-1] Gaussian kernel parameter > 0.
    gamma: scalar or [k-1] eta in [-1, 1] (0 = supervised; see ``pnu_auc``).
    prior: scalar or [k-1] split priors P(y > j); default the labeled proportions.
    num_classes: k; default max(y_labeled) + 1.
    dtype: float32 (default) or float64.
    memory_fraction: share of free memory the 4 n^2 numbers may take before the fit refuses.

  Returns:
    ``KernelAUCModel``; ``decision_function`` gives [m, k-1] scores.
  """
  return pnu_auc.fit_pnu_auc_splits(
      "m_pnu_auc", x_labeled, y_labeled, x_unlabeled, lam=lam, sigma=sigma, gamma=gamma,
      prior=prior, num_classes=num_classes, binary=False, dtype=dtype,
      memory_fraction=memory_fraction)
