"""Checks of user data at the API boundary, before anything is jitted."""

from typing import Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from qsg_jax import features


def check_points(name: str, x: ArrayLike, dim: Optional[int] = None,
                 allow_empty: bool = False) -> np.ndarray:
  """Returns ``x`` as a float32 [n, d] array after checking rank, size and finiteness.

  Args:
    name: how the caller calls this array (used in messages).
    x: array-like.
    dim: expected number of features d, or None.
    allow_empty: whether n = 0 is acceptable.

  Raises:
    ValueError: wrong rank, wrong d, empty, or non-finite entries (with their count and first row).
  """
  arr = np.asarray(x)
  if arr.ndim != 2:
    raise ValueError(f"{name} must have shape [n, d]; received shape {arr.shape}. "
                     "Reshape a single point to [1, d] and a single feature to [n, 1].")
  if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
    raise TypeError(f"{name} must be real numbers; received dtype {arr.dtype}. Encode "
                    "categorical columns numerically (e.g. one-hot) first.")
  if dim is not None and arr.shape[1] != dim:
    raise ValueError(f"{name} has {arr.shape[1]} features but the model expects {dim}. Pass "
                     "points preprocessed exactly like the training data (same columns).")
  if arr.shape[0] == 0 and not allow_empty:
    raise ValueError(f"{name} is empty (shape {arr.shape}); pass at least one point.")
  bad = ~np.isfinite(arr)
  if bad.any():
    rows = np.nonzero(bad.any(axis=1))[0]
    raise ValueError(
        f"{name} contains {int(bad.sum())} NaN or infinite values in {rows.size} rows "
        f"(first at row {int(rows[0])}). Impute or drop those rows before fitting.")
  return arr.astype(np.float32)


def check_labels(y: ArrayLike, num_points: int,
                 num_classes: Optional[int] = None) -> Tuple[np.ndarray, int]:
  """Returns (labels as int32 [n] in 0..k-1, k) after checking values and class coverage.

  Args:
    y: array-like of integer class labels 0..k-1.
    num_points: n, the number of labeled points they belong to.
    num_classes: k, or None to infer it as max(y) + 1.

  Raises:
    ValueError: wrong shape, non-integer or out-of-range labels, or a class with no labeled point.
  """
  arr = np.asarray(y)
  if arr.ndim != 1 or arr.shape[0] != num_points:
    raise ValueError(f"labels must have shape [{num_points}] (one per labeled point); received "
                     f"shape {arr.shape}.")
  if arr.size and not np.all(np.equal(np.mod(arr, 1), 0)):
    raise ValueError("labels must be integers 0..k-1; received non-integer values. Map ordered "
                     "classes to 0..k-1 (e.g. with np.unique(y, return_inverse=True)).")
  arr = arr.astype(np.int64)
  k = int(arr.max()) + 1 if num_classes is None else int(num_classes)
  if k < 2:
    raise ValueError(f"need at least 2 classes; received num_classes={k}.")
  if arr.min() < 0 or arr.max() >= k:
    raise ValueError(f"labels must lie in 0..{k - 1}; received values in "
                     f"{int(arr.min())}..{int(arr.max())}.")
  counts = np.bincount(arr, minlength=k)
  missing = np.nonzero(counts == 0)[0]
  if missing.size:
    raise ValueError(
        f"class(es) {missing.tolist()} have no labeled point (labeled counts per class: "
        f"{counts.tolist()}). Every class needs labeled examples: label more points or use "
        "qsg_jax.data.split_semisupervised, which keeps every class among the labeled.")
  return arr.astype(np.int32), k


