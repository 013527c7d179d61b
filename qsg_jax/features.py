"""Random Fourier features of the Gaussian kernel, regenerated from (key, block index).

The kernel is k(x, x') = exp(-sigma ||x - x'||^2). By Bochner's theorem its spectral density is
N(0, 2 sigma I), so with Omega of shape [m, d] drawn from that density,

    phi(x) = [cos(Omega x), sin(Omega x)] / sqrt(m)          (QSG-S2AUC paper, Sec. "Random
                                                               Fourier Feature")

satisfies E[phi(x) . phi(x')] = k(x, x'). The DSG methods never store Omega: block i is a pure
function of ``(key, i)`` through ``jax.random.fold_in``, so training and prediction regenerate the
same frequencies. A block of coefficients ``alpha_i`` has shape [2m]: cosine part then sine part.
"""

import jax
import jax.numpy as jnp


def sample_frequencies(key, block, num_frequencies, dim, sigma):
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
  normal = jax.random.normal(jax.random.fold_in(key, block), (num_frequencies, dim))
  return jnp.sqrt(2.0 * sigma) * normal


def sample_frequency_blocks(key, blocks, num_frequencies, dim, sigma):
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


def fourier_features(x, omega):
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
  z = x @ omega.T
  scale = 1.0 / jnp.sqrt(jnp.asarray(omega.shape[0], z.dtype))
  return jnp.concatenate([jnp.cos(z), jnp.sin(z)], axis=1) * scale


def block_features(key, block, x, num_frequencies, sigma):
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


def grouped_scores(x, omega, coef):
  """Scores sum_i alpha_i . phi_i(x) over a group of g blocks in one matrix product.

  Args:
    x: [n, d] points.
    omega: [g * m, d] frequencies of the group (from ``sample_frequency_blocks``).
    coef: [g, 2m] coefficients of the group.

  Returns:
    [n] scores.
  """
  g, two_m = coef.shape
  m = two_m // 2
  z = x @ omega.T                                               # [n, g*m]
  cos_coef = coef[:, :m].reshape(g * m)
  sin_coef = coef[:, m:].reshape(g * m)
  scale = 1.0 / jnp.sqrt(jnp.asarray(m, z.dtype))
  return (jnp.cos(z) @ cos_coef + jnp.sin(z) @ sin_coef) * scale
