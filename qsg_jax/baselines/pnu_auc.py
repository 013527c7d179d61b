"""PNU-AUC (Sakai, Niu and Sugiyama 2018): semi-supervised AUC from PU and NU learning, exact.

With the positive class prior theta_P = pi and theta_N = 1 - pi, unlabeled data behave as the
mixture pi p+ + (1 - pi) p-, which makes the PU and NU AUC risks unbiased estimates of R_PN:

    R_PU = 1/theta_N mean_{D_p x D_u} l(f_p, f_u) - theta_P/theta_N mean_{D_p x D_p} l(f_p, f_p'),
    R_NU = 1/theta_P mean_{D_u x D_n} l(f_u, f_n) - theta_N/theta_P mean_{D_n x D_n} l(f_n', f_n),

and the PNU-AUC risk mixes them with R_PN by eta in [-1, 1] (Sakai et al.'s sign convention):

    R = (1 - eta) R_PN + eta R_PU     (eta >= 0),
    R = (1 + eta) R_PN - eta R_NU     (eta < 0).

The model minimizes R(f) + lam/2 ||f||_H^2 over the kernel expansion on all training points with
the squared loss l(u, v) = (1 - u + v)^2, solved exactly (``pairwise_risk``).

In this package's uniform interface ``gamma`` is that eta: gamma = 0 is the supervised PN
problem (the same solution as SAMULT with gamma = 1), gamma = 1 is pure PU, gamma = -1 pure NU;
the QSG-S2AUC paper searches it over -1..1 in steps of 0.1.

The class prior. The QSG-S2AUC paper (Sec. 6.1) sets pi to "the class proportion in the whole
training set, which can be estimated by du Plessis et al. (2015)": the share of positives among
the labeled AND unlabeled training points, whose labels a semi-supervised learner does not see.
Two options: ``prior=None`` (or "labeled", the default) estimates it as the labeled share of
positives (for ordinal split j, the labeled share of classes > j; ``estimate_prior``), which needs
no hidden label and is an unbiased estimate when the labeled points are a uniform sample;
``prior=training_set_prior(y_labeled, y_unlabeled_true)`` is the paper's whole-training-set
proportion (an oracle in experiments, where the unlabeled points' labels are known). Its effect
on the paper's protocol is measured in ``experiments/reproduction/RESULTS.md`` (section "PNU-AUC
class prior").

Choices where our texts are silent (documented): the positive-positive and negative-negative
means run over all ordered pairs including a point with itself (V-statistics; the diagonal only
adds a constant); the regularizer is the RKHS norm of QSG-S2AUC Eq. 9 rather than a ridge on the
coefficients. The negative PP / NN coefficients make the empirical risk non-convex when
|eta| theta_P/theta_N > 1 (eta > 0) or |eta| theta_N/theta_P > 1 (eta < 0); the closed form then
returns the stationary point, which cross-validation judges like any other grid point.
"""

import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import pairwise_risk

P, N, U = pairwise_risk.POSITIVE, pairwise_risk.NEGATIVE, pairwise_risk.UNLABELED
GAMMA_RANGE = (-1.0, 1.0)
PRIOR_RANGE = (0.0, 1.0)   # open at both ends: theta_P and theta_N = 1 - theta_P divide
PRIOR_FIX = ("The prior is the positive class share P(y > j), strictly between 0 and 1: pass "
             "prior=None (the labeled share) or qsg_jax.baselines.training_set_prior(...).")


def estimate_prior(y_labeled, num_classes=None):
  """Positive class prior of every split from the labeled proportions: pi_j = mean(y > j).

  Args:
    y_labeled: [n_l] int labels 0..k-1 (binary: {0, 1}).
    num_classes: k, or None to infer max(y) + 1.

  Returns:
    [k-1] NumPy float64 priors, each strictly inside (0, 1) since every class is present.

  Example:
    >>> estimate_prior(np.array([0, 0, 0, 1]))
    array([0.25])
  """
  y = np.asarray(y_labeled)
  if y.ndim != 1:
    raise ValueError(f"y_labeled must have shape [n_l]; received shape {y.shape}.")
  y, k = validation.check_labels(y, y.shape[0], num_classes)
  return np.array([np.mean(y > j) for j in range(k - 1)])


def training_set_prior(y_labeled, y_unlabeled, num_classes=None):
  """The QSG-S2AUC paper's prior: class proportion of the whole training set, per split.

  pi_j = share of points with label > j among the labeled AND unlabeled training points (the
  unlabeled points' true labels, hidden from the learner: an oracle the paper says can be
  estimated by the method of du Plessis, Niu and Sugiyama 2015).

  Args:
    y_labeled: [n_l] int labels 0..k-1 of the labeled points (every class present).
    y_unlabeled: [n_u] int labels 0..k-1 of the unlabeled training points (their true labels).
    num_classes: k, or None to infer max(y) + 1 over both.

  Returns:
    [k-1] NumPy float64 priors in (0, 1).

  Example:
    >>> training_set_prior(np.array([0, 1]), np.array([0, 0, 0, 0, 0, 0, 0, 1]))
    array([0.2])
  """
  y_l = np.asarray(y_labeled)
  y_u = np.asarray(y_unlabeled)
  for name, y in (("y_labeled", y_l), ("y_unlabeled", y_u)):
    if y.ndim != 1:
      raise ValueError(f"{name} must have shape [n]; received shape {y.shape}.")
  y_l, k = validation.check_labels(y_l, y_l.shape[0], num_classes)
  y = np.concatenate([y_l.astype(np.int64), _true_labels(y_u, k)])
  return np.array([np.mean(y > j) for j in range(k - 1)])


