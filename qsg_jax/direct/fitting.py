"""``fit``: the direct solver's checked entry point (features, one pass, one solve, the model).

    result = direct.fit(x_l, y_l, x_u, key=0, sigma=0.1, lam=1e-3, gamma=0.5)
    scores = direct.decision_function(result.model, x)

Steps: build the feature map (``feature_maps``), the shift and the class moments of the labeled
points, one pass over the unlabeled points (an array, a memory map, an iterator of chunks, or a
``distributed.ShardedUnlabeled`` on a mesh of devices and processes; ``moments``), one float64
solve (``solve``), and the model. A Fourier solution is the engine's ``Model`` (coefficients
[T, 2m], scale 1), so ``engine.model_scores``, ``qsg_jax.io`` and the estimators serve it; a
Nystrom solution is a ``NystromModel``, a kernel expansion over its p landmarks.
"""

import collections.abc
import itertools
import os
import warnings
from typing import NamedTuple, Optional, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import distributed
from qsg_jax import engine
from qsg_jax import memory
from qsg_jax import numerics
from qsg_jax.config import PREDICT_CHUNK
from qsg_jax.direct import feature_maps
from qsg_jax.direct import moments as moments_lib
from qsg_jax.direct import system as solve_lib
from qsg_jax.engine import kernels
from qsg_jax.errors import ApproximationWarning
from qsg_jax.numerics import HIGHEST

FEATURE_MAPS = ("rff", "nystrom")
DEFAULT_FEATURE_MAP = "nystrom"
NUM_FEATURES = 512             # p (module docstring of ``qsg_jax.direct``: measured choice).
NUM_FREQUENCIES = 32           # m per Fourier block (the engine's default): T = p / (2 m).
# Below this a solution's float32 scores underflow and tie (a lam near 1e30 on scaled data).
TINY_WEIGHT = 1e-30
DEFAULT_LANDMARKS = "uniform"  # Nystrom landmarks: "uniform" or "kmeans" (measured choice).
LANDMARK_SAMPLE = 8192         # unlabeled points landmarks are chosen among (with the labeled).
KMEANS_ITERS = 10              # Lloyd iterations after k-means++ seeding ("kmeans" landmarks).


class NystromModel(NamedTuple):
  """f(x) = sum_b coef_b k(x, z_b): a kernel expansion over p landmarks (g_j alike)."""
  landmarks: jax.Array       # [p, d] float32 landmarks z_b.
  coef: jax.Array            # [p] float32 beta = P w (``feature_maps.nystrom_map``'s P).
  sigma: jax.Array           # float32 scalar, k(x, z) = exp(-sigma ||x - z||^2).
  split_coef: Optional[jax.Array] = None  # [p, k-1] float32 expansions P v_j of the g_j, or None.


Model = Union[engine.Model, NystromModel]


class DirectFit(NamedTuple):
  """What ``fit`` returns."""
  model: Model                 # predict with ``decision_function`` (or engine.model_scores).
  f_labeled: np.ndarray        # [n_l] float32 f on the labeled points (for the thresholds).
  feature_map: feature_maps.FeatureMap  # the map psi of the solution.
  moments: moments_lib.Moments  # k class groups, then the unlabeled group.
  weights: np.ndarray          # [p] float64 w (f = w . psi).
  split_weights: Optional[np.ndarray]  # [k-1, p] float64 v_j, or None.
  kernel_residual: float       # Nystrom: mean of 1 - ||psi(x)||^2 = k(x, x) - psi(x).psi(x)
                               # over the labeled points (0: the map reproduces the kernel
                               # there); NaN for Fourier features (||psi(x)|| = 1 always).
  feature_names: Optional[Tuple[str, ...]] = None  # x_labeled's column names when it was a
                               # data frame: a frame scored must have them, in order.
  training_box: Optional[np.ndarray] = None  # Fourier maps: [2, d] float32 column minima and
                               # maxima of the training points (None: chunks or strata).


# Above this mean kernel residual ``fit`` warns: at p = 512 it was 0.002-0.003 on sgemm and
# ijcnn1 and below 1e-5 on cod-rna, skin and accelerometer (AUC within 0.002 of the exact
# minimizer), 0.19 on bank_marketing (AUC 0.02 away; 0.10 and within 0.002 at p = 2048).
RESIDUAL_WARNING = 0.05
# Above this sigma times the median landmark's squared distance to its nearest other landmark
# ``fit`` warns that the kernel is too narrow (kernel value below 2e-9 between neighbours).
NARROW_EXPONENT = 20.0
# Above this sigma times the median distinct labeled point's squared distance to its nearest
# other one, a fit warns that the kernel is too narrow for the solver (RESULTS.md, narrow-dsg).
# Measured on 13 datasets (the six peers sets and seven no measurement had used; trials 0-2,
# sigma 0.01..3000, both solvers): no fit within 0.01 of its best AUC had it above 0.222, no fit
# at chance below 0.789; above 0.5 DSG had lost more than a quarter of its edge over 0.5 on the
# six sets. The direct solver degrades later (no sampling noise) but reached chance from the same
# 0.79 (accelerometer). More random features barely move it: fixed, not 1/sqrt(D).
NARROW_LABELED_EXPONENT = 0.5
NARROW_SAMPLE = 512   # DSG: labeled points measured (as many as the default landmarks)


