"""Random Fourier features of the Gaussian kernel, regenerated from (key, block index).

The kernel is k(x, x') = exp(-sigma ||x - x'||^2). By Bochner's theorem its spectral density is
N(0, 2 sigma I), so with Omega of shape [m, d] drawn from that density,

    phi(x) = [cos(Omega x), sin(Omega x)] / sqrt(m)          (QSG-S2AUC paper, Sec. "Random
                                                               Fourier Feature")

satisfies E[phi(x) . phi(x')] = k(x, x'). The DSG methods never store Omega: block i is a pure
function of ``(key, i)`` through ``jax.random.fold_in``, so training and prediction regenerate the
same frequencies. A block of coefficients ``alpha_i`` has shape [2m]: cosine part then sine part.
"""

import functools
from typing import Tuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np

from qsg_jax.numerics import HIGHEST
from qsg_jax.numerics import MAX_PHASE

# cos and sin of the same phase share one range reduction (Cody-Waite, pi/2 split into three
# floats whose leading parts have few significant bits so that q * part is exact) and two short
# minimax polynomials on [-pi/4, pi/4] (Moshier's Cephes sinf/cosf coefficients). XLA evaluates
# jnp.cos and jnp.sin separately, each with its own reduction; fused with the preceding matrix
# product this is 2.8x-9x faster on CPU (experiments/bench_engine.py measures both) and agrees with
# them to 1.1e-7 absolute for |phase| <= MAX_PHASE (tests/test_features_losses.py).
_TWO_OVER_PI = np.float32(2.0 / np.pi)
_PI_2_PARTS = tuple(map(np.float32, (1.5703125, 4.837512969970703125e-4, 7.54978995489188216e-8)))
_SIN_COEFS = tuple(map(np.float32, (-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4)))
_COS_COEFS = tuple(map(np.float32, (4.166664568298827e-2, -1.388731625493765e-3,
                                    2.443315711809948e-5)))


def sample_frequencies(key: jax.Array, block: int | jax.Array, num_frequencies: int, dim: int,
                       sigma: float | jax.Array) -> jax.Array:
  """Frequencies Omega_i of feature block ``block``: [m, d] draws from N(0, 2 sigma I).

  Args:
    key: the feature PRNG key of a model (never used for anything else).
    block: int or int32 scalar, the block index i (the iteration that created the block).
    num_frequencies: m, static.
    dim: d, static.
    sigma: Gaussian kernel parameter (scalar, may be traced).

  Returns:
    [m, d] float32 frequencies.
  """
  normal = jax.random.normal(jax.random.fold_in(key, block), (num_frequencies, dim),
                             jnp.float32)
  return jnp.sqrt(2.0 * sigma) * normal


def sample_frequency_blocks(key: jax.Array, blocks: jax.Array, num_frequencies: int, dim: int,
                            sigma: float | jax.Array) -> jax.Array:
  """Frequencies of several blocks stacked into one matrix.

  Args:
    key: feature PRNG key.
    blocks: [g] int block indices.
    num_frequencies: m.
    dim: d.
    sigma: kernel parameter.

  Returns:
    [g * m, d] frequencies, block-major (rows i*m .. (i+1)*m-1 belong to blocks[i]).
  """
  omegas = jax.vmap(lambda b: sample_frequencies(key, b, num_frequencies, dim, sigma))(blocks)
  return omegas.reshape(-1, dim)


