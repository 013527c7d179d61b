"""The squared-loss objective in a fixed feature space, and its minimizer by one linear solve.

For f(x) = w . psi(x) and l(u, v) = (1 - u + v)^2, a pair mean of groups A, B is

    mean_{a in A, b in B} (1 - w.(psi_a - psi_b))^2 = 1 - 2 w.(mu_A - mu_B) + w^T D(A, B) w,
    D(A, B) = S_A + S_B - mu_A mu_B^T - mu_B mu_A^T,

with mu, S the shifted means and second moments of ``moments.py`` (shift-invariant). Split j of
the ordinal paper's risk (Eq. 7; positives P_j = classes > j pooled with weights n_c / n_P,
negatives N_j = classes <= j, U the unlabeled set) is therefore

    R^j(w) = const_j - 2 r_j . w + w^T Q_j w,
    Q_j = gamma_j D(P_j, N_j) + (1 - gamma_j) (D(P_j, U) + D(U, N_j)),    r_j = mu_Pj - mu_Nj

(gamma cancels in r_j). The objective lam/2 ||w||^2 + (1/s) sum_j R^j (s = k-1, Eqs. 8-9) has
gradient 2 (Q w - r) + lam w with Q, r the means over j, so its minimizer solves

    (Q + lam/2 I) w = r.                                                         (*)

Q is a mean of pair-difference covariances, so positive semi-definite: (*) is solved in float64
by Cholesky, and a system singular to working precision (lam = 0 with a singular Q) raises
``IllPosedSystemError`` (reciprocal condition number below ``rcond_min``).

Per-split corrections (``engine.corrections``: split j ranks with f + g_j, g_j = v_j . psi,
penalty lam_g/2 ||g_j||^2 inside the mean over splits). Stationarity in v_j and w reads
Q_j (w + v_j) + c v_j = r_j (c = lam_g/2) and (1/s) sum_j Q_j (w + v_j) + lam/2 w = mean_j r_j;
eliminating v_j = (Q_j + c I)^-1 (r_j - Q_j w) leaves one p x p system (a Schur complement)

    [s lam/2 I + c sum_j (Q_j + c I)^-1 Q_j] w = c sum_j (Q_j + c I)^-1 r_j,

symmetric positive definite, at the cost of s + 1 factorizations of size p instead of one of
size k p. With lam_g -> infinity it tends to (*) (v_j -> 0).
"""

from typing import NamedTuple, Optional, Tuple

import numpy as np
import scipy.linalg

from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.direct.moments import Moments

# The statistics are sums of float32 features: relative rounding about 6e-8 (float32's unit
# roundoff). A solve amplifies it by the condition number, so a system whose reciprocal condition
# (2-norm) is below it has a solution set by rounding in its least determined direction. lam = 0
# gets there whenever a constant function is nearly in the span of the features (the objective
# sees only differences f(a) - f(b): f + c costs what f costs); with 60 points and 54 Nystrom
# features the offset of f was rounding (about 9). LAPACK's 1-norm estimate can be up to p times
# below the 2-norm value, so p x p systems are refused below ``STATISTICS_ROUNDING / p``
# (``rcond_min``): only systems that are certainly beyond the statistics' accuracy. lam > 0
# keeps the smallest eigenvalue at or above lam / 2.
STATISTICS_ROUNDING = float(np.finfo(np.float32).eps) / 2


def rcond_min(p: int) -> float:
  """Smallest reciprocal condition number (LAPACK's 1-norm estimate) accepted for a p x p system."""
  return STATISTICS_ROUNDING / max(int(p), 1)


class IllPosedSystemError(FloatingPointError):
  """The linear system of the direct solver is singular (or nearly) to working precision."""


class Splits(NamedTuple):
  """Group weights of the k-1 splits over G = k + 1 groups (classes, then the unlabeled set)."""
  positive: np.ndarray  # [s, G] weight n_c / n_P of class c among split j's positives.
  negative: np.ndarray  # [s, G] weight n_c / n_N among its negatives.
  unlabeled: np.ndarray  # [G] indicator of the unlabeled group.


def split_weights(counts: np.ndarray) -> Splits:
  """``Splits`` of class counts [k] (the unlabeled group is appended as group k)."""
  counts = np.asarray(counts, np.float64)
  k = counts.shape[0]
  is_pos = np.arange(k)[None, :] > np.arange(k - 1)[:, None]                    # [s, k]
  pos = np.where(is_pos, counts[None, :], 0.0)
  neg = np.where(is_pos, 0.0, counts[None, :])
  pad = lambda a: np.concatenate([a, np.zeros((a.shape[0], 1))], axis=1)
  return Splits(pad(pos / pos.sum(axis=1, keepdims=True)),
                pad(neg / neg.sum(axis=1, keepdims=True)), np.eye(k + 1)[k])


