"""Fixed feature maps psi: R^d -> R^p of the Gaussian kernel for the direct solver.

Two maps, both with psi(x) . psi(x') ~ k(x, x') = exp(-sigma ||x - x'||^2):

* ``FourierMap``: the engine's random Fourier blocks (``engine.features``), block i drawn from
  ``fold_in(feature_key, i)``. With T blocks of m frequencies (p = 2 m T),

      psi(x) = [phi_0(x), ..., phi_{T-1}(x)] / sqrt(T),   phi_i = [cos(Omega_i x), sin(Omega_i x)]
                                                                   / sqrt(m),

  so a solution w is the engine's ``Model`` with coefficients w.reshape(T, 2m) / sqrt(T) and
  scale 1: every prediction, io and estimator path of the DSG models serves it unchanged.
* ``NystromMap``: psi(x) = k(x, Z) P on p landmarks Z, P = L^-T from a pivoted Cholesky
  factorization K_ZZ = L L^T in float64 (landmarks whose conditional variance is below
  ``NYSTROM_RCOND`` of the largest eigenvalue's estimate dropped: zero columns). That is the
  Nystrom map of ``qsg_jax.roc_svm.nystrom`` up to a rotation (same inner products, so the same
  f and ||f||). With every training point a landmark (and nothing dropped) it reproduces the
  kernel exactly, so the direct solution is then the exact kernel minimizer
  (``baselines.fit_exact_qsg``).

Where the projection happens matters in float32. Here psi = k(x, Z) P is formed on the device
and its moments summed: P's large entries (up to lambda_min(K_rr)^(-1/2)) only perturb the features
(a perturbed data set, whose moments stay positive semi-definite), while the sums' rounding is
relative to |psi|^2. Projecting float32 moments of k(x, Z) afterwards (P^T S P in float64)
would amplify their accumulation rounding by |P|^2 instead and made systems indefinite in tests.
``features`` is jittable and takes the map as an argument (traced), so one compilation serves
every sigma of a grid.
"""

from typing import NamedTuple, Union

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg

from qsg_jax import numerics
from qsg_jax.engine import features as rff
from qsg_jax.engine import kernels
from qsg_jax.numerics import HIGHEST
from qsg_jax.roc_svm import clustering

# Landmarks whose conditional variance is below this share of K_ZZ's largest eigenvalue (estimate)
# are dropped (``nystrom_map``).
NYSTROM_RCOND = 1e-7
LANDMARK_METHODS = ("uniform", "kmeans")


class FourierMap(NamedTuple):
  """Random Fourier features of T engine blocks (module docstring)."""
  omega: jax.Array   # [T, m, d] float32 frequencies, block i = sample_frequencies(key, i, ...).


class NystromMap(NamedTuple):
  """Nystrom features psi(x) = k(x, Z) P (``nystrom_map``)."""
  landmarks: jax.Array   # [p, d] float32 landmarks Z.
  projection: jax.Array  # [p, p] float32 P (L^-T on the kept landmarks' rows; zero columns
                          # where a landmark was dropped).
  sigma: jax.Array       # float32 scalar.


FeatureMap = Union[FourierMap, NystromMap]


def num_features(feature_map: FeatureMap) -> int:
  """p, the length of psi(x)."""
  if isinstance(feature_map, FourierMap):
    t, m, _ = feature_map.omega.shape
    return 2 * m * t
  return feature_map.projection.shape[1]


def input_dim(feature_map: FeatureMap) -> int:
  """d, the number of input features the map expects."""
  if isinstance(feature_map, FourierMap):
    return feature_map.omega.shape[2]
  return feature_map.landmarks.shape[1]


def fourier_map(feature_key: jax.Array, sigma, num_blocks: int, num_frequencies: int,
                dim: int) -> FourierMap:
  """The ``FourierMap`` of blocks 0..T-1 of ``feature_key`` (the engine's frequencies).

  Args:
    feature_key: the feature PRNG key (``engine.init`` splits it from the user's key).
    sigma: kernel parameter (scalar).
    num_blocks: T.
    num_frequencies: m per block.
    dim: d.

  Returns:
    ``FourierMap`` with omega [T, m, d].
  """
  # float32 draws even under jax_enable_x64 (whose default normals are float64 draws, other
  # numbers): a model's frequencies must not depend on that flag.
  with jax.enable_x64(False):
    omega = jax.vmap(lambda i: rff.sample_frequencies(feature_key, i, num_frequencies, dim,
                                                      sigma))(jnp.arange(num_blocks))
  return FourierMap(jnp.asarray(omega, jnp.float32))


