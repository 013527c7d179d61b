"""Squared pairwise AUC risks over groups of points and their exact kernel minimizer.

Both exact baselines (SAMULT, PNU-AUC) minimize a risk of one form. The training points fall into
three groups, positive (P), negative (N) and unlabeled (U), indexed 0, 1, 2; ``group_w`` holds the
uniform mean weights of each group as columns, G[a, g] = [a in g] / |g|. A 3 x 3 coefficient
matrix C says how much each ordered pair of groups counts (row: the group that should rank
higher, column: the one that should rank lower):

    R(f) = sum_{g, h} C[g, h] mean_{a in g} mean_{b in h} (1 - f_a + f_b)^2 + c0.

SAMULT and PNU-AUC differ only in C and c0 (``samult.py``, ``pnu_auc.py``). With the pair weights
W = G C G^T (n x n, never formed), r = W 1 and c = W^T 1 this is a quadratic in the scores,

    R(f) = 1^T W 1 - 2 (r - c)^T f + f^T L f + c0,      L = diag(r + c) - W - W^T.

Over the kernel expansion f = K alpha (representer theorem), the regularized objective
R(K alpha) + lam/2 alpha^T K alpha has gradient K (2 L K alpha + lam alpha - 2 (r - c)), so its
stationary point solves the n x n system

    (L K + lam/2 I) alpha = r - c.                                            (*)

L K = diag(r + c) K - G (C + C^T) (G^T K) costs O(n^2), so forming (*) is as cheap as the kernel
matrix; solving it by LU (``jnp.linalg.solve``, 2/3 n^3 flops) dominates the time of a fit, and
the kernel, the system and its LU factors (3 to 4 n^2 numbers) dominate memory. Why LU of the
non-symmetric system rather than a Cholesky factorization of a symmetrized one: PNU-AUC's C has
negative entries, so its L can be indefinite, and on our 2-core CPU LAPACK's LU ran faster than its
Cholesky factorization in float32 (0.95 s against 2 to 5 s at n = 4000).

When every C[g, h] >= 0 (SAMULT), W >= 0, L is a graph Laplacian (positive semi-definite) and (*)
gives the global minimizer; tests check it against ``jax.grad`` and an iterative optimizer.
"""

import jax
import jax.numpy as jnp

from qsg_jax import numerics

NUM_GROUPS = 3
POSITIVE, NEGATIVE, UNLABELED = 0, 1, 2


def _check_rank(name, x, rank, shape_text):
  if jnp.ndim(x) != rank:
    raise ValueError(f"{name} must have shape {shape_text}; received shape {jnp.shape(x)}.")


def _check_groups(group_w, coef):
  _check_rank("group_w", group_w, 2, "[n, 3]")
  if jnp.shape(group_w)[1] != NUM_GROUPS or jnp.shape(coef) != (NUM_GROUPS, NUM_GROUPS):
    raise ValueError(
        f"expected group_w of shape [n, 3] (positive, negative, unlabeled) and coef of shape "
        f"[3, 3]; received {jnp.shape(group_w)} and {jnp.shape(coef)}.")


def group_weights(positive, negative, unlabeled, dtype=jnp.float32):
  """Mean weights of the three groups: G[a, g] = [a in g] / |g| (a zero column for an empty g).

  Args:
    positive: [n] bool mask of the positive group.
    negative: [n] bool mask of the negative group.
    unlabeled: [n] bool mask of the unlabeled group.
    dtype: float dtype of the result.

  Returns:
    [n, 3] weights; every non-empty column sums to 1.
  """
  for name, mask in (("positive", positive), ("negative", negative), ("unlabeled", unlabeled)):
    _check_rank(name, mask, 1, "[n]")
  masks = jnp.stack([positive, negative, unlabeled], axis=1).astype(dtype)   # [n, 3]
  sizes = jnp.sum(masks, axis=0, keepdims=True)                              # [1, 3]
  return masks / jnp.maximum(sizes, 1.0)


@numerics.full_precision
def risk(f, group_w, coef, const):
  """R(f) from group moments in O(n): mean (1 - f_a + f_b)^2 = 1 + s_g + s_h - 2 m_g + 2 m_h
  - 2 m_g m_h with m_g, s_g the group means of f and f^2.

  Args:
    f: [n] scores of the training points.
    group_w: [n, 3] group mean weights (``group_weights``).
    coef: [3, 3] pair coefficients C.
    const: scalar c0.

  Returns:
    Scalar risk.
  """
  _check_rank("f", f, 1, "[n]")
  _check_groups(group_w, coef)
  present = (jnp.sum(group_w, axis=0) > 0).astype(f.dtype)                  # empty groups: 0
  m = (f @ group_w)[:, None]                                                 # [3, 1]
  s = (jnp.square(f) @ group_w)[:, None]
  p = present[:, None]
  pair_mean = 1.0 + s + s.T - 2.0 * m + 2.0 * m.T - 2.0 * (m @ m.T)          # [3, 3]
  return jnp.sum(coef * (p @ p.T) * pair_mean) + const


