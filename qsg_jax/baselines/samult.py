"""SAMULT (Xie and Li 2018): semi-supervised AUC without class priors, exact kernel solution.

Risk (QSG-S2AUC paper Eqs. 2-8; ordinal paper Eq. 7 for one split), squared pairwise loss
l(u, v) = (1 - u + v)^2 over the labeled positives D_p, negatives D_n and unlabeled points D_u:

    R = gamma R_PN + (1 - gamma) (R_PU + R_NU - 1/2),
    R_PN = mean_{D_p x D_n} l(f_p, f_n),  R_PU = mean_{D_p x D_u} l(f_p, f_u),
    R_NU = mean_{D_u x D_n} l(f_u, f_n),

gamma in [0, 1]: gamma = 1 is the supervised PN-AUC problem, gamma = 0 uses labeled-unlabeled
pairs only. The model minimizes R(f) + lam/2 ||f||_H^2 (QSG-S2AUC Eq. 9) over the kernel
expansion on all training points, solved exactly (``pairwise_risk``, O(n^3) time, O(n^2) memory).

Choices where our texts are silent (documented, the standard forms): the regularizer is the RKHS
norm lam/2 alpha^T K alpha of Eq. 9 (so SAMULT and QSG-S2AUC minimize the same objective), the
expansion runs over every labeled and unlabeled training point, there is no bias term (AUC is
invariant to shifts of f), and the means are over all pairs of the two sets.
"""

import jax.numpy as jnp

from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import pairwise_risk

P, N, U = pairwise_risk.POSITIVE, pairwise_risk.NEGATIVE, pairwise_risk.UNLABELED
GAMMA_RANGE = (0.0, 1.0)


def samult_coefficients(gamma, prior=None):
  """Pair coefficients of the SAMULT risk.

  Args:
    gamma: scalar trade-off in [0, 1].
    prior: ignored (SAMULT needs no class prior); present so every method has one signature.

  Returns:
    (coef [3, 3], const): C[P, N] = gamma, C[P, U] = C[U, N] = 1 - gamma, c0 = -(1 - gamma)/2.

  Raises:
    ValueError: a concrete gamma outside [0, 1] (negative pair weights: not SAMULT's risk);
      traced values (inside jit / vmap) are not checked.
  """
  del prior
  kernel_expansion.check_coefficient_argument("gamma", gamma, *GAMMA_RANGE)
  gamma = jnp.asarray(gamma)
  coef = jnp.zeros((3, 3), jnp.result_type(gamma, jnp.float32))
  coef = coef.at[P, N].set(gamma).at[P, U].set(1.0 - gamma).at[U, N].set(1.0 - gamma)
  return coef, -0.5 * (1.0 - gamma)


def fit_samult(x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, dtype=jnp.float32,
               memory_fraction=0.8):
  """Fits binary SAMULT exactly.

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] labels in {0, 1}, 1 = positive; both present.
    x_unlabeled: [n_u, d] unlabeled points (None allowed only with gamma = 1).
    lam: regularization lambda > 0.
    sigma: Gaussian kernel parameter > 0, k(x, z) = exp(-sigma ||x - z||^2).
    gamma: trade-off in [0, 1] (1 = supervised PN).
    dtype: float32 (default) or float64 (needs jax_enable_x64).
    memory_fraction: share of free memory the 4 n^2 numbers may take before the fit refuses.

  Returns:
    ``KernelAUCModel``; score points with ``qsg_jax.baselines.decision_function`` ([m] scores).

  Raises:
    ValueError: bad data or hyper-parameters.
    qsg_jax.memory.InsufficientMemoryError: the n x n matrices would not fit.
  """
  return kernel_expansion.fit_splits(
      "samult", samult_coefficients, x_labeled, y_labeled, x_unlabeled, lam=lam, sigma=sigma,
      gamma=gamma, gamma_range=GAMMA_RANGE, num_classes=2, binary=True, dtype=dtype,
      memory_fraction=memory_fraction, unlabeled_unused_at=1.0)