def cos_sin(z: ArrayLike) -> Tuple[jax.Array, jax.Array]:
  """(cos z, sin z) of float32 phases with one shared range reduction.

  Accurate to 1.1e-7 absolute (jnp.cos: 3e-8) for |z| <= ``MAX_PHASE`` = 2^19. Beyond it a
  float32 phase has lost its fractional part's precision (ulp(2^19) = 1/16 rad) and this returns
  NaN, so no fit silently trains on meaningless features; ``qsg_jax.fit`` refuses such inputs
  up front (``validation.check_phase_range``) with a message to rescale the features.

  Args:
    z: float32 array of phases.

  Returns:
    (cos z, sin z), each shaped like z.
  """
  q = jnp.round(z * _TWO_OVER_PI)                     # nearest multiple of pi/2
  p1, p2, p3 = _PI_2_PARTS
  r = ((z - q * p1) - q * p2) - q * p3                # z - q pi/2, in [-pi/4, pi/4]
  r2 = r * r
  s1, s2, s3 = _SIN_COEFS
  c1, c2, c3 = _COS_COEFS
  sin_r = r + r * r2 * (s1 + r2 * (s2 + r2 * s3))
  cos_r = 1.0 - 0.5 * r2 + r2 * r2 * (c1 + r2 * (c2 + r2 * c3))
  quadrant = q.astype(jnp.int32) & 3                  # z = r + quadrant * pi/2 (mod 2 pi)
  odd = (quadrant & 1) == 1
  cos = jnp.where(odd, sin_r, cos_r)
  sin = jnp.where(odd, cos_r, sin_r)
  cos = jnp.where((quadrant == 1) | (quadrant == 2), -cos, cos)
  sin = jnp.where(quadrant >= 2, -sin, sin)
  valid = jnp.abs(z) <= MAX_PHASE
  return jnp.where(valid, cos, jnp.nan), jnp.where(valid, sin, jnp.nan)


def fourier_features(x: ArrayLike, omega: ArrayLike) -> jax.Array:
  """Feature map phi(x) = [cos(Omega x), sin(Omega x)] / sqrt(m) of one block.

  Args:
    x: [n, d] points.
    omega: [m, d] frequencies.

  Returns:
    [n, 2m] features.
  """
  if jnp.ndim(x) != 2 or jnp.ndim(omega) != 2 or jnp.shape(x)[1] != jnp.shape(omega)[1]:
    raise ValueError(
        f"expected x of shape [n, d] and omega of shape [m, d]; received {jnp.shape(x)} and "
        f"{jnp.shape(omega)}. Points must have as many features as the model was trained on.")
  z = jnp.matmul(x, omega.T, precision=HIGHEST)
  scale = 1.0 / jnp.sqrt(jnp.asarray(omega.shape[0], z.dtype))
  return jnp.concatenate(cos_sin(z), axis=1) * scale


def block_features(key: jax.Array, block: int | jax.Array, x: ArrayLike, num_frequencies: int,
                   sigma: float | jax.Array) -> jax.Array:
  """phi_i(x) of block i, regenerating its frequencies from (key, i).

  Args:
    key: feature PRNG key.
    block: block index i.
    x: [n, d] points.
    num_frequencies: m.
    sigma: kernel parameter.

  Returns:
    [n, 2m] features.
  """
  omega = sample_frequencies(key, block, num_frequencies, x.shape[1], sigma)
  return fourier_features(x, omega)


def block_features_of(key: jax.Array, block: int | jax.Array, point_sets: Tuple[ArrayLike, ...],
                      num_frequencies: int, sigma: float | jax.Array) -> Tuple[jax.Array, ...]:
  """``block_features`` of several point sets from one draw of block i's frequencies.

  The training step's form: the labeled points and the unlabeled pool of one step share a block.

  Returns:
    One [n_s, 2m] feature array per point set.
  """
  omega = sample_frequencies(key, block, num_frequencies, point_sets[0].shape[1], sigma)
  return tuple(fourier_features(x, omega) for x in point_sets)


def grouped_multi_scores(x: ArrayLike, omega: ArrayLike, coef: ArrayLike) -> jax.Array:
  """Scores sum_i coef_i . phi_i(x) of c functions over a group of g blocks in one matrix product.

  One trigonometric evaluation serves every function: the per-split corrections of
  ``qsg_jax.engine.corrections`` score f and all g_j with it at the cost of f alone.

  Args:
    x: [n, d] points.
    omega: [g * m, d] frequencies of the group (from ``sample_frequency_blocks``).
    coef: [g, 2m, c] coefficients of the group, one column per function.

  Returns:
    [n, c] scores.
  """
  g, two_m, c = coef.shape
  m = two_m // 2
  z = jnp.matmul(x, omega.T, precision=HIGHEST)                              # [n, g*m]
  cos_coef = coef[:, :m].reshape(g * m, c)
  sin_coef = coef[:, m:].reshape(g * m, c)
  scale = 1.0 / jnp.sqrt(jnp.asarray(m, z.dtype))
  cos, sin = cos_sin(z)
  dot = functools.partial(jnp.matmul, precision=HIGHEST)
  return (dot(cos, cos_coef) + dot(sin, sin_coef)) * scale