def make_feature_map(kind: str, key: jax.Array, sigma: float, num_features: int, dim: int,
                     points=None, landmarks=DEFAULT_LANDMARKS,
                     num_frequencies: int = NUM_FREQUENCIES) -> feature_maps.FeatureMap:
  """The feature map of a fit: Fourier blocks of ``key``, or Nystrom on landmarks.

  Args:
    kind: "rff" or "nystrom".
    key: the feature key (``fit`` splits it from the user's key as ``engine.init`` does).
    sigma: kernel parameter.
    num_features: p (rff: a multiple of 2 m; nystrom: landmarks, unless given as an array).
    dim: d.
    points: [n, d] candidate landmark points (``landmark_points``; nystrom with a method).
    landmarks: "uniform", "kmeans" (chosen among / from ``points``) or a [p, d] array.
    num_frequencies: m (rff).
  """
  if kind == "rff":
    if num_features % (2 * num_frequencies):
      nearest = max(1, round(num_features / (2 * num_frequencies))) * 2 * num_frequencies
      raise ValueError(f"num_features={num_features} must be a multiple of 2 * num_frequencies "
                       f"= {2 * num_frequencies} for feature_map='rff' (p = 2 m T); use e.g. "
                       f"{nearest}.")
    return feature_maps.fourier_map(key, sigma, num_features // (2 * num_frequencies),
                                    num_frequencies, dim)
  if isinstance(landmarks, str):
    landmarks = feature_maps.select_landmarks(jax.random.fold_in(key, 1), points, num_features,
                                              landmarks, KMEANS_ITERS)
  return feature_maps.nystrom_map(landmarks, sigma)


def landmark_points(key, x_l, x_u, mesh=None, axis_name="data"):
  """(points k-means clusters, x_u to use afterwards): the labeled points and a sample of x_u.

  The sample: ``LANDMARK_SAMPLE`` rows (all when fewer) drawn uniformly without replacement by
  ``key``, the same rows whether x_u is an array-like or a ``ShardedUnlabeled`` over any number
  of devices and processes (gathered with one psum, so every process builds the same map); for
  an iterator, its first chunk (chained back, so the pass still reads every row once).
  """
  if x_u is None:
    return x_l, x_u
  dim = x_l.shape[1]
  if isinstance(x_u, distributed.ShardedUnlabeled):
    index = sample_indices(key, x_u.num_unlabeled)
    return np.concatenate([x_l, _gather_rows(x_u, index, mesh, axis_name)]), x_u
  if hasattr(x_u, "shape") and hasattr(x_u, "__getitem__"):
    x_u = validation.with_auto_axes(x_u)
    index = sample_indices(key, x_u.shape[0])
    sample = validation.check_chunk("x_unlabeled", x_u[index], dim, rows=index, kernel=True)
    return np.concatenate([x_l, sample]), x_u
  iterator, skipped, seen = iter(x_u), [], 0
  for first in iterator:                # the first chunk with rows (empty ones are skipped)
    first = validation.check_chunk("x_unlabeled", first, dim, seen, kernel=True)
    if first.shape[0]:
      chained = itertools.chain(skipped, [first], iterator)
      return np.concatenate([x_l, first[:LANDMARK_SAMPLE]]), chained
    skipped.append(first)
  return x_l, iter(())


def check_mesh(mesh, axis_name: str = "data"):
  """Raises unless ``mesh`` is None or a ``jax.sharding.Mesh`` with the axis ``axis_name``."""
  if mesh is None:
    return
  if not isinstance(mesh, jax.sharding.Mesh):
    raise TypeError(f"mesh must be a jax.sharding.Mesh or None; received {type(mesh).__name__} "
                    f"{mesh!r:.40}. Make one with qsg_jax.distributed.global_mesh().")
  if not isinstance(axis_name, str) or axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r:.40}; its axes are {tuple(mesh.shape)}. "
                     "Pass axis_name= one of them.")


def _check_sharded(unlabeled, dim, mesh, axis_name):
  """A ``ShardedUnlabeled`` checked against its mesh and d (as ``distributed.load_unlabeled``
  lays it out), or None when it holds no point."""
  if mesh is None:
    raise ValueError("x_unlabeled is a distributed.ShardedUnlabeled: pass the mesh it lives on "
                     "(mesh=...).")
  check_mesh(mesh, axis_name)
  n = validation.check_count("x_unlabeled.num_unlabeled", unlabeled.num_unlabeled, minimum=0,
                             maximum=None)
  if n == 0:
    return None
  x = unlabeled.x
  devices = int(mesh.shape[axis_name])
  rows = devices * -(-n // devices)
  layout = ("lay it out with qsg_jax.distributed.load_unlabeled(source, mesh), which also "
            "checks its values")
  if np.ndim(x) != 2 or np.shape(x)[1] != dim or np.shape(x)[0] != rows:
    raise ValueError(f"x_unlabeled.x must be [{rows}, {dim}] for {n} points in strata over "
                     f"{devices} device(s) of axis {axis_name!r}; received shape "
                     f"{np.shape(x)}: {layout}.")
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(axis_name))
  if not (isinstance(x, jax.Array) and x.sharding.is_equivalent_to(sharding, 2)):
    raise ValueError(f"x_unlabeled.x is not split over the mesh axis {axis_name!r} (received "
                     f"{type(x).__name__}): {layout}.")
  return distributed.ShardedUnlabeled(jax.device_put(x, sharding), n)   # the same layout