@jax.default_matmul_precision("highest")
def linear_term(group_w, coef):
  """The vector r - c = W 1 - W^T 1 of the quadratic form (the right-hand side of (*)).

  Args:
    group_w: [n, 3] group mean weights.
    coef: [3, 3] pair coefficients.

  Returns:
    [n] vector.
  """
  _check_groups(group_w, coef)
  present = (jnp.sum(group_w, axis=0) > 0).astype(group_w.dtype)
  return group_w @ (coef @ present - coef.T @ present)


@jax.default_matmul_precision("highest")
def laplacian_diagonal(group_w, coef):
  """The diagonal r + c of L (the rest of L is the rank-3 part -G (C + C^T) G^T)."""
  _check_groups(group_w, coef)
  present = (jnp.sum(group_w, axis=0) > 0).astype(group_w.dtype)
  return group_w @ (coef @ present + coef.T @ present)


@jax.default_matmul_precision("highest")
def quadratic_form_risk(f, group_w, coef, const):
  """R(f) as 1^T W 1 - 2 (r - c)^T f + f^T L f + c0, using the same pieces as the solver.

  Args:
    f: [n] scores.
    group_w: [n, 3] group mean weights.
    coef: [3, 3] pair coefficients.
    const: scalar c0.

  Returns:
    Scalar risk (equal to ``risk``; tests compare both with explicit double sums).
  """
  _check_rank("f", f, 1, "[n]")
  present = (jnp.sum(group_w, axis=0) > 0).astype(f.dtype)
  total_weight = present @ coef @ present
  lf = laplacian_diagonal(group_w, coef) * f - group_w @ ((coef + coef.T) @ (f @ group_w))
  return total_weight - 2.0 * linear_term(group_w, coef) @ f + f @ lf + const


@jax.default_matmul_precision("highest")
def objective(alpha, kernel, group_w, coef, const, lam):
  """Regularized objective R(K alpha) + lam/2 alpha^T K alpha (QSG-S2AUC Eq. 9 over the expansion).

  Args:
    alpha: [n] expansion coefficients.
    kernel: [n, n] kernel matrix of the training points.
    group_w: [n, 3] group mean weights.
    coef: [3, 3] pair coefficients.
    const: scalar c0.
    lam: scalar regularization lambda.

  Returns:
    Scalar objective.
  """
  f = kernel @ alpha
  return risk(f, group_w, coef, const) + 0.5 * lam * (alpha @ f)


def stationary_system(kernel, group_w, coef, lam):
  """The matrix and right-hand side of (L K + lam/2 I) alpha = r - c.

  Args:
    kernel: [n, n] kernel matrix.
    group_w: [n, 3] group mean weights.
    coef: [3, 3] pair coefficients.
    lam: scalar lambda > 0.

  Returns:
    (matrix [n, n], rhs [n]).
  """
  _check_rank("group_w", group_w, 2, "[n, 3]")
  return mean_stationary_system(kernel, group_w[None], jnp.asarray(coef)[None], lam)


@jax.default_matmul_precision("highest")
def mean_stationary_system(kernel, group_w, coef, lam):
  """The system (*) of one f that minimizes the mean of s risks plus lam/2 ||f||^2.

  The mean of quadratic forms is a quadratic form: L and r - c are the means of each risk's
  (QS3ORAO: one ranking function shared by the k-1 ordinal splits, ordinal paper Eq. 8). The
  s low-rank parts stack into one [n, 3s] x [3s, n] product, so the cost stays O(n^2 s).

  Args:
    kernel: [n, n] kernel matrix.
    group_w: [s, n, 3] group mean weights of each risk.
    coef: [s, 3, 3] pair coefficients of each risk.
    lam: scalar lambda > 0.

  Returns:
    (matrix [n, n], rhs [n]).
  """
  _check_rank("kernel", kernel, 2, "[n, n]")
  _check_rank("group_w", group_w, 3, "[s, n, 3]")
  _check_rank("coef", coef, 3, "[s, 3, 3]")
  for g, c in zip(group_w, coef):
    _check_groups(g, c)
  s, n = group_w.shape[:2]
  if kernel.shape != (n, n) or coef.shape[0] != s:
    raise ValueError(f"kernel must be [n, n], group_w [s, n, 3] and coef [s, 3, 3] for the same "
                     f"n and s; received {kernel.shape}, {group_w.shape} and {coef.shape}.")
  diag = jnp.mean(jax.vmap(laplacian_diagonal)(group_w, coef), axis=0)
  rhs = jnp.mean(jax.vmap(linear_term)(group_w, coef), axis=0)
  sym = (coef + jnp.swapaxes(coef, 1, 2)) / s                                 # [s, 3, 3]
  projected = jnp.einsum("sgh,snh,nm->sgm", sym, group_w, kernel)             # [s, 3, n]
  low_rank = jnp.einsum("sng,sgm->nm", group_w, projected)                    # [n, n]
  matrix = diag[:, None] * kernel - low_rank + 0.5 * lam * jnp.eye(n, dtype=kernel.dtype)
  return matrix, rhs


def solve_coefficients(kernel, group_w, coef, lam):
  """Expansion coefficients alpha [n] of the stationary point (*) (LU solve, O(n^3)).

  Points that belong to no group (all-zero rows of ``group_w``) get alpha = 0 exactly, so a
  held-out point may stay among the expansion points without changing the solution.
  """
  matrix, rhs = stationary_system(kernel, group_w, coef, lam)
  return jnp.linalg.solve(matrix, rhs)