def _true_labels(y, k):
  """The unlabeled points' true labels as int64 in 0..k-1 (a class may be absent)."""
  if y.dtype == bool:
    y = y.astype(np.int64)
  if not np.issubdtype(y.dtype, np.number) or np.issubdtype(y.dtype, np.complexfloating):
    raise ValueError(f"y_unlabeled must hold integer labels 0..{k - 1}; received dtype {y.dtype}.")
  if np.any(~np.isfinite(y)) or np.any(y != np.round(y)):
    raise ValueError(f"y_unlabeled must hold integer labels 0..{k - 1}; it holds non-integer or "
                     "non-finite values.")
  if np.any(y < 0):
    raise ValueError("y_unlabeled must hold the unlabeled points' true labels 0..k-1 (the "
                     "paper's prior is an oracle); it holds negative values such as the "
                     "unlabeled marker -1. Without those labels use prior=None (labeled share).")
  if np.any(y > k - 1):
    raise ValueError(f"y_unlabeled holds labels up to {int(np.max(y))}, but the labeled points "
                     f"give k = {k} classes (0..{k - 1}).")
  return y.astype(np.int64)


def pnu_coefficients(gamma, prior):
  """Pair coefficients of the PNU-AUC risk.

  Args:
    gamma: scalar eta in [-1, 1].
    prior: scalar theta_P in (0, 1).

  Returns:
    (coef [3, 3], const = 0): C[P, N] = 1 - |eta|; for eta > 0 C[P, U] = eta/theta_N and
    C[P, P] = -eta theta_P/theta_N; for eta < 0 C[U, N] = |eta|/theta_P and
    C[N, N] = -|eta| theta_N/theta_P.

  Raises:
    ValueError: a concrete gamma outside [-1, 1] or prior outside (0, 1) (the weights would
      be infinite or not PNU-AUC's); traced values (inside jit / vmap) are not checked.
  """
  kernel_expansion.check_coefficient_argument("gamma", gamma, *GAMMA_RANGE)
  kernel_expansion.check_coefficient_argument("prior", prior, *PRIOR_RANGE, closed_low=False,
                                              closed_high=False, fix=PRIOR_FIX)
  gamma = jnp.asarray(gamma)
  prior = jnp.asarray(prior, gamma.dtype)
  theta_p, theta_n = prior, 1.0 - prior
  pu, nu = jnp.maximum(gamma, 0.0), jnp.maximum(-gamma, 0.0)
  coef = jnp.zeros((3, 3), jnp.result_type(gamma, jnp.float32))
  coef = (coef.at[P, N].set(1.0 - jnp.abs(gamma))
          .at[P, U].set(pu / theta_n).at[P, P].set(-pu * theta_p / theta_n)
          .at[U, N].set(nu / theta_p).at[N, N].set(-nu * theta_n / theta_p))
  return coef, jnp.zeros((), coef.dtype)


def fit_pnu_auc(x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, prior=None,
                dtype=jnp.float32, memory_fraction=0.8):
  """Fits binary PNU-AUC exactly.

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] labels in {0, 1}, 1 = positive; both present.
    x_unlabeled: [n_u, d] unlabeled points (None allowed only with gamma = 0).
    lam: regularization lambda > 0.
    sigma: Gaussian kernel parameter > 0, k(x, z) = exp(-sigma ||x - z||^2).
    gamma: eta in [-1, 1] (0 = supervised PN, > 0 adds PU, < 0 adds NU).
    prior: None or "labeled" (default): the labeled share of positives (``estimate_prior``);
      or the positive class prior in (0, 1), e.g.
      ``qsg_jax.baselines.training_set_prior(y_labeled, y_u_true)``,
      the QSG-S2AUC paper's class proportion of the whole training set.
    dtype: float32 (default) or float64 (needs jax_enable_x64).
    memory_fraction: share of free memory the 4 n^2 numbers may take before the fit refuses.

  Returns:
    ``KernelAUCModel`` (its ``prior`` records the prior used).
  """
  return fit_pnu_auc_splits(
      "pnu_auc", x_labeled, y_labeled, x_unlabeled, lam=lam, sigma=sigma, gamma=gamma,
      prior=prior, num_classes=2, binary=True, dtype=dtype, memory_fraction=memory_fraction)


def fit_pnu_auc_splits(method, x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, prior,
                       num_classes, binary, dtype, memory_fraction):
  """PNU-AUC fit of every split with its prior (the body of the binary and multi-class fits)."""
  dtype = kernel_expansion.check_dtype(dtype)
  x_l = validation.check_points("x_labeled", x_labeled, dtype=dtype)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  if isinstance(prior, str):
    if prior != "labeled":
      raise ValueError(f"prior must be None, 'labeled' or numbers in "
                       f"{kernel_expansion.interval(*PRIOR_RANGE, False, False)}; received "
                       f"{prior!r:.60}. For the paper's whole-training-set proportion pass "
                       "qsg_jax.baselines.training_set_prior(y_labeled, y_unlabeled_true).")
    prior = None
  if prior is None:
    prior = estimate_prior(y_l, k)
  else:
    prior = kernel_expansion.per_split("prior", prior, k - 1, *PRIOR_RANGE, closed_low=False,
                                       closed_high=False, fix=PRIOR_FIX)
  return kernel_expansion.fit_splits(
      method, pnu_coefficients, x_labeled, y_l, x_unlabeled, lam=lam, sigma=sigma, gamma=gamma,
      gamma_range=GAMMA_RANGE, prior=prior, num_classes=k, binary=binary, dtype=dtype,
      memory_fraction=memory_fraction, unlabeled_unused_at=0.0)