def check_unlabeled(x_unlabeled, dim: int, mesh=None, axis_name: str = "data", columns=None):
  """``x_unlabeled`` of ``fit`` / ``cross_validate`` in a form the pass reads, after every check
  that needs no pass over its values (those are made chunk by chunk, at the user's row).

  In-memory arrays (NumPy, pandas, lists of rows) are checked whole (``check_points``); array-likes
  read lazily (memory maps, JAX or h5py arrays) for their shape and dtype; an iterable of chunks is
  left to the pass. None (or an empty array) means no unlabeled point. Data frames (whole, or as
  chunks) must have the column names ``columns`` of the labeled frame, in order.

  Raises:
    TypeError: a kind of source the pass cannot read (a path, a number, a dict, scipy sparse,
      non-numeric values).
    ValueError: the wrong number of features or rank; a ``ShardedUnlabeled`` without its mesh
      or not laid out on it; a data frame with other columns than ``columns``.
  """
  check_mesh(mesh, axis_name)
  if x_unlabeled is None:
    return None
  if isinstance(x_unlabeled, distributed.ShardedUnlabeled):
    return _check_sharded(x_unlabeled, dim, mesh, axis_name)
  validation.refuse_unreadable("x_unlabeled", x_unlabeled)
  if isinstance(x_unlabeled, (str, bytes, os.PathLike)):
    raise TypeError(f"x_unlabeled is a path ({os.fspath(x_unlabeled)!r:.80}); pass the array: "
                    "np.load(path, mmap_mode='r') reads an .npy file lazily.")
  if isinstance(x_unlabeled, collections.abc.Mapping) or not (
      hasattr(x_unlabeled, "__getitem__") or hasattr(x_unlabeled, "__iter__")):
    raise TypeError(f"x_unlabeled must be an array [n, d], a memory map, an iterable of [n_i, d] "
                    f"chunks, a distributed.ShardedUnlabeled or None; received "
                    f"{type(x_unlabeled).__name__}.")
  if isinstance(x_unlabeled, (list, tuple)) and x_unlabeled and np.ndim(x_unlabeled[0]) == 1:
    x_unlabeled = np.asarray(x_unlabeled)   # a list of rows, not of chunks
  in_memory = (isinstance(x_unlabeled, np.ndarray) and not isinstance(x_unlabeled, np.memmap)) or (
      hasattr(x_unlabeled, "iloc"))          # pandas: rows by position, nullable numbers
  if in_memory:
    if np.size(x_unlabeled) == 0:
      return None
    return validation.check_points("x_unlabeled", x_unlabeled, dim=dim, kernel=True,
                                   columns=columns, training=True)
  validation.check_columns("x_unlabeled", x_unlabeled, columns, "x_labeled")
  if hasattr(x_unlabeled, "shape") and hasattr(x_unlabeled, "__getitem__"):
    shape, dtype = tuple(x_unlabeled.shape), getattr(x_unlabeled, "dtype", None)
    if len(shape) != 2 or shape[1] != dim:
      raise ValueError(f"x_unlabeled must be [n, {dim}] (the labeled points' {dim} features); "
                       f"received shape {shape}.")
    if dtype is not None and np.dtype(dtype).kind not in "biuf" and not (
        validation.is_extra_float(dtype)):   # bfloat16 / float8: read in float32 chunks
      raise TypeError(f"x_unlabeled must be real numbers; received dtype {dtype}. Encode text or "
                      "categorical columns numerically first.")
    return None if shape[0] == 0 else x_unlabeled
  return x_unlabeled if columns is None else _chunks_named(x_unlabeled, columns)


def _chunks_named(chunks, columns):
  """The chunks of an iterable, each data frame among them checked to have ``columns``."""
  for i, chunk in enumerate(chunks):
    validation.check_columns(f"chunk {i} of x_unlabeled", chunk, columns, "x_labeled")
    yield chunk


