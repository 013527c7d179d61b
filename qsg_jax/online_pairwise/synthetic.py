"""Synthetic streams with known answers for online pairwise least squares.

``make_linear_problem``: x = offset + basis diag(scales) z with z uniform on the sphere of radius
sqrt(r) in R^r, and y = w_true^T x + intercept + eps with eps ~ U[-noise, noise]. With r < d the
covariance C_rho = E (x - x')(x - x')^T has d - r zero eigenvalues, and everything Theorem 1 and
Lemma 1 talk about has a closed form (E z z^T = I, and z - z' fills the ball of radius 2 sqrt(r)):

    C_rho = 2 basis diag(scales^2) basis^T,   lambda_rho = 2 min scales^2,
    kappa = sup ||x - x'|| = 2 sqrt(r) max scales,
    w* = basis basis^T w_true   (the minimizer with no component in V_0 = span(null_basis)).

``make_bipartite_problem``: labels y in {0, 1} with P(y = 1) = p and x | y ~ N(mean_y, Sigma).
Then C_rho = 2 (Sigma + p q Delta Delta^T), S_rho = 2 p q Delta (q = 1 - p, Delta = mean_1 - mean_0)
and the pairwise least-squares minimizer is w* = p q Sigma^-1 Delta / (1 + p q Delta^T Sigma^-1
Delta), the LDA direction, whose AUC Phi(sqrt(Delta^T Sigma^-1 Delta / 2)) is the best of any
scoring function.
"""

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.online_pairwise import updates

_FLOAT32_MAX = float(np.finfo(np.float32).max)
_FLOAT32_TINY = float(np.finfo(np.float32).tiny)


class LinearProblem(NamedTuple):
  """A regression stream whose pairwise least-squares minimizers are known (NumPy float64)."""
  offset: np.ndarray       # [d], mean of x; has components in V_0, so x itself is not in V_0^perp.
  basis: np.ndarray        # [d, r] orthonormal columns spanning V_0^perp.
  null_basis: np.ndarray   # [d, d-r] orthonormal columns spanning V_0 (the null space of C_rho).
  scales: np.ndarray       # [r] scale of x along each basis column.
  w_true: np.ndarray       # [d] coefficients generating y (with a V_0 component).
  intercept: float         # added to every y.
  noise: float             # half-width of the uniform label noise.
  w_star: np.ndarray       # [d] minimum-norm minimizer of the pairwise risk (Lemma 1).
  lambda_rho: float        # smallest positive eigenvalue of C_rho.
  kappa: float             # sup ||x - x'|| over the support.

  @property
  def mu(self):
    """The smallest mu that Theorem 1 allows: lambda_rho + kappa^2."""
    return self.lambda_rho + self.kappa ** 2


