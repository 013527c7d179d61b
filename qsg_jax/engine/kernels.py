"""Exact Gaussian kernel matrices, the kernel that the random Fourier features approximate."""

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from qsg_jax.numerics import HIGHEST


def squared_distances(x: ArrayLike, z: ArrayLike) -> jax.Array:
  """Pairwise squared Euclidean distances.

  Args:
    x: [n, d] points.
    z: [m, d] points.

  Returns:
    [n, m] matrix of ||x_i - z_j||^2, clipped at 0 against round-off.
  """
  if jnp.ndim(x) != 2 or jnp.ndim(z) != 2 or jnp.shape(x)[1] != jnp.shape(z)[1]:
    raise ValueError(
        f"expected x of shape [n, d] and z of shape [m, d] with the same d; received "
        f"{jnp.shape(x)} and {jnp.shape(z)}.")
  xx = jnp.sum(x * x, axis=1)
  zz = jnp.sum(z * z, axis=1)
  d2 = xx[:, None] + zz[None, :] - 2.0 * jnp.matmul(x, z.T, precision=HIGHEST)
  return jnp.maximum(d2, 0.0)


def gaussian_kernel(x: ArrayLike, z: ArrayLike, sigma: float | jax.Array) -> jax.Array:
  """Gaussian kernel k(x, z) = exp(-sigma ||x - z||^2) (the papers' parametrization).

  Its spectral density is N(0, 2 sigma I), which ``engine.features`` samples.

  Args:
    x: [n, d] points.
    z: [m, d] points.
    sigma: scalar bandwidth parameter (larger is narrower).

  Returns:
    [n, m] kernel matrix.
  """
  return jnp.exp(-sigma * squared_distances(x, z))