def check_options(feature_map, num_features, num_frequencies, chunk_rows, landmarks, dim,
                  default_num_features=NUM_FEATURES):
  """(num_features, num_frequencies, chunk_rows, landmarks) of ``fit`` / ``cross_validate``
  checked (landmarks: a method name, or a [p, d] float32 array); an option set away from its
  default where the map ignores it is refused, naming the map it applies to."""
  if not isinstance(feature_map, str) or feature_map not in FEATURE_MAPS:
    raise ValueError(f"feature_map must be one of {FEATURE_MAPS}; received {feature_map!r:.40}.")
  num_features = validation.check_count("num_features", num_features)
  num_frequencies = validation.check_count("num_frequencies", num_frequencies)
  chunk_rows = validation.check_count("chunk_rows", chunk_rows)
  if landmarks is None:   # as cross_validate's grid["landmarks"] holds for the rff map
    landmarks = DEFAULT_LANDMARKS
  given_landmarks = not isinstance(landmarks, str)
  if not given_landmarks and landmarks not in feature_maps.LANDMARK_METHODS:
    raise ValueError(f"landmarks must be an array [p, d] or one of "
                     f"{feature_maps.LANDMARK_METHODS}; received {landmarks!r:.40}.")
  if feature_map == "nystrom" and given_landmarks:
    landmarks = validation.check_points("landmarks", landmarks, dim=dim, kernel=True)
  if feature_map == "rff":   # options the map ignores, set away from their defaults: refused
    validation.refuse_ignored({"landmarks": (landmarks, DEFAULT_LANDMARKS)}, "feature_map='rff'",
                              "feature_map='nystrom'")
  else:
    validation.refuse_ignored({"num_frequencies": (num_frequencies, NUM_FREQUENCIES)},
                              "feature_map='nystrom'", "feature_map='rff'")
    if given_landmarks and num_features != landmarks.shape[0]:
      validation.refuse_ignored(
          {"num_features": (num_features, default_num_features)}, "feature_map='nystrom' and "
          f"landmarks given as an array (its {landmarks.shape[0]} rows are p)",
          "landmarks given as a method name")
  return num_features, num_frequencies, chunk_rows, landmarks


def statistics_bytes(num_features: int, num_groups: int, num_labeled: int) -> int:
  """Peak bytes of a direct fit's statistics: the pass's float32 sums of G groups (hi and lo parts
  and one chunk's products, 3 G p^2 x 4 B), their float64 moments (G p^2 x 8 B), the system and
  its factor (3 p^2 x 8 B) and the labeled points' features (n_l p x 8 B). Quadratic in p."""
  p, g = int(num_features), int(num_groups)
  return 12 * g * p * p + 8 * g * p * p + 24 * p * p + 8 * int(num_labeled) * p


def check_memory(feature_map, num_features, landmarks, num_groups, num_labeled,
                 x_unlabeled=None) -> None:
  """Refuses (``InsufficientMemoryError``) statistics larger than the free memory, before any
  allocation: a Nystrom map has at most as many features as landmark candidates (the labeled
  points and a sample of the unlabeled ones, ``landmark_points``)."""
  p = num_features
  if feature_map == "nystrom" and not isinstance(landmarks, str):
    p = landmarks.shape[0]
  elif feature_map == "nystrom":
    n_u = (0 if x_unlabeled is None else x_unlabeled.num_unlabeled
           if isinstance(x_unlabeled, distributed.ShardedUnlabeled) else
           x_unlabeled.shape[0] if hasattr(x_unlabeled, "shape") else LANDMARK_SAMPLE)
    p = min(p, num_labeled + min(n_u, LANDMARK_SAMPLE))
  memory.check_allocation(
      statistics_bytes(p, num_groups, num_labeled),
      what=f"the direct solver's statistics ({num_groups} groups of {p} x {p} feature moments)",
      fix=f"Lower num_features (memory grows with its square; the default is {NUM_FEATURES}).")


def sample_indices(key, n):
  """Sorted indices of min(n, ``LANDMARK_SAMPLE``) rows of n, drawn by ``key``."""
  seed = np.asarray(jax.random.key_data(jax.random.fold_in(key, 0))).tolist()
  return np.sort(np.random.default_rng(seed).choice(n, min(n, LANDMARK_SAMPLE), replace=False))


def _gather_rows(unlabeled, index, mesh, axis_name):
  """Rows ``index`` (numbering of the n_u points) of a ``ShardedUnlabeled``, on every process.

  Each device contributes the rows its stratum holds (zeros elsewhere) and one psum adds them:
  the result does not depend on the number of devices or processes.
  """
  devices = int(mesh.shape[axis_name])
  sizes, offsets = engine.sampling.strata(unlabeled.num_unlabeled, devices)
  spec = jax.sharding.PartitionSpec

  def local(x, index, sizes, offsets):
    s = jax.lax.axis_index(axis_name)
    position = index - offsets[s]
    mine = (position >= 0) & (position < sizes[s])
    rows = jnp.where(mine[:, None], x[jnp.clip(position, 0, x.shape[0] - 1)], 0.0)
    return jax.lax.psum(rows, axis_name)

  gather = jax.jit(jax.shard_map(local, mesh=mesh, in_specs=(spec(axis_name), spec(), spec(),
                                                             spec()), out_specs=spec()))
  return moments_lib.host_value(gather(unlabeled.x, jnp.asarray(index, jnp.int32),
                                       jnp.asarray(sizes, jnp.int32),
                                       jnp.asarray(offsets, jnp.int32)))


def unlabeled_moments(feature_map, x_unlabeled, shift, *, chunk_rows=moments_lib.CHUNK_ROWS,
                      mesh=None, axis_name="data") -> moments_lib.Moments:
  """One pass over the unlabeled source of any kind (``fit``'s ``x_unlabeled``)."""
  if x_unlabeled is None:
    return moments_lib.empty(feature_maps.num_features(feature_map), shift)
  if isinstance(x_unlabeled, distributed.ShardedUnlabeled):
    if mesh is None:
      raise ValueError("x_unlabeled is a distributed.ShardedUnlabeled: pass the mesh it lives on "
                       "(mesh=...).")
    return moments_lib.sharded_unlabeled_moments(feature_map, x_unlabeled, shift, mesh,
                                                 axis_name, chunk_rows)
  return moments_lib.group_moments(feature_map, x_unlabeled, shift, chunk_rows=chunk_rows,
                                   mesh=mesh, axis_name=axis_name, name="x_unlabeled")


