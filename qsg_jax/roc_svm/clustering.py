"""k-means in JAX (k-means++ seeding, then Lloyd iterations), used to pick Nystrom landmarks.

Clustered landmarks reduce the Nystrom approximation error (Zhang, Tsang and Kwok 2008); the
ROC-SVM paper uses them on its real datasets (Sec. 3.1). Everything here is jittable: seeding is
a ``fori_loop`` over centers, Lloyd's algorithm a ``while_loop`` that stops when no center moves
more than ``tol`` (relative to the data scale) or after ``max_iters`` iterations.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp

from qsg_jax import _validation as validation
from qsg_jax.engine import kernels


class KMeansResult(NamedTuple):
  centers: jax.Array      # [k, d] cluster centers.
  assignments: jax.Array  # [n] int32 index of each point's nearest center.
  inertia: jax.Array      # scalar, sum of squared distances to the nearest center.
  num_iters: jax.Array    # int32 scalar, Lloyd iterations run.
  initial_centers: jax.Array  # [k, d] the k-means++ seeding the iterations started from.


def kmeans_plus_plus(key, x, num_clusters):
  """k-means++ seeding: each new center is a point drawn with probability proportional to D^2.

  Args:
    key: PRNG key.
    x: [n, d] points.
    num_clusters: k (static).

  Returns:
    [k, d] initial centers (data points).
  """
  n = x.shape[0]
  first = x[jax.random.randint(jax.random.fold_in(key, 0), (), 0, n)]
  centers = jnp.zeros((num_clusters, x.shape[1]), x.dtype).at[0].set(first)
  min_d2 = jnp.sum(jnp.square(x - first[None, :]), axis=1)

  def body(i, carry):
    centers, min_d2 = carry
    # All points already centers (fewer distinct points than k): fall back to uniform.
    logits = jnp.where(jnp.sum(min_d2) > 0, jnp.log(min_d2), jnp.zeros_like(min_d2))
    new = x[jax.random.categorical(jax.random.fold_in(key, i), logits)]
    min_d2 = jnp.minimum(min_d2, jnp.sum(jnp.square(x - new[None, :]), axis=1))
    return centers.at[i].set(new), min_d2

  centers, _ = jax.lax.fori_loop(1, num_clusters, body, (centers, min_d2))
  return centers


def lloyd_step(x, centers):
  """One Lloyd iteration: assign to the nearest center, move centers to their cluster means.

  A center with no assigned point stays where it is.

  Args:
    x: [n, d] points.
    centers: [k, d] current centers.

  Returns:
    (new centers [k, d], assignments [n] int32, inertia of the old centers).
  """
  d2 = kernels.squared_distances(x, centers)                      # [n, k]
  assignments = jnp.argmin(d2, axis=1).astype(jnp.int32)
  k = centers.shape[0]
  sums = jax.ops.segment_sum(x, assignments, num_segments=k)      # [k, d]
  counts = jax.ops.segment_sum(jnp.ones_like(x[:, 0]), assignments, num_segments=k)
  means = sums / jnp.maximum(counts, 1.0)[:, None]
  new_centers = jnp.where((counts > 0)[:, None], means, centers)
  return new_centers, assignments, jnp.sum(jnp.min(d2, axis=1))


@functools.partial(jax.jit, static_argnames=("num_clusters", "max_iters"))
def kmeans(key, x, num_clusters, max_iters=100, tol=1e-4):
  """Lloyd's k-means from a k-means++ seeding.

  Args:
    key: PRNG key of the seeding.
    x: [n, d] points, n >= k.
    num_clusters: k (static).
    max_iters: most Lloyd iterations (static, >= 0; 0 returns the k-means++ seeds).
    tol: stop when every center moved less than ``tol`` times the data's RMS spread.

  Returns:
    ``KMeansResult`` whose assignments and inertia belong to the returned centers.
  """
  num_clusters = validation.check_count("num_clusters", num_clusters)   # static: trace time
  max_iters = validation.check_count("max_iters", max_iters, minimum=0)
  if x.ndim != 2 or x.shape[0] < num_clusters:
    raise ValueError(f"kmeans needs x of shape [n, d] with n >= k = {num_clusters}; received "
                     f"shape {x.shape}. Ask for fewer clusters (landmarks).")
  spread = jnp.sqrt(jnp.mean(jnp.sum(jnp.square(x - jnp.mean(x, axis=0, keepdims=True)), axis=1)))
  threshold = jnp.square(tol * jnp.maximum(spread, 1e-30))

  def cond(carry):
    _, shift, it = carry
    return (it < max_iters) & (shift > threshold)

  def body(carry):
    centers, _, it = carry
    new_centers, _, _ = lloyd_step(x, centers)
    shift = jnp.max(jnp.sum(jnp.square(new_centers - centers), axis=1))
    return new_centers, shift, it + 1

  seeds = kmeans_plus_plus(key, x, num_clusters)
  init = (seeds, jnp.asarray(jnp.inf, x.dtype), jnp.int32(0))
  centers, _, num_iters = jax.lax.while_loop(cond, body, init)
  d2 = kernels.squared_distances(x, centers)
  return KMeansResult(centers, jnp.argmin(d2, axis=1).astype(jnp.int32),
                      jnp.sum(jnp.min(d2, axis=1)), num_iters, seeds)
