"""The exact kernel minimizer of the per-split corrections objective (squared loss).

``qsg_jax.fit(..., split_lam=lam_g)`` ranks split j with f + g_j and minimizes
(``qsg_jax.engine.corrections``)

    J(f, g) = (1/s) sum_j [ R^j(f + g_j) + lam_g/2 ||g_j||^2 ] + lam/2 ||f||^2,   s = k-1,

with R^j SAMULT's risk of split j (ordinal paper Eq. 7). Over the kernel expansion on every
training point, f = K a and g_j = K b_j, and each R^j is the quadratic form of
``pairwise_risk`` (R^j(h) = const - 2 d_j^T h + h^T L_j h, d_j = r_j - c_j). The gradient of J is

    dJ/da   = K [ (2/s) sum_j (L_j K (a + b_j) - d_j) + lam a ],
    dJ/db_j = K [ (2/s) (L_j K (a + b_j) - d_j) + (lam_g/s) b_j ],

so (for a positive definite K) the stationary point solves the s + 1 block equations

    (1/s) sum_j L_j K (a + b_j) + lam/2 a = (1/s) sum_j d_j,
    L_j K (a + b_j) + lam_g/2 b_j = d_j                         (j = 1..s),

one linear system of size k n (k = s + 1 blocks of n), solved by LU. Each L_j is a graph
Laplacian for SAMULT (gamma in [0, 1]), so J is convex and this is its global minimizer; tests
check that jax.grad of J vanishes there. Subtracting the block equations shows
lam a = (lam_g / s) sum_j b_j: lam_g -> infinity drives every b_j to 0 and a to
``fit_exact_qsg``'s solution (tests check this limit too).

Cost: the system holds k^2 n^2 numbers (plus s n^2 for the L_j K), O(k^3 n^3) time: an exact
reference for small n, not a scalable method.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.engine import kernels
from qsg_jax import memory
from qsg_jax import numerics
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import pairwise_risk
from qsg_jax.baselines import samult


class ExactSplitModel(NamedTuple):
  """Exact minimizer of the per-split corrections objective, as two kernel models."""
  shared: kernel_expansion.KernelAUCModel     # f = K a: [1, n] coefficients, scores [m].
  per_split: kernel_expansion.KernelAUCModel  # f + g_j = K (a + b_j): [k-1, n], scores [m, k-1].
  split_lam: float                            # lam_g.


@numerics.full_precision
def split_system(kernel, group_w, coef, lam, split_lam):
  """The [k n, k n] matrix and [k n] right-hand side of the block equations (module docstring).

  Args:
    kernel: [n, n] kernel matrix of the centers.
    group_w: [s, n, 3] group mean weights of each split.
    coef: [s, 3, 3] pair coefficients of each split.
    lam: scalar lambda > 0 of f.
    split_lam: scalar lam_g > 0 of the corrections.

  Returns:
    (matrix [(s+1) n, (s+1) n], rhs [(s+1) n]); unknowns ordered (a, b_1, ..., b_s).
  """
  s, n = group_w.shape[:2]
  lk, d = jax.vmap(lambda g, c: pairwise_risk.stationary_system(kernel, g, c, 0.0))(group_w, coef)
  eye = jnp.eye(n, dtype=kernel.dtype)
  zero = jnp.zeros((n, n), kernel.dtype)
  top = [jnp.mean(lk, axis=0) + 0.5 * lam * eye] + [lk[j] / s for j in range(s)]
  rows = [jnp.concatenate(top, axis=1)]
  for j in range(s):
    blocks = [lk[j]] + [lk[j] + 0.5 * split_lam * eye if i == j else zero for i in range(s)]
    rows.append(jnp.concatenate(blocks, axis=1))
  return jnp.concatenate(rows, axis=0), jnp.concatenate([jnp.mean(d, axis=0)] + list(d))


@jax.jit
@jax.default_matmul_precision("highest")
def _solve(centers, group_w, coef, lam, sigma, split_lam):
  """[s + 1, n] coefficients (a, b_1..b_s)."""
  kernel = kernels.gaussian_kernel(centers, centers, sigma)
  matrix, rhs = split_system(kernel, group_w, coef, lam, split_lam)
  return jnp.linalg.solve(matrix, rhs).reshape(group_w.shape[0] + 1, -1)


@jax.default_matmul_precision("highest")
def objective(a, b, kernel, group_w, coef, const, lam, split_lam):
  """J(f, g) over the expansion: f = K a, g_j = K b_j (the function the solution minimizes).

  Args:
    a: [n] coefficients of f.
    b: [s, n] coefficients of the g_j.
    kernel: [n, n] kernel matrix.
    group_w: [s, n, 3] group mean weights.
    coef: [s, 3, 3] pair coefficients.
    const: [s] constants c0 of the risks.
    lam: lambda of f.
    split_lam: lam_g of the corrections.

  Returns:
    Scalar objective.
  """
  f = kernel @ a
  g = b @ kernel                                                   # [s, n] (K symmetric)
  risks = jax.vmap(pairwise_risk.risk, in_axes=(0, 0, 0, 0))(f[None, :] + g, group_w, coef,
                                                             const)
  penalties = 0.5 * split_lam * jnp.sum(b * g, axis=1)
  return jnp.mean(risks + penalties) + 0.5 * lam * (a @ f)


def fit_exact_split(x_labeled, y_labeled, x_unlabeled, *, lam, sigma, gamma, split_lam,
                    num_classes=None, dtype=jnp.float32, memory_fraction=0.8):
  """Solves the per-split corrections objective exactly (squared loss, SAMULT's risk per split).

  Args:
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1, every class present.
    x_unlabeled: [n_u, d] unlabeled points (None allowed only with every gamma = 1).
    lam: scalar lambda > 0 of the shared f (``qsg_jax.fit``'s lam).
    sigma: scalar Gaussian kernel parameter > 0.
    gamma: scalar or [k-1] trade-off in [0, 1] per split.
    split_lam: scalar lam_g > 0, finite (``qsg_jax.fit``'s split_lam; its infinity is
      ``fit_exact_qsg``).
    num_classes: k; default max(y_labeled) + 1.
    dtype: float32 (default) or float64 (needs jax_enable_x64).
    memory_fraction: share of free memory the (k^2 + k) n^2 numbers may take.

  Returns:
    ``ExactSplitModel``: ``baselines.decision_function(model.per_split, x)`` gives the [m, k-1]
    per-split scores f + g_j, ``model.shared`` the [m] scores of f.

  Raises:
    ValueError: bad data or hyper-parameters.
    qsg_jax.memory.InsufficientMemoryError: the system would not fit.
  """
  dtype = kernel_expansion.check_dtype(dtype)
  x_l = validation.check_points("x_labeled", x_labeled, dtype=dtype)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  if np.ndim(lam) or np.ndim(sigma) or np.ndim(split_lam):
    raise ValueError(f"fit_exact_split fits one f and k-1 corrections with one lam, sigma and "
                     f"split_lam, so they must be scalars; received shapes {np.shape(lam)}, "
                     f"{np.shape(sigma)} and {np.shape(split_lam)}.")
  if isinstance(split_lam, (int, float, np.number)) and np.isposinf(split_lam):
    raise ValueError("split_lam=inf freezes the corrections at 0: that is fit_exact_qsg; pass a "
                     "finite split_lam > 0 here.")
  lam, sigma, split_lam = (kernel_expansion.per_split(name, value, 1, 0.0, np.inf,
                                                      closed_low=False)
                           for name, value in (("lam", lam), ("sigma", sigma),
                                               ("split_lam", split_lam)))
  memory_fraction = kernel_expansion.check_memory_fraction(memory_fraction)
  gamma = kernel_expansion.per_split("gamma", gamma, k - 1, *samult.GAMMA_RANGE)
  coef, _ = kernel_expansion.split_coefficients(samult.samult_coefficients,
                                                jnp.asarray(gamma, dtype),
                                                jnp.zeros(k - 1, dtype))
  weightless = kernel_expansion.unlabeled_weightless(coef)
  if x_unlabeled is None or np.asarray(x_unlabeled).size == 0:
    if not weightless:
      raise ValueError(f"no unlabeled data but gamma={gamma.tolist()} gives weight to unlabeled "
                       "pairs: pass x_unlabeled, or set gamma=1 for supervised training.")
    x_u = np.zeros((0, x_l.shape[1]), dtype)
  else:
    x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1], dtype=dtype,
                                  columns=validation.column_names(x_labeled))
    if weightless:   # every unlabeled row reads lam/2 a_u = 0 and lam_g/2 b_{j,u} = 0
      x_u = x_u[:0]
  n = x_l.shape[0] + x_u.shape[0]
  memory.check_allocation(
      (k * k + k) * n * n * dtype.itemsize,
      what=f"fit_exact_split with n = {n} training points and k = {k} holds a {k * n} x {k * n} "
           "system and",
      fix="Subsample x_unlabeled, or use the scalable qsg_jax.fit(..., split_lam=...).",
      fraction=memory_fraction)
  validation.check_kernel_scale("x_labeled and x_unlabeled", np.concatenate([x_l, x_u]),
                                     sigma, dtype)
  centers = jnp.asarray(np.concatenate([x_l, x_u]), dtype)
  group_w = kernel_expansion.split_groups(y_l, k, x_u.shape[0], dtype)
  solution = _solve(centers, group_w, coef, jnp.asarray(lam[0], dtype),
                    jnp.asarray(sigma[0], dtype), jnp.asarray(split_lam[0], dtype))
  if not np.all(np.isfinite(np.asarray(solution))):
    raise FloatingPointError(
        f"fit_exact_split: the linear system gave non-finite coefficients (lam={lam[0]}, "
        f"split_lam={split_lam[0]}, sigma={sigma[0]}): it is singular to working precision. "
        "Increase lam or split_lam, remove duplicate points, or use dtype=float64.")
  a, b = solution[0], solution[1:]
  names = validation.column_names(x_labeled)
  shared = kernel_expansion.KernelAUCModel("exact_split_shared", centers, a[None], sigma, lam,
                                           gamma, None, k, True, names)
  per_split = kernel_expansion.KernelAUCModel(
      "exact_split", centers, a[None, :] + b, np.full(k - 1, sigma[0]), np.full(k - 1, lam[0]),
      gamma, None, k, False, names)
  return ExactSplitModel(shared, per_split, float(split_lam[0]))