def model_of(feature_map, feature_key, sigma, weights, split_weights=None) -> Model:
  """The prediction model of a solution w [p] (and v [k-1, p]) in ``feature_map``.

  Fourier: the engine's ``Model`` with block coefficients w.reshape(T, 2m) / sqrt(T), scale 1
  (``feature_key`` must be the key that drew the map). Nystrom: ``NystromModel`` with the
  kernel expansion beta = P w (P v_j), computed in float64.
  """
  weights = np.asarray(weights, np.float64)
  split = None if split_weights is None else np.asarray(split_weights, np.float64).T  # [p, s]
  if isinstance(feature_map, feature_maps.FourierMap):
    t, m, _ = feature_map.omega.shape
    block = lambda a: jnp.asarray(a / np.sqrt(t), jnp.float32).reshape((t, 2 * m) + a.shape[1:])
    return engine.Model(feature_key, block(weights), jnp.float32(1.0), jnp.float32(sigma),
                        None if split is None else block(split),
                        None if split is None else jnp.float32(1.0))
  p = np.asarray(feature_map.projection, np.float64)
  as_device = lambda a: jax.device_put((p @ a).astype(np.float32))   # (jnp.asarray compiles)
  return NystromModel(feature_map.landmarks, as_device(weights), feature_map.sigma,
                      None if split is None else as_device(split))


def fit(x_labeled, y_labeled, x_unlabeled=None, *, key=0, num_classes: Optional[int] = None,
        sigma: float = 0.1, lam: float = 1e-3, gamma=0.5, split_lam: Optional[float] = None,
        feature_map: str = DEFAULT_FEATURE_MAP, num_features: int = NUM_FEATURES,
        num_frequencies: int = NUM_FREQUENCIES, landmarks=DEFAULT_LANDMARKS,
        chunk_rows: int = moments_lib.CHUNK_ROWS, mesh=None, axis_name: str = "data") -> DirectFit:
  """Minimizes the squared-loss QS3ORAO / QSG-S2AUC objective exactly in a feature space.

  The objective is ``qsg_jax.fit``'s (ordinal paper Eqs. 7-9, squared pairwise loss) over
  f = w . psi for a fixed map psi of p features: a quadratic in w, solved in float64 after one
  pass over the unlabeled points (``qsg_jax.direct`` module docstring).

  Args:
    x_labeled: [n_l, d] labeled points (min-max scaled like ``qsg_jax.fit``'s); a data frame's
      string column names are kept (``feature_names``) and checked as ``qsg_jax.fit`` does.
    y_labeled: [n_l] int classes 0..k-1, every class present.
    x_unlabeled: [n_u, d] array, ``np.load(..., mmap_mode="r")`` memory map, an iterable of
      [n_i, d] chunks (read once), a ``distributed.ShardedUnlabeled`` (with ``mesh``), or None
      (only with every gamma = 1).
    key: PRNG key or int seed; its feature key (``jax.random.split(key)[0]``, as ``engine.init``)
      draws the Fourier blocks or seeds k-means.
    num_classes: k; default max(y_labeled) + 1.
    sigma: Gaussian kernel parameter, k(x, x') = exp(-sigma ||x - x'||^2).
    lam: regularization lambda >= 0 (0 needs a positive definite system).
    gamma: scalar or [k-1] trade-off in [0, 1] (1: labeled pairs only).
    split_lam: None, or lam_g > 0 for per-split corrections (inf: none), as ``qsg_jax.fit``.
    feature_map: "nystrom" (default) or "rff" (the engine's Fourier blocks).
    num_features: p (rff: a multiple of 2 * num_frequencies; nystrom: landmarks).
    num_frequencies: m per Fourier block (rff).
    landmarks: Nystrom landmarks: "uniform" (default: p of the labeled points and a sample of
      the unlabeled ones, ``landmark_points``), "kmeans" (k-means centers of them), or a
      [p, d] array (e.g. every training point: the solution is then the exact kernel
      minimizer).
    chunk_rows: rows per chunk of the pass (per device on a mesh).
    mesh: optional ``jax.sharding.Mesh``: the pass splits each chunk over ``axis_name``.
    axis_name: mesh axis.

  Returns:
    ``DirectFit``: the model (``engine.Model`` for rff, ``NystromModel`` for nystrom), f on
    the labeled points, the map, the moments, the float64 solution and the Nystrom kernel
    residual.

  Warns:
    ApproximationWarning: the Nystrom map explains less than 95% of k(x, x) on the labeled
      points (``RESIDUAL_WARNING``).

  Raises:
    ValueError, TypeError: bad inputs (what was received and the fix).
    IllPosedSystemError: the system is singular (lam = 0 with a singular Q).
  """
  with numerics.one_blas_thread():
    return _fit(x_labeled, y_labeled, x_unlabeled, key, num_classes, sigma, lam, gamma,
                split_lam, feature_map, num_features, num_frequencies, landmarks, chunk_rows, mesh,
                axis_name)