def select_landmarks(key: jax.Array, x: np.ndarray, num_landmarks: int,
                     method: str = "uniform", kmeans_iters: int = 10) -> np.ndarray:
  """[p, d] landmarks among (uniform) or summarizing (k-means centers) the points ``x``.

  Landmarks do not depend on sigma, so one set serves a whole grid. With no more candidates
  than p, every candidate is a landmark (p becomes n): the solution is then the exact kernel
  minimizer over them.

  Args:
    key: PRNG key.
    x: [n, d] candidate points (``fitting.landmark_points``).
    num_landmarks: p.
    method: "uniform" (p of the points without replacement) or "kmeans" (k-means++ seeds and
      ``kmeans_iters`` Lloyd steps).
  """
  x = np.asarray(x, np.float32)
  if x.shape[0] <= num_landmarks:   # every point a landmark: the exact kernel minimizer
    return x
  if method == "kmeans":
    return np.asarray(clustering.kmeans(key, jnp.asarray(x), num_landmarks,
                                        max_iters=kmeans_iters).centers)
  if method != "uniform":
    raise ValueError(f"landmarks must be an array [p, d] or one of {LANDMARK_METHODS}; "
                     f"received {method!r:.40}.")
  rng = np.random.default_rng(np.asarray(jax.random.key_data(key)).tolist())
  return x[np.sort(rng.choice(x.shape[0], num_landmarks, replace=False))]


def nystrom_map(landmarks: np.ndarray, sigma: float, rcond: float = NYSTROM_RCOND) -> NystromMap:
  """The ``NystromMap`` of ``landmarks``: P = L^-T of a pivoted Cholesky of K_ZZ, in float64.

  LAPACK ``dpstrf`` factors K_ZZ[pi, pi] = L L^T, stopping at rank r when the largest remaining
  conditional variance of a landmark falls below ``rcond`` times sum(K_ZZ) / p (a lower bound of
  the largest eigenvalue); rows pi_1..pi_r of P hold L^-T, everything else is 0. Then
  psi(x) . psi(x') = k(x, Z_r) K_rr^-1 k(Z_r, x'), the Nystrom approximation on the r kept
  landmarks (the others nearly in their span). Three times faster than an eigendecomposition
  at p = 512 (8 against 25 ms, a fifth of a warm fit), with the same float32 feature rounding.

  Args:
    landmarks: [p, d] points Z.
    sigma: kernel parameter.
    rcond: relative tolerance of the dropped conditional variances. Float32 kernel values carry
      rounding of about 6e-8, so a direction of variance v is known to about 6e-8 / sqrt(v) of
      a feature.

  Returns:
    ``NystromMap``; P is [p, p] whatever is dropped, so shapes (and compiled code) do not
    depend on sigma.
  """
  z32 = np.asarray(landmarks, np.float32)
  z = z32.astype(np.float64)
  p = z.shape[0]
  sq = np.sum(z * z, axis=1)
  kernel = np.exp(-float(sigma) * np.maximum(sq[:, None] + sq[None, :] - 2.0 * z @ z.T, 0.0))
  projection = np.zeros((p, p))
  with numerics.one_blas_thread():
    factor, pivots, rank, _ = scipy.linalg.lapack.dpstrf(kernel, tol=rcond * kernel.sum() / p,
                                                         lower=1)
    if rank:
      inverse, _ = scipy.linalg.lapack.dtrtri(factor[:rank, :rank], lower=1)
      projection[pivots[:rank] - 1, :rank] = np.tril(inverse).T
  return NystromMap(*jax.device_put((z32, projection.astype(np.float32), np.float32(sigma))))


def features(feature_map: FeatureMap, x: jax.Array) -> jax.Array:
  """psi(x): [n, d] points -> [n, p] float32 features (jittable; the map may be traced).

  Fourier features use the engine's fused cos/sin (NaN beyond ``numerics.MAX_PHASE``, which the
  boundary checks refuse); every product runs at HIGHEST precision.
  """
  if x.ndim != 2 or x.shape[1] != input_dim(feature_map):
    raise ValueError(f"expected points of shape [n, {input_dim(feature_map)}]; received "
                     f"{x.shape}. Pass points preprocessed like the training data.")
  if isinstance(feature_map, FourierMap):
    t, m, d = feature_map.omega.shape
    z = jnp.matmul(x, feature_map.omega.reshape(t * m, d).T, precision=HIGHEST)  # [n, T m]
    cos, sin = rff.cos_sin(z.reshape(-1, t, m))
    psi = jnp.concatenate([cos, sin], axis=2).reshape(-1, 2 * m * t)          # block-major
    return psi * (1.0 / np.sqrt(m * t)).astype(np.float32)
  c = kernels.gaussian_kernel(x, feature_map.landmarks, feature_map.sigma)     # [n, p]
  return jnp.matmul(c, feature_map.projection, precision=HIGHEST)