def make_linear_problem(seed, dim, rank, scale=1.0, noise=1.0, w_star_norm=1.0, null_norm=None,
                        intercept=0.5) -> LinearProblem:
  """A ``LinearProblem`` with random orientation, ||w*|| = w_star_norm, ||P_V0 w_true|| = null_norm.

  Args:
    seed: int seed >= 0 of the random orientation, offset and coefficients.
    dim: d features, a whole number >= 1.
    rank: r = rank of C_rho, a whole number 1 <= r <= d (r < d gives zero eigenvalues).
    scale: positive scalar or [r] positive scales of x along the basis (equal scales: C_rho =
      2 scale^2 on V_0^perp).
    noise: half-width >= 0 of the uniform label noise (0: noise free).
    w_star_norm: norm >= 0 of the minimum-norm minimizer w*.
    null_norm: norm >= 0 of the V_0 component of w_true (invisible in the data); None: 1.0 when
      rank < dim, 0 when rank = dim (V_0 = {0}, where only 0 is possible).
    intercept: finite constant added to y (invisible to pairwise differences).

  Returns:
    ``LinearProblem``.

  Raises:
    TypeError: an argument that is not a number (or a count that is not whole).
    ValueError: a count out of range, a negative or non-finite norm, scale or noise, a scale
      whose mu = lambda_rho + kappa^2 leaves float64, a non-zero null_norm with rank = dim.
  """
  rng = np.random.default_rng(validation.check_count("seed", seed, minimum=0, maximum=None))
  dim, rank = validation.check_count("dim", dim), validation.check_count("rank", rank)
  if not 1 <= rank <= dim:
    raise ValueError(f"rank must be in 1..dim = 1..{dim}; received rank={rank}.")
  try:
    scales = np.asarray(scale)
  except (TypeError, ValueError):   # ragged lists
    scales = np.asarray(None)
  if scales.dtype.kind not in "iuf" or scales.ndim > 1 or isinstance(scale, (bool, np.bool_)):
    raise TypeError(f"scale must be a positive number or a list of rank = {rank} of them; "
                    f"received {type(scale).__name__} {scale!r:.40}.")
  if scales.ndim and scales.shape != (rank,):
    raise ValueError(f"scale must be a number or have shape [rank] = [{rank}]; received shape "
                     f"{scales.shape}.")
  scales = np.broadcast_to(scales.astype(np.float64), (rank,)).copy()
  if not np.all(np.isfinite(scales) & (scales > 0)):
    raise ValueError(f"scale must be positive and finite; received {scale!r:.40}.")
  noise = validation.check_positive("noise", noise, allow_zero=True)
  w_star_norm = validation.check_positive(
      "w_star_norm", w_star_norm, allow_zero=True,
      fix="It is the norm ||w*|| (its direction is random: another seed gives another).")
  if null_norm is None:
    null_norm = 1.0 if rank < dim else 0.0
  null_norm = validation.check_positive("null_norm", null_norm, allow_zero=True)
  if rank == dim and null_norm != 0:
    raise ValueError(f"null_norm={null_norm:g} needs rank < dim: with rank = dim = {dim}, V_0 = "
                     "{0} and w_true has no null component. Drop null_norm or lower rank.")
  intercept = updates.check_real("intercept", intercept, "a finite number")
  if not math.isfinite(intercept):
    raise ValueError(f"intercept must be a finite number; received {intercept}.")
  with np.errstate(over="ignore", under="ignore"):
    lambda_rho = float(2.0 * np.min(scales) ** 2)
    kappa = float(2.0 * math.sqrt(rank) * np.max(scales))
    mu = float(np.float64(lambda_rho) + np.float64(kappa) ** 2)
  # Samples are drawn, and the step size 1 / mu taken, in the default float dtype (float32).
  if not (_FLOAT32_TINY <= lambda_rho and mu <= _FLOAT32_MAX):
    raise ValueError(f"scale={scale!r:.40} gives lambda_rho = {lambda_rho:.3g}, mu = {mu:.3g}, "
                     "outside the float32 range of the samples. Pass scales nearer 1.")
  q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
  basis, null_basis = q[:, :rank], q[:, rank:]
  unit = lambda v: v / np.linalg.norm(v)
  w_star = w_star_norm * basis @ unit(rng.standard_normal(rank))
  w_null = null_basis @ unit(rng.standard_normal(dim - rank)) * null_norm if rank < dim else 0.0
  return LinearProblem(
      offset=rng.standard_normal(dim), basis=basis, null_basis=null_basis, scales=scales,
      w_true=w_star + w_null, intercept=intercept, noise=noise, w_star=w_star,
      lambda_rho=lambda_rho, kappa=kappa)


def _check_problem(problem, kind, maker):
  if not isinstance(problem, kind):
    raise TypeError(f"problem must be a {kind.__name__} (from {maker}); received "
                    f"{type(problem).__name__}.")


def _key_and_num(key, num):
  """An int seed or key as a typed key (keys traced under jit pass as they are), and num as a
  whole number >= 0."""
  if not validation.is_traced(key):
    key = validation.check_key(key)
  return key, validation.check_count("num", num, minimum=0)


def sample_linear(problem: LinearProblem, key, num):
  """Draws ``num`` examples of a ``LinearProblem`` (jitted, ``num`` static).

  Args:
    problem: ``LinearProblem``.
    key: PRNG key or int seed.
    num: number of examples, a whole number >= 0.

  Returns:
    (x [num, d], y [num]) in the default float dtype.
  """
  _check_problem(problem, LinearProblem, "make_linear_problem")
  key, num = _key_and_num(key, num)
  return _sample_linear(problem, key, num)


@functools.partial(jax.jit, static_argnames="num")
def _sample_linear(problem: LinearProblem, key, num):
  dtype = jnp.result_type(float)
  arr = lambda a: jnp.asarray(a, dtype)
  rank = problem.basis.shape[1]
  key_z, key_eps = jax.random.split(key)
  g = jax.random.normal(key_z, (num, rank), dtype)
  z = math.sqrt(rank) * g / jnp.linalg.norm(g, axis=1, keepdims=True)
  x = arr(problem.offset)[None, :] + (z * arr(problem.scales)[None, :]) @ arr(problem.basis).T
  eps = jax.random.uniform(key_eps, (num,), dtype, -1.0, 1.0) * problem.noise
  y = x @ arr(problem.w_true) + problem.intercept + eps
  return x, y