def _fit(x_labeled, y_labeled, x_unlabeled, key, num_classes, sigma, lam, gamma, split_lam,
         feature_map, num_features, num_frequencies, landmarks, chunk_rows, mesh, axis_name):
  """``fit``'s body (its arguments in order)."""
  key = validation.check_key(key)
  x_l = validation.check_points("x_labeled", x_labeled, kernel=True, training=True)
  num_features, num_frequencies, chunk_rows, landmarks = check_options(
      feature_map, num_features, num_frequencies, chunk_rows, landmarks, x_l.shape[1])
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  validation.refuse_one_point("x_labeled", x_l)
  gamma = validation.check_gamma(gamma, k)
  sigma = validation.check_float32_range(   # beyond: an internal error of the moments
      "sigma", validation.check_positive("sigma", sigma),
      "the map computes in float32; min-max scaled features suit 0.1..10.")
  lam = validation.check_positive("lam", lam, allow_zero=True)
  if split_lam is not None:
    split_lam = validation.check_positive("split_lam", split_lam, allow_inf=True)
  names = validation.column_names(x_labeled)
  x_unlabeled = check_unlabeled(x_unlabeled, x_l.shape[1], mesh, axis_name, columns=names)
  if mesh is not None:   # each process's own copy: one landmark set, one sum of moments
    distributed.check_same_on_every_process(mesh, x_labeled=x_l, y_labeled=y_l,
                                            x_unlabeled=x_unlabeled)
  check_memory(feature_map, num_features, landmarks, k + 1, x_l.shape[0], x_unlabeled)
  if x_unlabeled is None and np.any(gamma < 1):
    raise ValueError(f"no unlabeled data but gamma={[round(float(g), 6) for g in gamma]} < 1 "
                     "gives weight to the unlabeled risks: pass x_unlabeled, or set gamma=1 for "
                     "supervised training.")
  validation.warn_if_unscaled("x_labeled", x_l)
  if isinstance(x_unlabeled, np.ndarray) and not isinstance(x_unlabeled, np.memmap):
    validation.warn_if_unscaled("x_unlabeled", x_unlabeled)   # in memory: cheap
    validation.warn_if_squeezed(x_l, x_unlabeled)
  elif x_unlabeled is None:
    validation.warn_if_squeezed(x_l)
  if feature_map == "rff":
    validation.check_phase_range("x_labeled", x_l, sigma)
  feature_key, _ = jax.random.split(key)
  points = None
  if feature_map == "nystrom" and isinstance(landmarks, str):
    points, x_unlabeled = landmark_points(feature_key, x_l, x_unlabeled, mesh, axis_name)
  psi = make_feature_map(feature_map, feature_key, sigma, num_features, x_l.shape[1],
                         points=points, landmarks=landmarks, num_frequencies=num_frequencies)
  shift = moments_lib.feature_shift(psi, x_l)
  stats = moments_lib.concatenate(
      moments_lib.labeled_moments(psi, x_l, y_l, k, shift, chunk_rows),
      unlabeled_moments(psi, x_unlabeled, shift, chunk_rows=chunk_rows, mesh=mesh,
                        axis_name=axis_name))
  if not (np.all(np.isfinite(stats.means)) and np.all(np.isfinite(stats.second))):
    raise ValueError("the features of the data are not finite: Fourier phases beyond "
                     "qsg_jax.numerics.MAX_PHASE (unscaled features or a huge sigma), or NaN / inf "
                     "in a distributed.ShardedUnlabeled not made by load_unlabeled. Rescale the "
                     "features to [0, 1] (qsg_jax.data.minmax_fit) or lower sigma.")
  weights, split_weights = solve_lib.solve(stats, lam, gamma, split_lam)
  flat = not solve_lib.active_features(stats).any()
  if flat:
    warnings.warn(f"every feature of the map is constant on the data (identical points, or "
                  f"sigma={sigma:g} so small that the kernel is flat): the solution is f = 0 and "
                  "all scores tie. Raise sigma (min-max scaled features suit 0.1..10; in the "
                  "estimators: lower length_scale), or check the data.", UserWarning,
                  stacklevel=validation.outside_stacklevel())
  model = model_of(psi, feature_key, sigma, weights, split_weights)
  f_labeled = scores(model, x_l)
  if not flat and np.max(np.abs(np.asarray(weights, np.float64))) < TINY_WEIGHT and np.all(
      f_labeled == f_labeled[0]):   # tiny but distinct scores still rank: said only when tied
    warnings.warn(f"every weight of the solution is below {TINY_WEIGHT:g} (lam={lam:g} against "
                  "the data's curvature): the float32 scores underflow and every labeled point's "
                  "score ties. Lower lam (the papers' grid spans 2^-10..2^10).", UserWarning,
                  stacklevel=validation.outside_stacklevel())
  residual, said = np.nan, flat
  if isinstance(psi, feature_maps.NystromMap):
    residual = 1.0 - moments_lib.mean_square_norm(stats, range(k))   # labeled groups: 0..k-1
    if residual > RESIDUAL_WARNING:
      warnings.warn(f"the Nystrom map of {feature_maps.num_features(psi)} landmarks leaves "
                    f"{residual:.0%} of k(x, x) unexplained on the labeled points (sigma="
                    f"{sigma:g}), so the solution may be far from the exact kernel minimizer: "
                    "raise num_features (e.g. 2048; num_landmarks in qsg_jax.fit), or lower "
                    "sigma.", ApproximationWarning, stacklevel=validation.outside_stacklevel())
    said = flat or _warn_if_degenerate(psi, sigma)   # (all constant: said above)
  if not said:   # the labeled points' spacing (a narrow kernel the landmarks hide)
    warn_if_narrow(x_l, sigma, solver="direct")
  box = None   # Fourier maps: the training box (far rows warn), where every row can be read
  if not isinstance(psi, feature_maps.NystromMap) and (
      x_unlabeled is None or isinstance(x_unlabeled, np.ndarray)):   # (memory maps: one pass)
    box = validation.box_of(x_l, x_unlabeled)
  return DirectFit(model, f_labeled, psi, stats, weights, split_weights, residual, names,
                   box)


