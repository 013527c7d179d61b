"""Validation AUCs of SAMULT / PNU-AUC cross-validation from one eigendecomposition per sigma.

``cross_validation`` solves the n x n system (L K + mu I) alpha = r - c (``pairwise_risk``,
mu = lam/2) by LU for every (fold, lam, gamma, split): O(n^3) each, 2,695 solves per sigma for an
ordinal set on the papers' grid. Only the scores of the labeled points are needed, and L differs
from a multiple of the identity on the unlabeled points by a low-rank term, so the same numbers
come from one eigendecomposition K = V diag(s) V^T per sigma and small solves:

  L = diag(d) - G S G^T with S = C + C^T, G the [n, 3] group weights; on every unlabeled point
  d = d_u (the U column of G is 1/n_u there). With P the [n_l, n] selector of the labeled rows,
  E = diag(d_l - d_u) and R = [P; G^T] ((n_l + 3) x n),

      L K + mu I = A + [P^T E, -G S] R K,        A = d_u K + mu I = V diag(d_u s + mu) V^T.

  Woodbury's identity with Z = R K A^{-1} [P^T E, -G S] and y = R K A^{-1} (r - c) gives
  R K alpha = (I + Z)^{-1} y exactly (R K alpha = y - Z c with c = (I + Z)^{-1} y, which is c);
  its first n_l entries are f on the labeled points. K A^{-1} = V diag(h) V^T with
  h = s / (d_u s + mu), and every row of R V lies in the span of the rows of V_l = P V and of
  v_u = mean of the unlabeled rows of V, so Z and y need only the (n_l + 1)^2 Gram matrix
  X = [V_l; v_u] diag(h) [V_l; v_u]^T (O(n n_l^2), shared by every task with the same d_u and
  mu) and O(n_l^2) work per task, then one (n_l + 3) solve.

BLAS runs on one thread here: OpenBLAS's threads made a 503 x 503 solve 40x slower (5 ms
against 200 ms) on our 2 shared cores, and gain little at these sizes elsewhere.
A is well conditioned for mu > 0 (its eigenvalues lie in [mu, d_u s_max + mu]); the work is done
in float64 NumPy, so the scores agree with the LU path to its float32 rounding (tests compare
both, and a float64 LU path to 1e-9).
"""

import numpy as np

from qsg_jax import metrics
from qsg_jax import numerics


def _gaussian_kernel64(x, sigma):
  x = np.asarray(x, np.float64)
  sq = np.sum(x * x, axis=1)
  dist = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (x @ x.T), 0.0)
  return np.exp(-sigma * dist)


def _split_tasks(y_l, folds, num_folds, k, num_unlabeled):
  """Per (fold, split): labeled group weights G_l [n_l, 3], prior, presence [3], held-out mask."""
  tasks = {}
  for f, j in np.ndindex(num_folds, k - 1):
    train = folds != f
    pos, neg = train & (y_l > j), train & (y_l <= j)
    g_l = np.zeros((y_l.size, 3))
    g_l[pos, 0] = 1.0 / max(pos.sum(), 1)
    g_l[neg, 1] = 1.0 / max(neg.sum(), 1)
    present = np.array([pos.any(), neg.any(), num_unlabeled > 0], np.float64)
    tasks[f, j] = (g_l, pos.sum() / train.sum(), present, folds == f)
  return tasks


def fold_scores(coefficient_fn, grid, x_l, y_l, x_u, folds, num_folds, k):
  """[n_lam, n_sigma, n_gamma, F, k-1] validation AUCs, as ``_kernel_fold_scores`` returns.

  Args:
    coefficient_fn: the method's (gamma, prior) -> (coef [3, 3], const).
    grid: dict with 1-D float arrays "lam", "sigma", "gamma".
    x_l: [n_l, d] labeled points; y_l: [n_l] int labels 0..k-1.
    x_u: [n_u, d] unlabeled points (n_u may be 0).
    folds: [n_l] fold index of each labeled point.
    num_folds: F; k: number of classes.
  """
  with numerics.one_blas_thread():
    return _fold_scores(coefficient_fn, grid, np.asarray(x_l, np.float64),
                        np.asarray(y_l), np.asarray(x_u, np.float64), folds, num_folds, k)


def _fold_scores(coefficient_fn, grid, x_l, y_l, x_u, folds, num_folds, k):
  """The work of ``fold_scores`` (BLAS limited to one thread by the caller)."""
  n_l, n_u = x_l.shape[0], x_u.shape[0]
  tasks = _split_tasks(y_l, folds, num_folds, k, n_u)
  # Identical labeled points have identical scores in exact arithmetic; rounding would break
  # their ties at random (LEV, ERA, SWD and ESL have integer features), so each gets its
  # group's mean score.
  _, group, group_size = np.unique(x_l, axis=0, return_inverse=True, return_counts=True)
  group = group.reshape(-1)
  tie = lambda f: (np.bincount(group, f) / group_size)[group]
  coefs = {}
  for g, gamma in enumerate(grid["gamma"]):
    for key, (_, prior, present, _) in tasks.items():   # the LU path's coefficients, its dtype
      try:
        coef = np.asarray(coefficient_fn(float(gamma), float(prior))[0], np.float64)
      except ValueError:   # a fold without one side of the split (PNU-AUC prior 0 or 1): the
        continue           # LU path's coefficients are NaN there, so the task scores NaN
      coefs[g, key] = (coef, present)
  out = np.full((grid["lam"].size, grid["sigma"].size, grid["gamma"].size, num_folds, k - 1),
                np.nan)
  eye = np.eye(n_l + 3)
  for si, sigma in enumerate(grid["sigma"]):
    s, vecs = np.linalg.eigh(_gaussian_kernel64(np.concatenate([x_l, x_u]), sigma))
    ext = np.concatenate([vecs[:n_l], vecs[n_l:].mean(axis=0, keepdims=True) if n_u else
                          np.zeros((1, s.size))])                        # [n_l + 1, n]
    for li, lam in enumerate(grid["lam"]):
      mu, grams = 0.5 * lam, {}
      for g in range(grid["gamma"].size):
        for (f, j), (g_l, _, _, valid) in tasks.items():
          if (g, (f, j)) not in coefs:
            continue
          coef, present = coefs[g, (f, j)]
          both = coef @ present + coef.T @ present
          d_u = both[2] / n_u if n_u else 0.0
          if d_u not in grams:
            h = s / (d_u * s + mu)
            grams[d_u] = (ext * h) @ ext.T                               # X [n_l + 1, n_l + 1]
          x_gram = grams[d_u]
          # Rows of R V in the basis [V_l; v_u]: the identity on V_l, then T_g for G^T V.
          t_g = np.concatenate([g_l.T, np.array([[0.0], [0.0], [present[2]]])], axis=1)
          t_x = np.concatenate([x_gram[:n_l], t_g @ x_gram])            # T X [n_l + 3, n_l + 1]
          e = g_l @ both - d_u                                           # d_l - d_u
          t_x_g = t_x @ t_g.T                                            # [n_l + 3, 3]
          z = np.concatenate([t_x[:, :n_l] * e[None, :], -t_x_g @ (coef + coef.T).T], axis=1)
          y = t_x_g @ (coef @ present - coef.T @ present)
          try:
            f_l = np.linalg.solve(eye + z, y)[:n_l]
          except np.linalg.LinAlgError:
            continue   # a singular system scores NaN, as a failed LU solve does
          if np.all(np.isfinite(f_l)):
            out[li, si, g, f, j] = metrics.exact_auc(tie(f_l), valid & (y_l > j),
                                                     valid & (y_l <= j))
  return out
