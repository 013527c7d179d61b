"""The exact kernel minimizer of the QSG-S2AUC / QS3ORAO objective (squared loss).

QS3ORAO learns ONE ranking function f for all k-1 ordinal splits: it minimizes the mean over the
splits of SAMULT's risk of f (ordinal paper Eqs. 7-8) plus lam/2 ||f||_H^2 (Eq. 9); QSG-S2AUC is
the case k = 2. ``qsg_jax.fit`` approximates the minimizer f* with random features and
quadruply stochastic gradients; this module computes f* itself over the kernel expansion on every
training point, in closed form (``pairwise_risk.mean_stationary_system``), at the exact
baselines' cost (O(n^3) time, about 4 n^2 numbers of memory, checked before allocating).

Why it is useful beside M-SAMULT: M-SAMULT fits k-1 *independent* functions, split j scored by
its own function, a larger model class than one ranking function. Comparing QS3ORAO with this
exact minimizer of its own objective measures the cost of the stochastic approximation alone;
comparing this with M-SAMULT measures the cost of sharing one function across the splits. For
k = 2 it is SAMULT (same risk, same regularizer).
"""

import jax.numpy as jnp

from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import samult


def fit_exact_qsg(x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, num_classes=None,
                  dtype=jnp.float32, memory_fraction=0.8):
  """Solves the QS3ORAO / QSG-S2AUC objective exactly: one ranking function for every split.

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1, every class present.
    x_unlabeled: [n_u, d] unlabeled points (None allowed only with every gamma = 1).
    lam: scalar regularization lambda > 0 (``qsg_jax.fit``'s lam).
    sigma: scalar Gaussian kernel parameter > 0, k(x, z) = exp(-sigma ||x - z||^2).
    gamma: scalar or [k-1] trade-off in [0, 1] per split (1 = supervised), as in ``qsg_jax.fit``.
    num_classes: k; default max(y_labeled) + 1.
    dtype: float32 (default) or float64 (needs jax_enable_x64).
    memory_fraction: share of free memory the 4 n^2 numbers may take before the fit refuses.

  Returns:
    ``KernelAUCModel`` with one row of coefficients; ``qsg_jax.baselines.decision_function``
    gives [m] scores (the ranking function f*).

  Raises:
    ValueError: bad data or hyper-parameters.
    qsg_jax.memory.InsufficientMemoryError: the n x n matrices would not fit.
  """
  return kernel_expansion.fit_splits(
      "exact_qsg", samult.samult_coefficients, x_labeled, y_labeled, x_unlabeled, lam=lam,
      sigma=sigma, gamma=gamma, gamma_range=samult.GAMMA_RANGE, num_classes=num_classes,
      binary=True, dtype=dtype, memory_fraction=memory_fraction, unlabeled_unused_at=1.0,
      shared=True)