def check_gamma(gamma: ArrayLike, num_classes: int) -> np.ndarray:
  """Broadcasts gamma to [k-1] and checks it lies in [0, 1]."""
  arr = np.broadcast_to(np.asarray(gamma, np.float32), (num_classes - 1,)).copy() \
      if np.ndim(gamma) == 0 else np.asarray(gamma, np.float32)
  if arr.shape != (num_classes - 1,):
    raise ValueError(f"gamma must be a scalar or have shape [k-1] = [{num_classes - 1}]; "
                     f"received shape {arr.shape}.")
  if np.any(arr < 0) or np.any(arr > 1) or not np.all(np.isfinite(arr)):
    raise ValueError(f"gamma must lie in [0, 1]; received {arr.tolist()}.")
  return arr


def check_positive(name: str, value: float, allow_zero: bool = False) -> float:
  """Returns float(value) after checking it is finite and positive (or >= 0)."""
  v = float(value)
  if not np.isfinite(v) or v < 0 or (v == 0 and not allow_zero):
    bound = ">= 0" if allow_zero else "> 0"
    raise ValueError(f"{name} must be finite and {bound}; received {value!r}.")
  return v


def check_phase_range(name: str, x: ArrayLike, sigma: float | jax.Array) -> None:
  """Checks that random Fourier phases omega . x of ``x`` stay within ``features.MAX_PHASE``.

  omega ~ N(0, 2 sigma I_d), so |omega . x| <= ||x|| sqrt(2 sigma) (sqrt(d) + 8) except with
  probability below 1e-14 per frequency (chi tail). Past 2^19 a float32 phase keeps less than
  1/16 rad of precision, so the features are noise whatever computes the cosine.

  Raises:
    ValueError: the bound exceeds ``features.MAX_PHASE``, with what to change.
  """
  arr = np.asarray(x, np.float64)
  if arr.size == 0:
    return
  norm = float(np.sqrt(np.max(np.sum(arr * arr, axis=1))))
  bound = norm * np.sqrt(2.0 * sigma) * (np.sqrt(arr.shape[1]) + 8.0)
  if bound > features.MAX_PHASE:
    raise ValueError(
        f"{name} has a point of norm {norm:.3g}: with sigma={sigma:g} random Fourier phases can "
        f"reach {bound:.3g}, beyond {features.MAX_PHASE:.0f} where float32 phases lose their "
        "precision. Rescale the features (e.g. qsg_jax.data.minmax_fit on the training data) "
        "or lower sigma.")


def check_key(key: "int | jax.Array", name: str = "key") -> jax.Array:
  """A typed PRNG key from an int seed or a key (new-style or raw uint32 [2]), else a clear error.

  Integer seeds are accepted only here, at the API boundary (STYLE.md, habit 4).
  """
  if isinstance(key, (bool, np.bool_)) or key is None:
    raise TypeError(f"{name} must be an int seed or a jax.random.key; received {key!r}. "
                    f"Pass e.g. {name}=0.")
  if isinstance(key, (int, np.integer)):
    if not 0 <= int(key) < 2**63:
      raise ValueError(f"{name}={key} is out of range; use a seed in 0..2**63-1.")
    return jax.random.key(int(key))
  if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
    if key.shape:
      raise ValueError(f"{name} must be a single key; received a batch of shape {key.shape}. "
                       "Vmap over keys with the pure API (qsg_jax.init / qsg_jax.train).")
    return key
  arr = np.asarray(key)
  if arr.shape == (2,) and arr.dtype == np.uint32:
    return jax.random.wrap_key_data(jnp.asarray(arr))
  raise TypeError(f"{name} must be an int seed or a jax.random.key; received {type(key).__name__}"
                  f" {arr.shape if arr.ndim else key!r}. Pass e.g. {name}=0.")


def check_count(name: str, value: object, minimum: int = 1,
                allow_none: bool = False) -> Optional[int]:
  """``value`` as a Python int >= ``minimum`` (None passes when ``allow_none``), else an error."""
  if value is None and allow_none:
    return None
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
      value = int(value)
    else:
      raise TypeError(f"{name} must be an integer >= {minimum}; received {value!r}.")
  if int(value) < minimum:
    raise ValueError(f"{name} must be >= {minimum}; received {value}.")
  return int(value)