def _warn_if_degenerate(psi, sigma):
  """``ApproximationWarning`` when the Gaussian kernel over the map's landmarks is too flat or
  too narrow to rank new rows. Measured on the landmarks, once per fit:

  - flat: its values differ from 1 by less than 10x the Nystrom map's drop tolerance
    (``feature_maps.NYSTROM_RCOND`` times its largest-eigenvalue estimate): directions of the
    data are dropped and the scores tend to a constant (features spanning 1e-3 at sigma = 0.5
    ranked at chance, where DSG's random features and the exact minimizer ranked at 0.96-0.99);
  - narrow: the median landmark's nearest other landmark has kernel value below
    exp(-``NARROW_EXPONENT``): the model is a lookup table of its landmarks, and a row away from
    them scores about 0 (length_scale=1e-3 on [0, 1] features: training AUC 1, new rows all
    tied at exactly 0, AUC 0.5; at exponent 28 new rows ranked at 0.84, at 3 at 0.92, at 0.3 at
    0.98)."""
  z = np.asarray(psi.landmarks, np.float64)
  d2 = _squared_distances(z)
  spread = -np.expm1(-float(sigma) * float(d2.max()))     # 1 - the smallest kernel value
  tol = feature_maps.NYSTROM_RCOND * float(np.exp(-float(sigma) * d2).sum()) / z.shape[0]
  if spread > 0 and spread < 10 * tol:
    warnings.warn(f"the kernel is nearly flat over the data: its values differ from 1 by at "
                  f"most {spread:.2g} (sigma={float(sigma):g}), within 10x of the Nystrom map's "
                  f"drop tolerance {tol:.2g}, so directions of the data are dropped and the "
                  "scores may be near constant (a ranking near chance). Rescale the features "
                  "to [0, 1] (qsg_jax.data.minmax_fit), raise sigma (lower length_scale), or "
                  "use solver='dsg' (random features).", ApproximationWarning,
                  stacklevel=validation.outside_stacklevel())
    return True
  return warn_if_narrow(z, sigma, "landmark", d2=d2)


def _squared_distances(z):
  """[n, n] float64 squared distances between the rows of z [n, d] (clipped at 0)."""
  sq = np.sum(z * z, axis=1)
  return np.maximum(sq[:, None] + sq[None, :] - 2.0 * z @ z.T, 0.0)


def nearest_spacing(points, d2=None) -> float:
  """The median over ``points`` (up to ``NARROW_SAMPLE`` evenly spaced distinct ones) of the
  squared distance to the nearest other one (``d2``: their squared distances, when computed);
  NaN for fewer than 2. sigma times it is the exponent ``warn_if_narrow`` bounds."""
  if d2 is None:
    z = np.unique(np.asarray(points, np.float64), axis=0)   # copies are 0 apart: not neighbours
    if z.shape[0] > NARROW_SAMPLE:
      z = z[np.linspace(0, z.shape[0] - 1, NARROW_SAMPLE).astype(np.int64)]
    d2 = _squared_distances(z)
  if d2.shape[0] < 2:
    return float("nan")
  d2 = d2.copy()
  np.fill_diagonal(d2, np.inf)
  return float(np.median(d2.min(axis=1)))


