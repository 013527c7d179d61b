"""Nystrom feature map of the Gaussian kernel: V = C (K_sel^+)^(1/2) (ROC-SVM paper, Eq. 11).

With d landmarks z_1..z_d, K_sel [d, d] = k(z_a, z_b) and C [n, d] = k(x_i, z_b), the rows of
V = C (K_sel^+)^(1/2) satisfy V V^T = C K_sel^+ C^T, the Nystrom approximation of the kernel
matrix; so the kernel ROC-SVM becomes a d-dimensional linear ROC-SVM on the rows of V (Eq. 12,
Proposition 3), and test points use the same map. The square root is the symmetric one,
U diag(lambda^-1/2) U^T over the eigenvalues above ``rcond * lambda_max`` (pseudo-inverse).

Landmarks are chosen uniformly, stratified by class (the paper's simulations) or as k-means
centers (its real data).
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.engine import kernels
from qsg_jax.roc_svm import clustering

LANDMARK_METHODS = ("uniform", "stratified", "kmeans")
# k-means landmarks are computed on a uniform subsample of this many points: on Skin (70,000
# training points) the test AUC of the Nystrom model is unchanged and k-means costs a fraction.
DEFAULT_KMEANS_SAMPLE_SIZE = 10000


class NystromMap(NamedTuple):
  """What maps points to Nystrom features."""
  landmarks: jax.Array   # [d, p] landmark points z_b.
  projection: jax.Array  # [d, d] (K_sel^+)^(1/2), symmetric.
  sigma: jax.Array       # scalar Gaussian kernel parameter, k(x, z) = exp(-sigma ||x - z||^2).


def select_landmarks(key, x, y, num_landmarks, method="stratified", kmeans_iters=100,
                     kmeans_sample_size=DEFAULT_KMEANS_SAMPLE_SIZE):
  """Chooses d landmarks among (or, for k-means, summarizing) the training points.

  Args:
    key: PRNG key.
    x: [n, p] training points.
    y: [n] labels (positive where > 0); used by "stratified" only.
    num_landmarks: d <= n.
    method: "uniform" (d points without replacement), "stratified" (each class gets a share of
      the d points proportional to its size, at least one, drawn without replacement), or
      "kmeans" (the centers of k-means with k = d, seeded by k-means++).
    kmeans_iters: most Lloyd iterations for "kmeans" (0: the k-means++ seeds).
    kmeans_sample_size: "kmeans" clusters a uniform subsample (without replacement) of this
      many points when n is larger; None clusters all n points.

  Returns:
    [d, p] landmarks.
  """
  n = x.shape[0]
  if not isinstance(method, str) or method not in LANDMARK_METHODS:
    raise ValueError(f"unknown landmark method {method!r:.60}; expected one of "
                     f"{LANDMARK_METHODS}.")
  num_landmarks = validation.check_count("num_landmarks", num_landmarks)
  kmeans_iters = validation.check_count("kmeans_iters", kmeans_iters, minimum=0)
  kmeans_sample_size = validation.check_count("kmeans_sample_size", kmeans_sample_size,
                                              allow_none=True)
  if not 1 <= num_landmarks <= n:
    raise ValueError(f"num_landmarks must lie in 1..n = {n}; received {num_landmarks}. "
                     "Use fewer landmarks than training points.")
  # Draws and row selection happen on the host (sizes vary, so device kernels would compile
  # per size), from a NumPy generator seeded by the key.
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
  x = np.asarray(x)
  if method == "kmeans":
    if kmeans_sample_size is not None:
      if kmeans_sample_size < num_landmarks:
        raise ValueError(f"kmeans_sample_size={kmeans_sample_size} is below num_landmarks="
                         f"{num_landmarks}; k-means needs at least as many points as centers. "
                         "Raise kmeans_sample_size or pass None to cluster all points.")
      if n > kmeans_sample_size:
        x = x[np.sort(rng.choice(n, kmeans_sample_size, replace=False))]
    return jnp.asarray(clustering.kmeans(key, x, num_landmarks, max_iters=kmeans_iters).centers)
  if method == "uniform":
    return jnp.asarray(x[np.sort(rng.choice(n, num_landmarks, replace=False))])
  positive = np.asarray(y) > 0
  groups = [np.nonzero(positive)[0], np.nonzero(~positive)[0]]
  groups = [g for g in groups if g.size]
  share = [max(1, round(num_landmarks * g.size / n)) for g in groups]
  share[-1] = num_landmarks - sum(share[:-1])   # exact total (a class gets >= 1 when d >= 2)
  if any(s < 1 or s > g.size for s, g in zip(share, groups)):
    raise ValueError(f"cannot stratify {num_landmarks} landmarks over classes of sizes "
                     f"{[g.size for g in groups]}; use method='uniform' or fewer landmarks.")
  picks = [rng.choice(g, s, replace=False) for g, s in zip(groups, share)]
  return jnp.asarray(x[np.concatenate(picks)])


@numerics.full_precision
def pinv_sqrt(matrix, rcond=None):
  """Symmetric square root of the pseudo-inverse of a PSD matrix: (A^+)^(1/2).

  Args:
    matrix: [d, d] symmetric positive semi-definite.
    rcond: eigenvalues below ``rcond * lambda_max`` count as zero; default 10 d eps.

  Returns:
    [d, d] U diag(lambda^-1/2 or 0) U^T.
  """
  d = matrix.shape[0]
  if rcond is None:
    rcond = 10 * d * jnp.finfo(matrix.dtype).eps
  eigvals, eigvecs = jnp.linalg.eigh(0.5 * (matrix + matrix.T))
  keep = eigvals > rcond * jnp.max(eigvals)
  inv_sqrt = jnp.where(keep, 1.0 / jnp.sqrt(jnp.where(keep, eigvals, 1.0)), 0.0)
  return (eigvecs * inv_sqrt[None, :]) @ eigvecs.T


def nystrom_map(landmarks, sigma, rcond=None):
  """The ``NystromMap`` of Gaussian-kernel landmarks (paper Eq. 11).

  The eigendecomposition runs with one BLAS thread: jaxlib's CPU ``eigh`` calls SciPy's
  OpenBLAS LAPACK, whose worker threads spin against XLA's on a small machine (measured on 2
  cores: 1.3 s for a 300 x 300 ``eigh`` with OpenBLAS's default threads, 14 ms with one).

  Args:
    landmarks: [d, p] landmark points.
    sigma: kernel parameter of k(x, z) = exp(-sigma ||x - z||^2).
    rcond: relative eigenvalue cutoff of the pseudo-inverse (see ``pinv_sqrt``).

  Returns:
    ``NystromMap``.
  """
  with numerics.one_blas_thread():
    return jax.block_until_ready(_nystrom_map(landmarks, sigma, rcond))


@jax.jit
@jax.default_matmul_precision("highest")
def _nystrom_map(landmarks, sigma, rcond=None):
  k_sel = kernels.gaussian_kernel(landmarks, landmarks, sigma)
  return NystromMap(landmarks, pinv_sqrt(k_sel, rcond), jnp.asarray(sigma, landmarks.dtype))


@jax.jit
@jax.default_matmul_precision("highest")
def _features(feature_map, x):
  c = kernels.gaussian_kernel(x, feature_map.landmarks, feature_map.sigma)   # [n, d]
  return c @ feature_map.projection


def nystrom_features(feature_map, x, chunk_size=65536):
  """Rows of V = C (K_sel^+)^(1/2) for the points ``x``, computed ``chunk_size`` rows at a time.

  Args:
    feature_map: ``NystromMap``.
    x: [n, p] points (training or test).
    chunk_size: rows per kernel evaluation (bounds the temporary [chunk, d] matrices).

  Returns:
    [n, d] features; V V^T approximates the kernel matrix of ``x``.
  """
  x = jnp.asarray(x)
  if x.shape[0] <= chunk_size:
    return _features(feature_map, x)
  return jnp.concatenate([_features(feature_map, x[i:i + chunk_size])
                          for i in range(0, x.shape[0], chunk_size)])