class BipartiteProblem(NamedTuple):
  """Two Gaussian classes with labels {0, 1}: the best ranking and its AUC in closed form."""
  mean_negative: np.ndarray  # [d] mean of class 0.
  mean_positive: np.ndarray  # [d] mean of class 1.
  cholesky: np.ndarray       # [d, d] lower factor L of the shared covariance Sigma = L L^T.
  positive_rate: float       # p = P(y = 1).
  w_star: np.ndarray         # [d] pairwise least-squares minimizer (LDA direction).
  optimal_auc: float         # AUC of w*, the best AUC of any scoring function.


def make_bipartite_problem(seed, dim, separation=1.5, positive_rate=0.3) -> BipartiteProblem:
  """A ``BipartiteProblem`` with a random correlated covariance.

  Args:
    seed: int seed >= 0.
    dim: d features, a whole number >= 1.
    separation: Mahalanobis distance D >= 0 between the class means (optimal AUC Phi(D / sqrt 2));
      a distance has no sign (swap the classes' roles with 1 - y instead).
    positive_rate: p = P(y = 1) in (0, 1).

  Returns:
    ``BipartiteProblem``.

  Raises:
    TypeError: an argument that is not a number (or dim not whole).
    ValueError: out of range or non-finite arguments.
  """
  rng = np.random.default_rng(validation.check_count("seed", seed, minimum=0, maximum=None))
  dim = validation.check_count("dim", dim)
  separation = validation.check_positive(
      "separation", separation, allow_zero=True, fix="It is a distance D >= 0 (optimal AUC "
      "Phi(D / sqrt 2) >= 0.5); for the reversed ranking use 1 - y.")
  if isinstance(positive_rate, (bool, np.bool_, str)) or np.ndim(positive_rate) != 0:
    raise TypeError(f"positive_rate must be a number in (0, 1); received {positive_rate!r:.40}.")
  positive_rate = float(positive_rate)
  if not 0.0 < positive_rate < 1.0:
    raise ValueError(f"positive_rate must be in (0, 1); received {positive_rate}.")
  pq = positive_rate * (1.0 - positive_rate)
  # Samples are drawn in the default float dtype (float32): D^2 (the scale of delta^T Sigma^-1
  # delta) must stay in its range.
  if separation > math.sqrt(_FLOAT32_MAX):
    raise ValueError(f"separation={separation:.3g} is too large: D^2 leaves the float32 range "
                     "of the samples. Pass D <= 1e19 (the optimal AUC is 1 already past D = 12).")
  a = rng.standard_normal((dim, dim))
  sigma = a @ a.T / dim + 0.5 * np.eye(dim)
  cholesky = np.linalg.cholesky(sigma)
  direction = rng.standard_normal(dim)
  delta = direction * separation / math.sqrt(direction @ np.linalg.solve(sigma, direction))
  mean_negative = rng.standard_normal(dim)
  lda = np.linalg.solve(sigma, delta)
  return BipartiteProblem(
      mean_negative=mean_negative, mean_positive=mean_negative + delta, cholesky=cholesky,
      positive_rate=positive_rate, w_star=pq * lda / (1.0 + pq * (delta @ lda)),
      optimal_auc=0.5 * (1.0 + math.erf(separation / 2.0)))


def sample_bipartite(problem: BipartiteProblem, key, num):
  """Draws ``num`` examples of a ``BipartiteProblem`` (jitted, ``num`` static).

  Args:
    problem: ``BipartiteProblem``.
    key: PRNG key or int seed.
    num: number of examples, a whole number >= 0.

  Returns:
    (x [num, d], y [num] in {0., 1.}) in the default float dtype.
  """
  _check_problem(problem, BipartiteProblem, "make_bipartite_problem")
  key, num = _key_and_num(key, num)
  return _sample_bipartite(problem, key, num)


@functools.partial(jax.jit, static_argnames="num")
def _sample_bipartite(problem: BipartiteProblem, key, num):
  dtype = jnp.result_type(float)
  arr = lambda a: jnp.asarray(a, dtype)
  key_y, key_x = jax.random.split(key)
  y = jax.random.bernoulli(key_y, problem.positive_rate, (num,)).astype(dtype)
  mean = arr(problem.mean_negative)[None, :] + y[:, None] * arr(
      problem.mean_positive - problem.mean_negative)[None, :]
  noise = jax.random.normal(key_x, (num, problem.mean_negative.shape[0]), dtype)
  return mean + noise @ arr(problem.cholesky).T, y