def _sym(a, b):
  return np.outer(a, b) + np.outer(b, a)


def split_system(moments: Moments, gamma: np.ndarray, split: int) -> Tuple[np.ndarray, np.ndarray]:
  """(Q_j [p, p], r_j [p]) of split j (module docstring) from k + 1 group moments.

  Args:
    moments: ``Moments`` of the k classes, then the unlabeled set (G = k + 1).
    gamma: [k-1] trade-offs.
    split: j in 0..k-2.
  """
  return mean_system(moments, np.asarray(gamma)[split:split + 1], splits=[split])


def mean_system(moments: Moments, gamma: np.ndarray,
                splits: Optional[list] = None) -> Tuple[np.ndarray, np.ndarray]:
  """(Q, r): the means over splits of Q_j and r_j, in O(G p^2) without forming each Q_j.

  Each Q_j is a weighted sum of the S_G minus a rank-G form in the means, so the mean over
  splits is one weighted sum sum_G a_G S_G minus M^T W M with M = [mu_G] ([G, p]).

  Args:
    moments: ``Moments`` of k classes then the unlabeled set.
    gamma: [len(splits)] trade-offs of the splits used.
    splits: split indices to average (default all k-1).

  Returns:
    (Q [p, p], r [p]) float64.
  """
  w = split_weights(moments.counts[:-1])
  if splits is not None:
    w = Splits(w.positive[splits], w.negative[splits], w.unlabeled)
  gamma = np.asarray(gamma, np.float64)
  s = gamma.shape[0]
  if moments.counts[-1] == 0 and np.any(gamma < 1):
    raise ValueError(f"no unlabeled points but gamma={gamma.tolist()} < 1 weights the unlabeled "
                     "risks: pass unlabeled data (x_unlabeled held no row: an empty array, or an "
                     "iterator already consumed?), or gamma=1 for supervised training.")
  pos, neg, unl = w.positive, w.negative, w.unlabeled
  diag = (np.sum(pos + neg, axis=0) + 2.0 * np.sum(1.0 - gamma) * unl) / s        # [G]
  low = np.zeros((unl.size, unl.size))
  for j in range(s):
    low += gamma[j] * _sym(pos[j], neg[j]) + (1.0 - gamma[j]) * (
        _sym(pos[j], unl) + _sym(unl, neg[j]))
  low /= s
  mu = moments.means
  matrix = np.tensordot(diag, moments.second, axes=1) - mu.T @ low @ mu
  vector = np.mean(pos - neg, axis=0) @ mu
  return 0.5 * (matrix + matrix.T), vector


def cholesky(matrix: np.ndarray, what: str = "the system"):
  """Lower Cholesky factor (scipy ``cho_factor`` form) of a symmetric matrix, checked.

  LAPACK ``dpotrf`` directly (no copies or finiteness scans: the cross-validation factors
  thousands of these), then ``dpocon``'s reciprocal condition estimate, O(p^2).

  Raises:
    IllPosedSystemError: not positive definite (or not finite), or reciprocal condition below
      ``rcond_min(p)``.
  """
  fix = ("Increase lam (lam = 0 needs a positive definite Q: more data than features), or use "
         "fewer features.")
  factor, info = scipy.linalg.lapack.dpotrf(matrix, lower=1, clean=0)
  if info != 0 or not np.isfinite(factor[-1, -1]):
    raise IllPosedSystemError(f"{what} is not positive definite (singular to working "
                              f"precision). {fix}")
  norm = np.max(np.sum(np.abs(matrix), axis=0))
  rcond, info = scipy.linalg.lapack.dpocon(factor, norm, uplo="L")
  if info != 0 or not rcond >= rcond_min(matrix.shape[0]):
    raise IllPosedSystemError(f"{what} is singular to working precision (reciprocal condition "
                              f"{rcond:.2g} < {rcond_min(matrix.shape[0]):.2g}). {fix}")
  return factor, True


