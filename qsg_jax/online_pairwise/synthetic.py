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


def make_linear_problem(seed, dim, rank, scale=1.0, noise=1.0, w_star_norm=1.0, null_norm=1.0,
                        intercept=0.5) -> LinearProblem:
  """A ``LinearProblem`` with random orientation, ||w*|| = w_star_norm, ||P_V0 w_true|| = null_norm.

  Args:
    seed: int seed of the random orientation, offset and coefficients.
    dim: d features.
    rank: r = rank of C_rho, 1 <= r <= d (r < d gives zero eigenvalues).
    scale: scalar or [r] scales of x along the basis (equal scales: C_rho = 2 scale^2 on V_0^perp).
    noise: half-width of the uniform label noise (0: noise free).
    w_star_norm: norm of the minimum-norm minimizer w*.
    null_norm: norm of the V_0 component of w_true (invisible in the data; 0 if rank = dim).
    intercept: constant added to y (invisible to pairwise differences).

  Returns:
    ``LinearProblem``.
  """
  dim, rank = int(dim), int(rank)
  if not 1 <= rank <= dim:
    raise ValueError(f"rank must be in 1..dim = 1..{dim}; received rank={rank}.")
  scales = np.broadcast_to(np.asarray(scale, np.float64), (rank,)).copy()
  if not np.all(scales > 0):
    raise ValueError(f"scale must be positive; received {scale}.")
  if noise < 0:
    raise ValueError(f"noise must be >= 0; received {noise}.")
  rng = np.random.default_rng(validation.check_count("seed", seed, minimum=0))
  q, _ = np.linalg.qr(rng.standard_normal((dim, dim)))
  basis, null_basis = q[:, :rank], q[:, rank:]
  unit = lambda v: v / np.linalg.norm(v)
  w_star = w_star_norm * basis @ unit(rng.standard_normal(rank))
  w_null = null_basis @ unit(rng.standard_normal(dim - rank)) * null_norm if rank < dim else 0.0
  return LinearProblem(
      offset=rng.standard_normal(dim), basis=basis, null_basis=null_basis, scales=scales,
      w_true=w_star + w_null, intercept=float(intercept), noise=float(noise), w_star=w_star,
      lambda_rho=float(2.0 * np.min(scales) ** 2),
      kappa=float(2.0 * math.sqrt(rank) * np.max(scales)))


@functools.partial(jax.jit, static_argnames="num")
def sample_linear(problem: LinearProblem, key, num):
  """Draws ``num`` examples of a ``LinearProblem`` (jitted, ``num`` static).

  Args:
    problem: ``LinearProblem``.
    key: PRNG key.
    num: number of examples.

  Returns:
    (x [num, d], y [num]) in the default float dtype.
  """
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
    seed: int seed.
    dim: d features.
    separation: Mahalanobis distance D between the class means (optimal AUC Phi(D / sqrt 2)).
    positive_rate: p = P(y = 1) in (0, 1).

  Returns:
    ``BipartiteProblem``.
  """
  if not 0.0 < positive_rate < 1.0:
    raise ValueError(f"positive_rate must be in (0, 1); received {positive_rate}.")
  rng = np.random.default_rng(validation.check_count("seed", seed, minimum=0))
  dim = int(dim)
  a = rng.standard_normal((dim, dim))
  sigma = a @ a.T / dim + 0.5 * np.eye(dim)
  cholesky = np.linalg.cholesky(sigma)
  direction = rng.standard_normal(dim)
  delta = direction * separation / math.sqrt(direction @ np.linalg.solve(sigma, direction))
  mean_negative = rng.standard_normal(dim)
  pq = positive_rate * (1.0 - positive_rate)
  lda = np.linalg.solve(sigma, delta)
  return BipartiteProblem(
      mean_negative=mean_negative, mean_positive=mean_negative + delta, cholesky=cholesky,
      positive_rate=float(positive_rate), w_star=pq * lda / (1.0 + pq * (delta @ lda)),
      optimal_auc=0.5 * (1.0 + math.erf(separation / 2.0)))


@functools.partial(jax.jit, static_argnames="num")
def sample_bipartite(problem: BipartiteProblem, key, num):
  """Draws ``num`` examples of a ``BipartiteProblem`` (jitted, ``num`` static).

  Args:
    problem: ``BipartiteProblem``.
    key: PRNG key.
    num: number of examples.

  Returns:
    (x [num, d], y [num] in {0., 1.}) in the default float dtype.
  """
  dtype = jnp.result_type(float)
  arr = lambda a: jnp.asarray(a, dtype)
  key_y, key_x = jax.random.split(key)
  y = jax.random.bernoulli(key_y, problem.positive_rate, (num,)).astype(dtype)
  mean = arr(problem.mean_negative)[None, :] + y[:, None] * arr(
      problem.mean_positive - problem.mean_negative)[None, :]
  noise = jax.random.normal(key_x, (num, problem.mean_negative.shape[0]), dtype)
  return mean + noise @ arr(problem.cholesky).T, y