def warn_if_narrow(points, sigma, what="training point", d2=None, solver=None):
  """``ApproximationWarning`` when the median of ``points`` (landmarks; or up to
  ``NARROW_SAMPLE`` evenly spaced distinct labeled points) has its nearest other one at kernel
  value below exp(-``NARROW_EXPONENT``) (``_warn_if_degenerate``), or, on the labeled points of
  a ``solver`` ("dsg", "direct"), below exp(-``NARROW_LABELED_EXPONENT``); ``d2``: their squared
  distances when already computed.
  Returns whether it warned."""
  spacing = nearest_spacing(points, d2)
  if np.isnan(spacing):
    return False
  exponent = float(sigma) * spacing
  if exponent > NARROW_EXPONENT:
    warnings.warn(f"the kernel is too narrow for the data: the median {what}'s nearest other "
                  f"{what} has kernel value exp(-{exponent:.3g}) (sigma={float(sigma):g}, "
                  f"length scale {np.sqrt(0.5 / float(sigma)):.3g}), so the model is a lookup "
                  "table of its training points: rows away from them score about 0, and their "
                  "ranking rests on vanishing kernel values (often near chance). Lower sigma "
                  "(0.1..10 suits min-max scaled features), i.e. raise length_scale, or let the "
                  "automatic choice pick it.",
                  ApproximationWarning, stacklevel=validation.outside_stacklevel())
    return True
  if solver is None or exponent <= NARROW_LABELED_EXPONENT:
    return False
  name, later = ("DSG", " solver='direct' degrades later.") if solver == "dsg" else ("the data", "")
  warnings.warn(f"the kernel is too narrow for {name}: the median labeled point's nearest other "
                f"one has kernel value {np.exp(-exponent):.2g} (sigma={float(sigma):g}, length "
                f"scale {np.sqrt(0.5 / float(sigma)):.3g}), below exp(-{NARROW_LABELED_EXPONENT:g}"
                "); measured on 13 datasets, rankings past this bound lost part of their edge over "
                "chance, often all of it. Lower sigma (raise length_scale), or let the automatic "
                f"choice pick it.{later}", ApproximationWarning,
                stacklevel=validation.outside_stacklevel())
  return True


@jax.jit
def _expansion_scores(landmarks, coef, sigma, x):
  return jnp.matmul(kernels.gaussian_kernel(x, landmarks, sigma), coef, precision=HIGHEST)


def _fourier_scores(model, x, split):
  block_group = max(g for g in (8, 4, 2, 1) if model.coef.shape[0] % g == 0)
  score = engine.split_scores if split else engine.model_scores
  with jax.enable_x64(False):   # the frequencies the fit drew (``feature_maps.fourier_map``)
    return numerics.in_row_buckets(
        lambda part: score(model, part, block_group=block_group), x, PREDICT_CHUNK)


def _nystrom_scores(model, x, coef, chunk_rows=moments_lib.CHUNK_ROWS):
  return numerics.in_row_buckets(
      lambda part: _expansion_scores(model.landmarks, coef, model.sigma, part),
      np.asarray(x, np.float32), chunk_rows)


def scores(model: Model, x: np.ndarray, split: bool = False) -> np.ndarray:
  """Unchecked [n] f(x), or [n, k-1] f(x) + g_j(x) with ``split``, float32 (x: float32 [n, d])."""
  if isinstance(model, NystromModel):
    coef = model.coef if not split else model.coef[:, None] + model.split_coef
    return _nystrom_scores(model, x, coef)
  return _fourier_scores(model, x, split)


def _checked_points(model, x):
  """(model, x as float32 [n, d]) of a ``DirectFit`` or a model, x checked against it.

  A ``NystromModel`` or a ``DirectFit`` knows d; a bare Fourier ``engine.Model`` does not (its
  frequencies are drawn for whatever d x has), so only the ``DirectFit`` of a Fourier solution
  checks x's width. Fourier phases are checked against ``numerics.MAX_PHASE``.
  """
  dim, names, box = None, None, None
  if isinstance(model, DirectFit):
    dim, names, box = (feature_maps.input_dim(model.feature_map), model.feature_names,
                       model.training_box)
    model = model.model
  if isinstance(model, NystromModel):
    x = validation.check_points("x", x, dim=model.landmarks.shape[1], allow_empty=True,
                                kernel=True, columns=names)
    validation.warn_if_out_of_reach(model.landmarks, model.sigma, x, of="the landmarks")
    return model, x
  if not isinstance(model, engine.Model):
    hint = (" A FitResult of qsg_jax.fit scores with qsg_jax.decision_function(result, x) (or "
            "pass result.model here)." if type(model).__name__ == "FitResult" else "")
    raise TypeError(f"model must be a direct fit (its DirectFit, or the model: NystromModel or "
                    f"engine.Model); received {type(model).__name__:.60}.{hint}")
  x = validation.check_points("x", x, dim=dim, allow_empty=True, kernel=True, columns=names)
  validation.check_phase_range("x", x, float(model.sigma))
  if box is not None:
    validation.warn_if_out_of_reach(box, model.sigma, x, fourier=True)
  return model, x


def decision_function(model: Model, x) -> np.ndarray:
  """[n] float32 ranking scores f(x) of a direct solution, x checked.

  Args:
    model: the ``DirectFit`` of ``fit`` (checks x's number of features for either map), or its
      model (``NystromModel``: checked too; a Fourier ``engine.Model`` cannot check d).
    x: [n, d] points preprocessed like the training data.
  """
  model, x = _checked_points(model, x)
  return scores(model, x)


def split_scores(model: Model, x) -> np.ndarray:
  """[n, k-1] per-split scores f(x) + g_j(x) of a solution with corrections, x checked (model:
  as ``decision_function``)."""
  model, x = _checked_points(model, x)
  if getattr(model, "split_coef", None) is None:
    raise ValueError("the model has no per-split corrections (fit with split_lam=None): its "
                     "per-split scores are f itself, decision_function.")
  return scores(model, x, split=True)