def solve_system(matrix: np.ndarray, vector: np.ndarray, lam: float) -> np.ndarray:
  """w [p] solving (Q + lam/2 I) w = r (*), float64 Cholesky, checked."""
  shifted = matrix.copy()
  shifted.flat[::matrix.shape[0] + 1] += 0.5 * float(lam)
  factor, _ = cholesky(shifted, what=f"(Q + lam/2 I) w = r with lam={float(lam):g}")
  solution, _ = scipy.linalg.lapack.dpotrs(factor, vector, lower=1)
  return solution


def solve_corrections(systems, lam: float, split_lam: float) -> Tuple[np.ndarray, np.ndarray]:
  """(w [p], v [k-1, p]) of the per-split corrections objective (module docstring).

  Args:
    systems: [(Q_j [p, p], r_j [p])] of the k-1 splits (``split_system``).
    lam: lambda of f (>= 0).
    split_lam: lam_g > 0 of the corrections (finite).
  """
  s = len(systems)
  c = 0.5 * float(split_lam)
  p = systems[0][0].shape[0]
  eye = np.eye(p)
  factors = [cholesky(q + c * eye, what=f"split {j}'s correction system (Q_j + lam_g/2 I)")
             for j, (q, _) in enumerate(systems)]
  schur = 0.5 * s * float(lam) * eye
  rhs = np.zeros(p)
  for (q, r), factor in zip(systems, factors):
    schur += c * scipy.linalg.cho_solve(factor, q)
    rhs += c * scipy.linalg.cho_solve(factor, r)
  w = scipy.linalg.cho_solve(cholesky(_sym_part(schur), what="the corrections' reduced system"),
                             rhs)
  v = np.stack([scipy.linalg.cho_solve(factor, r - q @ w)
                for (q, r), factor in zip(systems, factors)])
  return w, v


def solve(moments: Moments, lam: float, gamma, split_lam: Optional[float] = None
          ) -> Tuple[np.ndarray, Optional[np.ndarray]]:
  """Minimizer of the objective from the moments: (w [p], v [k-1, p] or None).

  Features that are identically zero (a Nystrom map's dropped directions) get w = 0 and the
  system is solved on the others (``active_features``), so lam = 0 stays well-posed there.

  Args:
    moments: ``Moments`` of k classes then the unlabeled set (G = k + 1).
    lam: lambda >= 0 (0 only with a positive definite Q).
    gamma: scalar or [k-1] trade-offs in [0, 1].
    split_lam: None (one shared f: (*)), inf (the same), or lam_g > 0 (per-split corrections).

  Raises:
    IllPosedSystemError: singular system.
    ValueError: gamma < 1 without unlabeled points.
  """
  lam = validation.check_positive("lam", lam, allow_zero=True)
  validation.check_gamma(gamma, moments.counts.shape[0] - 1)   # checked, used as given
  if split_lam is not None:
    split_lam = validation.check_positive("split_lam", split_lam, allow_inf=True)
  with numerics.one_blas_thread():
    return _solve(moments, lam, gamma, split_lam)


def active_features(moments: Moments) -> np.ndarray:
  """[p] bool: features that are not identically zero on every group."""
  return (np.einsum("gpp->p", moments.second) > 0) | np.any(moments.means != 0, axis=0)


def _kept_system(system, kept):
  """(Q [p, p], r [p]) restricted to the kept features (no copy when every feature is kept).

  Q and r are formed on all p features and sliced afterwards: each of their entries only
  involves its own features, so this equals forming them from sliced moments, at the cost of
  one [p, p] copy instead of the [G, p, p] moments' (20 ms of a 512-feature fit).
  """
  matrix, vector = system
  if kept.all():
    return matrix, vector
  return matrix[np.ix_(kept, kept)], vector[kept]


def _solve(moments, lam, gamma, split_lam):
  s = moments.counts.shape[0] - 2
  gamma = np.broadcast_to(np.asarray(gamma, np.float64), (s,))
  p = moments.means.shape[1]
  kept = active_features(moments)
  if not kept.any():   # every feature constant on the data (identical points, a flat kernel)
    return np.zeros(p), (None if split_lam is None or np.isposinf(split_lam) else np.zeros((s, p)))
  if split_lam is None or np.isposinf(split_lam):
    w = np.zeros(p)
    w[kept] = solve_system(*_kept_system(mean_system(moments, gamma), kept), lam)
    return w, None
  systems = [_kept_system(split_system(moments, gamma, j), kept) for j in range(s)]
  w_kept, v_kept = solve_corrections(systems, lam, split_lam)
  w, v = np.zeros(p), np.zeros((s, p))
  w[kept], v[:, kept] = w_kept, v_kept
  return w, v


def _sym_part(a):
  return 0.5 * (a + a.T)
