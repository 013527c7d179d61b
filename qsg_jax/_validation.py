"""Checks of user data at the API boundary, before anything is jitted."""

import collections.abc
import contextlib
import numbers
import os
import re
import sys
import warnings
from typing import Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from qsg_jax import errors
from qsg_jax import numerics


# Longest excerpt of user values quoted in a message (messages stay a few hundred characters).
_MAX_QUOTED = 8
# Features of min-max scaled data lie in [0, 1] (test points a little outside); beyond this the
# kernel width sigma the defaults assume no longer fits the data.
UNSCALED_LIMIT = 10.0
_FLOAT32_MAX = float(np.finfo(np.float32).max)
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def summarize(values, limit=_MAX_QUOTED):
  """A short text of ``values``: at most ``limit`` of them, then how many more (for messages)."""
  values = list(values)
  text = ", ".join(str(v) for v in values[:limit])
  return text + (f", ... ({len(values) - limit} more)" if len(values) > limit else "")


def is_traced(x: ArrayLike):
  """Whether ``x`` is a JAX tracer (inside jit/vmap/grad): its values cannot be checked."""
  return isinstance(x, jax.core.Tracer)


def refuse_unreadable(name: str, x) -> None:
  """Refuses containers that ``np.asarray`` reads wrongly: a scipy sparse matrix / array
  (``TypeError``, saying how to densify it) and a NumPy masked array with masked entries
  (``ValueError``: the values under the mask would be read as data)."""
  if type(x).__module__.startswith("scipy.sparse"):
    shape = getattr(x, "shape", None)
    raise TypeError(
        f"{name} is a scipy sparse matrix of shape {shape}; qsg_jax needs dense arrays (random "
        f"Fourier features of sparse data are dense anyway). Pass {name}.toarray() (needs "
        f"4 n d bytes as float32).")
  refuse_masked(name, x)


def refuse_masked(name: str, x) -> None:
  """``ValueError`` for a NumPy masked array with masked entries: NumPy reads the values under
  the mask as data."""
  if isinstance(x, np.ma.MaskedArray) and np.ma.getmaskarray(x).any():
    mask = np.ma.getmaskarray(x)
    first = ", ".join(str(int(i)) for i in np.argwhere(mask)[0])
    raise ValueError(
        f"{name} is a masked array with {int(mask.sum())} masked entries (the first at "
        f"[{first}]): NumPy would read the hidden values as data. Fill or drop them first "
        f"({name}.filled(value)); unknown labels: y = np.where(y.mask, -1, y.data.astype(int)) "
        "marks them unlabeled.")


def with_auto_axes(x):
  """``x``, or where it is laid out on a mesh with Explicit axes (``jax.make_mesh``'s default in
  recent JAX), the same layout on the same devices with Auto axes (no copy): the training's row
  gathers and slices fail on Explicit axes."""
  concrete = isinstance(x, jax.Array) and not isinstance(x, jax.core.Tracer)
  sharding = getattr(x, "sharding", None) if concrete else None
  mesh = getattr(sharding, "mesh", None)
  axis_type = getattr(jax.sharding, "AxisType", None)
  if axis_type is None or axis_type.Explicit not in tuple(getattr(mesh, "axis_types", ()) or ()):
    return x
  auto = jax.sharding.Mesh(mesh.devices, mesh.axis_names,
                           axis_types=(axis_type.Auto,) * len(mesh.axis_names))
  return jax.device_put(x, jax.sharding.NamedSharding(auto, sharding.spec))


def is_extra_float(dtype) -> bool:
  """Whether ``dtype`` is one of JAX's floats NumPy does not count as numbers (bfloat16, float8:
  ml_dtypes' kind "V"); they are read as float32."""
  return np.dtype(dtype).kind == "V" and jnp.issubdtype(dtype, jnp.floating)


def as_numbers(x, name="an input"):
  """``x`` as a NumPy array; pandas nullable numbers (Int64, Float64, boolean, with pd.NA) become
  float64 with NaN for NA, where NumPy would make an object array of them; JAX's bfloat16 and
  float8 arrays become float32 (as float16 is computed). A masked array with masked entries is
  refused (``refuse_masked``, naming ``name``)."""
  refuse_masked(name, x)
  arr = np.asarray(x)
  if is_extra_float(arr.dtype):
    return arr.astype(np.float32)
  if arr.dtype == object and hasattr(x, "to_numpy"):
    try:
      return x.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):   # text or categories: the caller's message says so
      pass
  return arr


def column_names(x) -> Optional[Tuple[str, ...]]:
  """The column names of a data frame ``x`` (pandas, polars) when every one is a string, else
  None (arrays; a frame with integer names): scikit-learn's rule for ``feature_names_in_``."""
  columns = getattr(x, "columns", None)
  if columns is None:
    return None
  names = tuple(columns)
  return names if names and all(isinstance(n, str) for n in names) else None


def check_columns(name: str, x, expected: Optional[Tuple[str, ...]],
                  fitted: str = "the training data") -> None:
  """``ValueError`` when ``x`` is a data frame whose column names differ from ``expected`` (the
  names of ``fitted``), in order or in kind: its columns would be read by position, so a
  reordered frame would be scored silently wrong. Nothing to compare (``expected`` None, or
  ``x`` without string names, e.g. an array): no check."""
  names = column_names(x)
  if expected is None or names is None or names == tuple(expected):
    return
  expected = tuple(expected)
  if sorted(names) == sorted(expected):
    first = next(i for i, (a, b) in enumerate(zip(names, expected)) if a != b)
    raise ValueError(f"{name} has the columns of {fitted} in another order (column {first} is "
                     f"{names[first]!r}, was {expected[first]!r}); values are read by position. "
                     f"Reorder them: {name if name.isidentifier() else 'chunk'}"
                     f"[{list(expected)!r:.200}].")
  missing = [n for n in expected if n not in names]
  unexpected = [n for n in names if n not in expected]
  raise ValueError(f"{name}'s columns differ from those of {fitted}: missing "
                   f"[{summarize(missing)}], unexpected [{summarize(unexpected)}]. Pass the "
                   "columns it was fitted on, in the same order.")


def _row_col(bad):
  """(row, column) of the first True of a 2-D bool array."""
  flat = int(np.argmax(bad.reshape(-1)))
  return divmod(flat, bad.shape[1])


def check_points(name: str, x: ArrayLike, dim: Optional[int] = None,
                 allow_empty: bool = False, kernel: bool = False,
                 dtype=np.float32, columns: Optional[Tuple[str, ...]] = None,
                 training: bool = False) -> np.ndarray:
  """Returns ``x`` as a float32 (or ``dtype``) [n, d] array after checking type, rank, size and
  finiteness.

  Args:
    name: how the caller calls this array (used in messages).
    x: array-like (NumPy, JAX, pandas; not scipy sparse).
    dim: expected number of features d, or None.
    allow_empty: whether n = 0 is acceptable.
    kernel: also refuse points whose squared norms overflow float32 (``check_kernel_scale``):
      a Gaussian kernel of them would be NaN.
    dtype: float32 (default) or float64, the dtype returned and the range checked (values
      beyond float32 are refused only for float32; ``kernel`` checks norms in ``dtype``).
    columns: the column names the model was fitted on (``column_names`` of its training frame),
      or None; a data frame ``x`` must have them, in order (``check_columns``).
    training: training data: also warn when float32 loses a column's variation
      (``warn_if_float32_merges``; not for points scored, whose batch may be near-identical).

  Raises:
    TypeError: scipy sparse input, or non-numeric entries.
    ValueError: wrong rank, wrong d, empty, non-finite entries (count, first row and column, in
      the caller's row numbering), values that overflow float32 (or, with ``kernel``, whose
      squares do), or a data frame's columns other than ``columns``.
  """
  refuse_unreadable(name, x)
  check_columns(name, x, columns)
  refuse_dates(x, name)   # NumPy would read them as nanoseconds
  if isinstance(x, collections.abc.Iterator):   # NumPy would make a 0-d object array of it
    raise TypeError(f"{name} is an iterator ({type(x).__name__}); pass an array [n, d]. Chunks "
                    "read one at a time: qsg_jax.direct.fit or fit(..., solver='direct').")
  try:
    arr = as_numbers(x, name)
  except ValueError:   # ragged nested lists
    raise ValueError(f"{name} must be a rectangular [n, d] array; its rows have different "
                     "lengths.") from None
  if arr.ndim != 2:
    raise ValueError(f"{name} must have shape [n, d]; received shape {arr.shape}. "
                     "Reshape a single point to [1, d] and a single feature to [n, 1].")
  if arr.dtype == bool:
    arr = arr.astype(np.float32)
  if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
    raise TypeError(f"{name} must be real numbers; received dtype {arr.dtype}. Encode text or "
                    "categorical columns numerically (e.g. one-hot) first.")
  if dim is not None and arr.shape[1] != dim:
    raise ValueError(f"{name} has {arr.shape[1]} features but the model expects {dim}. Pass "
                     "points preprocessed exactly like the training data (same columns).")
  if arr.shape[1] == 0:
    raise ValueError(f"{name} has 0 features (shape {arr.shape}); a kernel model needs at least "
                     "one column. Check the column selection that made it.")
  if arr.shape[0] == 0 and not allow_empty:
    raise ValueError(f"{name} is empty (shape {arr.shape}); pass at least one point.")
  bad = ~np.isfinite(arr)
  if bad.any():
    rows = np.nonzero(bad.any(axis=1))[0]
    row, col = _row_col(bad)
    raise ValueError(
        f"{name} contains {int(bad.sum())} NaN or infinite values in {rows.size} rows (first at "
        f"row {row}), e.g. column {col} = {arr[row, col]}. Impute or drop those rows before "
        "fitting.")
  if np.dtype(dtype) == np.float32:
    refuse_beyond_float32(name, arr)
    if training:
      warn_if_float32_merges(name, arr)
  if kernel:
    check_kernel_scale(name, arr, dtype=dtype)
  return arr.astype(dtype)


def refuse_beyond_float32(name: str, arr: np.ndarray, where=lambda row: row,
                          fix: str = "Rescale the features first (qsg_jax.data.minmax_fit / "
                          "minmax_apply)"):
  """``ValueError`` if a wider-than-float32 ``arr`` [n, d] has values float32 cannot hold (they
  would become inf); ``where`` maps a row of ``arr`` to the row number the user knows, ``fix``
  is the message's advice."""
  if arr.size and arr.dtype.itemsize > 4:
    big = np.abs(arr) > _FLOAT32_MAX
    if big.any():
      row, col = _row_col(big)
      raise ValueError(
          f"{name} has {int(big.sum())} values beyond the float32 range +-3.4e38 (first at row "
          f"{where(row)}, column {col}: {arr[row, col]:.3g}); qsg_jax computes in float32, where "
          f"they would become inf. {fix}.")


# Fewer distinct float32 values than this across a column's range: its variation is lost.
FLOAT32_LEVELS = 256


def warn_if_float32_merges(name: str, arr: np.ndarray) -> None:
  """``UnscaledFeaturesWarning`` when a column of a wider-than-float32 ``arr`` [n, d] varies so
  little against its magnitude (1 + 1e-9 z; seconds since 1970 over one day) that float32, in
  which qsg_jax computes, keeps fewer than ``FLOAT32_LEVELS`` values across its range: the
  column becomes (nearly) constant, and what ranked by it is lost without a word."""
  if arr.size == 0 or arr.dtype.itemsize <= 4 or arr.dtype.kind not in "fiu":
    return
  lo, hi = arr.min(axis=0).astype(np.float64), arr.max(axis=0).astype(np.float64)
  span, magnitude = hi - lo, np.maximum(np.abs(lo), np.abs(hi))
  with np.errstate(divide="ignore", invalid="ignore"):
    levels = np.where(span > 0, span / (magnitude * np.finfo(np.float32).eps), np.inf)
  if np.any(levels < FLOAT32_LEVELS):
    col = int(np.argmin(levels))
    warnings.warn(
        f"{name} column {col} varies by {span[col]:.3g} around {magnitude[col]:.3g}: float32, in "
        f"which qsg_jax computes, keeps about {max(levels[col], 1):.0f} distinct values of it, "
        "so its variation is lost. Subtract its minimum or min-max scale it in float64 first "
        "(qsg_jax.data.minmax_fit / minmax_apply).", errors.UnscaledFeaturesWarning,
        stacklevel=outside_stacklevel())


# A row whose kernel value to every training point is below float32's resolution of
# k(x, x) = 1 (sigma times its squared distance to their bounding box above this) is out of the
# model's reach: a kernel expansion scores about 0 there, random features noise.
REACH_EXPONENT = float(-np.log(np.finfo(np.float32).eps))
REACH_CHUNK = 65536   # rows measured at a time (bounded memory for any number of rows)


def box_of(*parts) -> np.ndarray:
  """[2, d] float32 column minima and maxima of the rows of the [n_i, d] arrays ``parts``."""
  parts = [np.asarray(p) for p in parts if p is not None and np.asarray(p).size]
  return np.stack([np.min([p.min(axis=0) for p in parts], axis=0),
                   np.max([p.max(axis=0) for p in parts], axis=0)]).astype(np.float32)


def warn_if_out_of_reach(points, sigma, x, name="x", units=None, fourier=False,
                         of="the training data"):
  """``UnscaledFeaturesWarning`` when rows of ``x`` lie so far outside the box of ``points``
  (training points, landmarks, or the two corners of the training box) that the Gaussian kernel
  exp(-sigma ||x - z||^2) gives every training point a weight below float32's resolution
  (``REACH_EXPONENT``): a kernel expansion scores them all about f = 0 whatever the row (their
  order is rounding); random Fourier features (``fourier``) score them with their approximation
  error (noise, not a ranking).

  The distance to the box bounds the distance to every point from below, so a warned row is out
  of reach for certain (O(n d)); rows inside the box but between distant clusters are not looked
  at. ``sigma``: the kernel parameter (the smallest, i.e. widest kernel, of several). ``units``:
  (offset [d], scale [d]) giving the message's values as offset + value * scale (an estimator's
  input map, so that they read in the user's units). ``of``: what ``points`` are, as the
  message names them ("the landmarks").
  """
  x, z = np.asarray(x), np.asarray(points, np.float64)
  if x.size == 0 or z.size == 0:
    return
  low, high = z.min(axis=0), z.max(axis=0)

  def gaps(rows):   # [r, d] float64 distances to the box, per column
    rows = np.asarray(rows, np.float64)
    return np.maximum(np.maximum(low - rows, rows - high), 0.0)

  sigma = float(np.min(sigma))
  far = np.concatenate([sigma * np.sum(np.square(gaps(x[i:i + REACH_CHUNK])), 1)
                        for i in range(0, x.shape[0], REACH_CHUNK)]) > REACH_EXPONENT
  if far.any():
    row = int(np.argmax(far))
    gap = gaps(x[row])
    col = int(np.argmax(gap))
    offset, scale = (0.0, 1.0) if units is None else (units[0][col], units[1][col])
    shown = [offset + float(v) * scale for v in (x[row, col], low[col], high[col])]
    tiny = 1e-6 * max(abs(shown[1]), abs(shown[2]), abs(shown[2] - shown[1]))   # the span's:
    shown = [0.0 if abs(v) < tiny else v for v in shown]   # float32 round trips of 0 show as 0
    scores = ("random Fourier features score them with their approximation error (noise, not a "
              "ranking)" if fourier
              else "their scores are all about f = 0 whatever the row (their order is rounding, "
              "not a ranking)")
    warnings.warn(f"{int(far.sum())} of {x.shape[0]} rows of {name} lie beyond the kernel's reach "
                  f"of {of} (first: row {row}, whose column {col} is "
                  f"{shown[0]:.4g} where {of} span [{min(shown[1:]):.4g}, "
                  f"{max(shown[1:]):.4g}]): the kernel gives them weight below "
                  f"exp(-{REACH_EXPONENT:.3g}), so {scores}. Pass rows preprocessed like the "
                  "training data (the same units and scaling), or widen the kernel (lower sigma, "
                  "raise length_scale).",
                  errors.UnscaledFeaturesWarning, stacklevel=outside_stacklevel())


def refuse_one_point(name: str, x: np.ndarray) -> None:
  """``ValueError`` when every row of ``x`` [n, d] (n >= 2) is the same point: labeled rows that
  do not differ teach no ranking (DSG returned rounding noise, the direct solver a tie)."""
  if x.shape[0] >= 2 and np.all(x == x[:1]):
    raise ValueError(f"{name}: every row is the same point ([{summarize(x[0].tolist(), 4)}]): "
                     "no ranking can be learned from labeled rows that do not differ. Check the "
                     "rows and columns selected for training.")


def check_chunk(name: str, chunk, dim: int, first_row: int = 0, rows=None,
                kernel: bool = False) -> np.ndarray:
  """One chunk of a source read in pieces (an iterator of chunks, rows of a memory map) as a
  float32 [n_i, d] array, with ``check_points``' checks and rows numbered in the whole source.

  Args:
    name: how the caller calls the whole source (messages).
    chunk: array-like [n_i, d] (NumPy, JAX, lists; not scipy sparse).
    dim: d.
    first_row: the source's row number of the chunk's row 0.
    rows: optional [n_i] source row numbers of the chunk's rows (a sample), instead.
    kernel: as ``check_points``.

  Raises:
    TypeError: sparse or non-numeric chunks (strings, objects, complex).
    ValueError: a chunk that is not [n_i, d], or NaN / inf / values beyond float32, naming the
      source's row.
  """
  refuse_unreadable(name, chunk)
  refuse_dates(chunk, name)   # NumPy would read them as nanoseconds
  where = lambda i: int(first_row + i if rows is None else rows[i])
  try:
    arr = as_numbers(chunk, name)
  except ValueError:   # ragged nested lists
    raise ValueError(f"every chunk of {name} must be a rectangular [n_i, {dim}] array; the "
                     f"chunk at row {where(0)} has rows of different lengths.") from None
  if arr.ndim != 2 or arr.shape[1] != dim:
    raise ValueError(f"every chunk of {name} must be [n_i, {dim}]; received a chunk of shape "
                     f"{arr.shape} at row {first_row if rows is None else 'of a sample'}.")
  if arr.dtype == bool:
    arr = arr.astype(np.float32)
  if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
    raise TypeError(f"{name} must be real numbers; received a chunk of dtype {arr.dtype} at row "
                    f"{where(0)}. Encode text or categorical columns numerically first.")
  bad = ~np.isfinite(arr)
  if bad.any():
    row, col = _row_col(bad)
    raise ValueError(f"{name} has NaN or infinite values (first at row {where(row)}), e.g. column "
                     f"{col} = {arr[row, col]}; impute or drop those rows first.")
  refuse_beyond_float32(name, arr, where)
  if kernel:
    check_kernel_scale(name, arr, where=where)
  return arr.astype(np.float32, copy=False)


def warn_if_unscaled(name: str, x: ArrayLike, limit=UNSCALED_LIMIT):
  """Warns (``UnscaledFeaturesWarning``) when features of ``x`` lie far outside [0, 1].

  The kernel parameter sigma, its defaults and the papers' grids assume min-max scaled features;
  unscaled features (e.g. in the thousands) train without error but rank poorly.
  """
  arr = np.asarray(x)
  if arr.size == 0:
    return
  top = float(np.max(np.abs(arr)))
  if top > limit:
    col = int(np.argmax(np.max(np.abs(arr), axis=0)))
    warnings.warn(
        f"{name} has values up to |x| = {top:.3g} (column {col}), far outside the [0, 1] range "
        "of min-max scaled features the method and its default sigma assume; the result may "
        "rank poorly. Scale with lo, scale = qsg_jax.data.minmax_fit(x_train) and "
        "qsg_jax.data.minmax_apply(x, lo, scale), or choose sigma by cross-validation.",
        errors.UnscaledFeaturesWarning, stacklevel=outside_stacklevel())


# A column of the training rows spanning less than this is far below the [0, 1] of min-max
# scaled features (where every column spans 1): the kernel at the usual sigma barely sees it.
NARROW_SPAN = 1e-2


def warn_if_squeezed(x_labeled: np.ndarray, x_unlabeled: Optional[np.ndarray] = None) -> None:
  """``UnscaledFeaturesWarning`` when a non-constant column of the training rows (the labeled and
  the in-memory unlabeled ones) spans less than ``NARROW_SPAN``: a column left in other units
  than the rest (one in [0, 0.01] beside [0, 1] ones ranked at 0.55 where scaled it gave 0.98)."""
  parts = [a for a in (x_labeled, x_unlabeled) if a is not None and a.size]
  if not parts:
    return
  low = np.min([a.min(axis=0) for a in parts], axis=0).astype(np.float64)
  high = np.max([a.max(axis=0) for a in parts], axis=0).astype(np.float64)
  span = high - low
  squeezed = np.flatnonzero((span > 0) & (span < NARROW_SPAN))
  if squeezed.size:
    c = int(squeezed[0])
    warnings.warn(
        f"the training rows' column(s) {summarize(squeezed.tolist(), 6)} span less than "
        f"{NARROW_SPAN:g} (column {c}: [{low[c]:.3g}, {high[c]:.3g}]), far below the [0, 1] of "
        "min-max scaled features: the kernel barely sees them. Scale with lo, scale = "
        "qsg_jax.data.minmax_fit(x_train) and qsg_jax.data.minmax_apply(x, lo, scale).",
        errors.UnscaledFeaturesWarning, stacklevel=outside_stacklevel())


def check_labels(y: ArrayLike, num_points: int,
                 num_classes: Optional[int] = None) -> Tuple[np.ndarray, int]:
  """Returns (labels as int32 [n] in 0..k-1, k) after checking values and class coverage.

  Binary problems use the same convention: 0 = negative, 1 = positive.

  Args:
    y: array-like of integer class labels 0..k-1.
    num_points: n, the number of labeled points they belong to.
    num_classes: k, or None to infer it as max(y) + 1.

  Raises:
    TypeError: non-numeric labels (strings, objects) or scipy sparse.
    ValueError: wrong shape, NaN, non-integer or out-of-range labels (1..k, -1/+1 and the
      unlabeled marker -1 are named), or a class with no labeled point.
  """
  arr = whole_labels(y, "labels", "integers 0..k-1", fix="Map ordered classes to 0..k-1 (e.g. "
                     "np.unique(y, return_inverse=True)[1] when their sorted order is the class "
                     "order).", non_finite_fix="Every labeled point needs a class 0..k-1: drop "
                     "unlabeled rows from the labeled data (pass them as x_unlabeled).")
  if arr.ndim != 1 or arr.shape[0] != num_points:
    raise ValueError(f"labels must have shape [{num_points}] (one per labeled point); received "
                     f"shape {arr.shape}.")
  k = None if num_classes is None else check_count("num_classes", num_classes, minimum=2)
  if arr.size == 0:
    raise ValueError("labels are empty; pass at least one labeled point per class.")
  lo, hi = float(arr.min()), float(arr.max())
  k_shown = "k-1" if k is None else k - 1
  if lo < 0:
    row = int(np.argmin(arr))
    if lo == -1 and hi <= 1 and set(np.unique(arr).tolist()) == {-1, 1}:
      hint = ("binary labels are 0 = negative, 1 = positive: map -1/+1 with "
              "(y > 0).astype(int).")
    elif lo == -1:
      hint = ("-1 marks unlabeled points only in the scikit-learn style estimators: pass "
              "unlabeled points as x_unlabeled, not among the labeled ones.")
    else:
      hint = "map classes to 0..k-1."
    raise ValueError(f"labels must be 0..{k_shown} (0..k-1 with k classes); received "
                     f"{arr[row]:g} at row {row} (values {lo:g}..{hi:g}): {hint}")
  if lo >= 1 and (k is None or hi == k):
    raise ValueError(f"labels must be 0..k-1; got {lo:g}..{hi:g} (no class 0) -- subtract 1 "
                     "(y - 1) if your classes are numbered 1..k.")
  if k is None:
    if hi + 1 > max(num_points, 2):
      raise ValueError(f"labels go up to {hi:g}, so k = {hi + 1:g} classes would be inferred, but "
                       f"there are only {num_points} labeled points and every class 0..k-1 needs "
                       "one. Map classes to 0..k-1 (np.unique(y, return_inverse=True)).")
    k = int(hi) + 1
    if k < 2:
      raise ValueError("need at least 2 classes; every label is 0. Binary labels are 0 = "
                       "negative, 1 = positive, and both must be among the labeled points.")
  if hi >= k:
    row = int(np.argmax(arr))
    raise ValueError(f"labels must lie in 0..{k - 1} (num_classes={k}); received {arr[row]:g} at "
                     f"row {row} (values {lo:g}..{hi:g}).")
  arr = arr.astype(np.int64)
  counts = np.bincount(arr, minlength=k)
  missing = np.nonzero(counts == 0)[0]
  if missing.size:
    raise ValueError(
        f"class(es) [{summarize(missing.tolist())}] have no labeled point (labeled counts per "
        f"class: [{summarize(counts.tolist())}]). Every class needs labeled examples: label more "
        "points or use qsg_jax.data.split_semisupervised, which keeps every class among the "
        "labeled.")
  return arr.astype(np.int32), k


def whole_labels(labels: ArrayLike, name: str, want: str, fix: str = "",
                 non_finite_fix: str = "") -> np.ndarray:
  """Concrete ``labels`` as int64 (bool as 0/1) after refusing sparse input, non-numbers, NaN /
  inf and fractions: "{name} must be {want}; received ... {fix}"."""
  refuse_unreadable(name, labels)
  arr = as_numbers(labels, name)
  if arr.dtype == bool:
    return arr.astype(np.int64)
  if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
    raise TypeError(f"{name} must be {want}; received dtype {arr.dtype}. {fix}".rstrip())
  check_whole_numbers(arr.reshape(-1), name, want, non_finite_fix or fix, fix)
  return arr.astype(np.int64)


def fractional(arr: np.ndarray) -> np.ndarray:
  """Where numeric ``arr`` holds finite values that are not whole numbers (NaN and inf: False)."""
  with np.errstate(invalid="ignore"):
    return np.isfinite(arr) & (np.mod(arr, 1) != 0)


def check_whole_numbers(arr: np.ndarray, name: str, want: str, non_finite_fix: str,
                        fraction_fix: str) -> None:
  """Raises ``ValueError`` (count / first row, and the fix) unless numeric ``arr`` holds finite
  whole numbers only."""
  bad = ~np.isfinite(arr)
  if bad.any():
    raise ValueError(f"{name} contain {int(bad.sum())} NaN or infinite values (first at row "
                     f"{int(np.argmax(bad))}). {non_finite_fix}")
  parts = fractional(arr)
  if parts.any():
    row = int(np.argmax(parts))
    raise ValueError(f"{name} must be {want}; received {arr[row].item()!r} at row {row}. "
                     f"{fraction_fix}".rstrip())


def refuse_fractional_labels(labels, marker=None, binary=False) -> None:
  """``ValueError`` where float class labels hold fractions (0.0, 0.5, 1.0), which scikit-learn
  reads as a continuous target ("Unknown label type: continuous", from deep inside it); whole
  floats (1.0, 2.0) are classes as they are. ``marker``: that of the unlabeled rows when some
  are marked (the fix maps the labeled rows only); ``binary``: two classes (the cut shown)."""
  arr = np.asarray(labels)
  if arr.dtype.kind != "f":
    return
  bad = fractional(arr)
  if not bad.any():
    return
  first = list(dict.fromkeys(arr[bad].ravel().tolist()))[:2]
  shown = f"{first[0]:.4g}{', ...' if len(first) > 1 else ''}"
  # a list: y != -1 is one bool, and y[m] = ... sets y[1]; an array compares per row
  lead, rows, also = ("Map", "y", " (or an ordered Categorical)") if marker is None else (
      f"With y = np.asarray(y{', dtype=object' if isinstance(marker, str) else ''}); m = y != "
      f"{marker!r}: map", "y[m]", "")
  values = f"{rows}.astype(float)" if isinstance(marker, str) else rows   # (objects beside text)
  raise ValueError(f"y holds labels that are not whole numbers ({shown}): a continuous target. "
                   f"{lead} classes to 0..k-1 in order, {rows} = np.unique("
                   f"{rows}, return_inverse=True)[1]{also}; cut a continuous one, e.g. "
                   f"{rows} = pd.qcut({values}, {2 if binary else 3}, labels=False).")


def check_num_classes(num_classes: int):
  """k as a Python int >= 2 (a static argument of the metrics and thresholds)."""
  return check_count("num_classes", num_classes, minimum=2)


def distinct_values(values) -> list:
  """The distinct values of ``values`` (labels of any type), sorted where they sort (else in
  the order first seen): the labels an error message lists."""
  distinct = list(dict.fromkeys(np.asarray(values).tolist()))
  try:
    return sorted(distinct)
  except TypeError:   # ints beside text: no order
    return distinct


def order_unstated(classes) -> bool:
  """Whether sorted distinct labels ``classes`` are k > 2 strings whose sorted (alphabetical)
  order may not be the ordinal one: words ("high" < "low" < "medium") or numbers sorting
  differently as text ("10" < "2"); numeric strings in numeric order ("10", "20", "30") are not."""
  classes = np.asarray(classes)
  if classes.size <= 2 or np.issubdtype(classes.dtype, np.number) or classes.dtype == bool or all(
      isinstance(c, numbers.Number) for c in classes.tolist()):
    return False
  values = np.array([as_float(c) for c in classes.tolist()])
  return not (np.all(np.isfinite(values)) and np.all(np.diff(values) > 0))


def diverged(then: str) -> str:
  """The advice for scores that are not finite, ending with what to do ``then`` again."""
  return ("A model whose scores are not finite has diverged: lower the step size or increase "
          f"lam, refit, then {then} again.")


def svmlight_like(y) -> bool:
  """Whether numeric labels ``y`` are exactly -1, 0 and 1 with 0 on most rows: SVMlight's
  convention (classes -1 / +1, 0 on the unlabeled rows, most of them in semi-supervised data)
  rather than scikit-learn's (classes 0 / 1, -1 on the unlabeled rows); sweep Z10."""
  y = np.asarray(y).ravel()
  return (y.dtype.kind in "biuf" and np.array_equal(np.unique(y), [-1, 0, 1])
          and int(np.sum(y == 0)) > y.size / 2)


def check_sample_weight(sample_weight, num_rows: int) -> Optional[np.ndarray]:
  """[num_rows] float64 weights of a ``score(X, y, sample_weight)``, or None for None; a
  ``ValueError`` for another length, NaN, inf or a negative weight (scikit-learn's metrics
  failed on them from inside, a negative one as "x is neither increasing nor decreasing")."""
  if sample_weight is None:
    return None
  refuse_masked("sample_weight", sample_weight)
  weights = np.asarray(sample_weight, np.float64).reshape(-1)
  bad = ~(np.isfinite(weights) & (weights >= 0))
  if weights.shape != (num_rows,) or bad.any():
    raise ValueError(f"sample_weight must hold {num_rows} finite numbers >= 0, one per row of "
                     f"y; received shape {np.shape(sample_weight)}"
                     + ("" if weights.shape != (num_rows,) else
                        f" with {summarize(weights[bad].tolist())}") + ".")
  return weights


def check_scores(name: str, scores: ArrayLike, ndim: Optional[int] = 1,
                 meaning: Optional[str] = None):
  """Raises for non-finite or non-numeric scores; a no-op on tracers (values unknown under jit).

  Args:
    name: how the caller calls the array.
    scores: array-like of rank ``ndim`` (None: any rank).
    ndim: expected rank; other ranks are left to the caller's shape check.
    meaning: what non-finite values make meaningless, with the advice (the caller's words);
      default: an AUC of them.
  """
  if is_traced(scores):
    return
  refuse_unreadable(name, scores)
  arr = as_numbers(scores, name)
  if arr.dtype != bool and (not np.issubdtype(arr.dtype, np.number)
                            or np.issubdtype(arr.dtype, np.complexfloating)):
    raise TypeError(f"{name} must be real numbers; received dtype {arr.dtype}.")
  if ndim is not None and arr.ndim != ndim:
    return   # the caller's shape check says what is expected
  bad = ~np.isfinite(arr)
  if bad.any():
    first = np.unravel_index(int(np.argmax(bad.reshape(-1))), arr.shape)
    where = f"row {first[0]}" if arr.ndim == 1 else f"index {tuple(int(i) for i in first)}"
    meaning = meaning or f"an AUC of such scores has no meaning. {diverged('score')}"
    raise ValueError(f"{name} contain {int(bad.sum())} NaN or infinite values (first at "
                     f"{where}); {meaning}")


def check_class_labels(labels: ArrayLike, num_classes: int, name: str = "labels"):
  """Raises unless concrete ``labels`` are integers in 0..k-1 (classes may be absent).

  A no-op on tracers. The message names 1..k labels ("subtract 1") and NaN rows.
  """
  if is_traced(labels):
    return
  arr = whole_labels(labels, name, "integers 0..k-1", non_finite_fix="Every point needs a class "
                     "0..k-1.")
  if arr.size == 0:
    return
  lo, hi = float(arr.min()), float(arr.max())
  if lo >= 1 and hi == num_classes:
    raise ValueError(f"{name} must be 0..k-1; got 1..k ({lo:g}..{hi:g} with k={num_classes}) -- "
                     "subtract 1 (labels - 1).")
  if lo < 0 or hi >= num_classes:
    raise ValueError(f"{name} must lie in 0..{num_classes - 1} (num_classes={num_classes}); "
                     f"received values {lo:g}..{hi:g}. Pass num_classes = the number of classes "
                     "and labels mapped to 0..k-1.")


def check_binary_labels(labels: ArrayLike, name: str = "labels", num_points: Optional[int] = None,
                        both_classes: bool = False, fix: str = "") -> Optional[np.ndarray]:
  """[n] int32 ``labels > 0`` after checking concrete binary labels: 0/1, -1/+1 or bool (and
  with ``num_points`` one per point, with ``both_classes`` both present), else an error ending
  with ``fix``. None on tracers (under jit, positive means ``labels > 0``)."""
  if is_traced(labels):
    return None
  refuse_unreadable(name, labels)
  arr = as_numbers(labels, name)
  if num_points is not None and (arr.ndim != 1 or arr.shape[0] != num_points):
    raise ValueError(f"{name} must have shape [{num_points}] (one label per point); received "
                     f"shape {arr.shape}.")
  if arr.dtype != bool:
    if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
      raise TypeError(f"{name} must be binary numbers (0/1, -1/+1 or bool); received dtype "
                      f"{arr.dtype}. {fix}".rstrip())
    bad = ~np.isfinite(arr)
    if bad.any():
      raise ValueError(f"{name} contain {int(bad.sum())} NaN or infinite values (first at row "
                       f"{int(np.argmax(bad.reshape(-1)))}); every point needs a class.")
    values = np.unique(arr).tolist()
    if not (set(values) <= {0, 1} or set(values) <= {-1, 1}):
      raise ValueError(f"binary {name} must be 0/1 (or -1/+1, or bool; positive = 1); received "
                       f"values [{summarize(values)}]. {fix}".rstrip())
  positive = arr > 0
  if both_classes and (positive.all() or not positive.any()):
    raise ValueError(f"{name} needs both classes (positive where {name} > 0); received "
                     f"{int(positive.sum())} positives among {positive.size} labels.")
  return positive.astype(np.int32)


def check_callable(name: str, value: object, allow_none: bool = True):
  """Raises TypeError unless ``value`` is callable (or None when allowed)."""
  if value is None and allow_none:
    return None
  if not callable(value):
    raise TypeError(f"{name} must be a callable{' or None' if allow_none else ''}; received "
                    f"{type(value).__name__} {value!r:.60}.")
  return value


def check_bool(name: str, value: object, allow_none: bool = True):
  """``value`` as a bool (None passes when allowed), else a TypeError."""
  if value is None and allow_none:
    return None
  if not isinstance(value, (bool, np.bool_)):
    raise TypeError(f"{name} must be True or False{' (or None)' if allow_none else ''}; "
                    f"received {value!r:.60}.")
  return bool(value)


def check_gamma(gamma: ArrayLike, num_classes: Optional[int] = None):
  """gamma checked to lie in [0, 1]: a float or tuple (k None), else broadcast to [k-1] float32."""
  try:
    arr = np.asarray(gamma)
  except (TypeError, ValueError):   # ragged lists
    arr = np.asarray(None)
  if isinstance(gamma, (bool, np.bool_)) or arr.dtype.kind not in "biuf" or arr.ndim > 1:
    raise TypeError(f"gamma must be a number in [0, 1] or a list of k-1 of them; received "
                    f"{type(gamma).__name__} {gamma!r:.60}.")
  arr = arr.astype(np.float64)
  if not np.all((arr >= 0) & (arr <= 1)):
    raise ValueError(f"gamma must lie in [0, 1] (1 = labeled pairs only, 0 = unlabeled risks "
                     f"only); received {np.ravel(arr).tolist()}.")
  if num_classes is None:
    return float(arr) if arr.ndim == 0 else tuple(arr.tolist())
  if arr.ndim and arr.shape != (num_classes - 1,):
    raise ValueError(f"gamma must be a scalar or have shape [k-1] = [{num_classes - 1}]; "
                     f"received shape {arr.shape}.")
  return np.broadcast_to(arr, (num_classes - 1,)).astype(np.float32)


def check_positive(name: str, value: float, allow_zero: bool = False, allow_inf: bool = False,
                   at_most: Optional[float] = None, what: str = "", fix: str = "") -> float:
  """float(value) after checking it is a number > 0 (>= 0, inf, at most ``at_most``, when
  allowed), else an error: "{name} must be {what}; received {value}. {fix}" (``what`` defaults
  to the range)."""
  low = ">= 0" if allow_zero else "> 0"
  what = what or (f"a number in {'[' if allow_zero else '('}0, {at_most:g}]" if at_most
                  else f"finite and {low}" if not allow_inf else f"{low} (inf allowed)")
  message = lambda must: f"{name} must be {must}; received {value!r:.60}. {fix}".rstrip()
  must_type = what if what != f"finite and {low}" else "a number"
  if isinstance(value, (bool, np.bool_, str)) or np.ndim(value) != 0:
    raise TypeError(message(must_type))
  try:
    v = float(value)
  except (TypeError, ValueError):
    raise TypeError(message(must_type)) from None
  if np.isnan(v) or v < 0 or (v == 0 and not allow_zero) or (np.isinf(v) and not allow_inf) or (
      at_most is not None and v > at_most):
    raise ValueError(message(what))
  return v


def set_away_from_default(value, default) -> bool:
  """Whether ``value`` differs from a parameter's ``default`` (so the user set it): a bool never
  equals a number, text never a non-text, None only None; arrays compare element-wise;
  callables always differ."""
  if value is default:
    return False
  flags = (bool, np.bool_)
  if (callable(value) or isinstance(value, flags) != isinstance(default, flags)
      or isinstance(value, str) != isinstance(default, str) or (value is None) != (default is None)):
    return True
  if np.ndim(value) or np.ndim(default):
    return np.shape(value) != np.shape(default) or not np.array_equal(value, default)
  return bool(value != default)


def refuse_ignored(options: dict, setting: str, applies_with: str) -> None:
  """Raises ``ValueError`` for the first option, ``{name: (value, default)}``, set away from its
  default where ``setting`` (e.g. "kernel='linear'") gives it no effect: never ignored."""
  for name, (value, default) in options.items():
    if set_away_from_default(value, default):
      shown = f"{name}={value!r:.60}" if np.ndim(value) == 0 else name
      raise ValueError(f"{shown} has no effect with {setting}: it applies with {applies_with} "
                       f"only. Leave it at its default ({default!r:.40}), or use {applies_with}.")


def check_float32_range(name: str, value: float, fix: str) -> float:
  """``value`` (a checked number) if float32 holds it, else a ``ValueError`` naming ``name``:
  beyond 3.4e38 the solvers' float32 arithmetic turns it into inf, deep inside."""
  largest = float(np.finfo(np.float32).max)   # compared as Python floats: no cast to float32
  if float(value) > largest:
    raise ValueError(f"{name}={value:g} is beyond float32's range (at most {largest:.4g}): {fix}")
  return value


def check_phase_range(name: str, x: ArrayLike, sigma: float | jax.Array) -> None:
  """Checks that random Fourier phases omega . x of ``x`` stay within ``numerics.MAX_PHASE``.

  omega ~ N(0, 2 sigma I_d), so |omega . x| <= ||x|| sqrt(2 sigma) (sqrt(d) + 8) except with
  probability below 1e-14 per frequency (chi tail). Past 2^19 a float32 phase keeps less than
  1/16 rad of precision, so the features are noise whatever computes the cosine.

  Raises:
    ValueError: the bound exceeds ``numerics.MAX_PHASE``, with what to change.
  """
  arr = np.asarray(x, np.float64)
  if arr.size == 0:
    return
  norm = float(np.sqrt(np.max(np.sum(arr * arr, axis=1))))
  bound = norm * np.sqrt(2.0 * sigma) * (np.sqrt(arr.shape[1]) + 8.0)
  if bound > numerics.MAX_PHASE:
    raise ValueError(
        f"{name} has a point of norm {norm:.3g}: with sigma={sigma:g} random Fourier phases can "
        f"reach {bound:.3g}, beyond {numerics.MAX_PHASE:.0f} where float32 phases lose their "
        "precision. Rescale the features (e.g. qsg_jax.data.minmax_fit on the training data) "
        "or lower sigma.")


def check_kernel_scale(name, x, sigma=None, dtype=np.float32,
                       fix="Min-max scale the features (qsg_jax.data.minmax_fit on the training "
                       "rows)", expansion: bool = True, where=lambda row: row):
  """Refuses points and a kernel width whose Gaussian kernel would be noise or constant.

  k(x, z) = exp(-sigma ||x - z||^2) is computed in ``dtype`` as exp(-sigma (|x|^2 + |z|^2 -
  2 x.z)). That fails silently when (1) the squared norms overflow (NaN), (2) sigma does not
  fit in ``dtype``, (3) sigma times every squared distance is below its resolution (every
  kernel value rounds to 1: a constant model), or (4) the rounding error of the expansion,
  about eps |x|^2, times sigma exceeds 1 (features far from the origin compared with their
  spread). Min-max scaled features (``qsg_jax.data.minmax_fit``) pass all four.

  Args:
    name: what to call ``x`` in messages.
    x: [n, d] float points (training points, or test points with ``sigma`` None: check 1 only).
    sigma: scalar or [k-1] kernel parameters, or None.
    dtype: float32 (default) or float64, the precision of the kernel.
    fix: the messages' advice.
    expansion: whether the kernel is computed through the expansion (check 4); False for a
      kernel that sums squared differences directly (scikit-learn's, SVOREX's C solver).
    where: the caller's row number of row i of ``x`` (a chunk of a larger source).

  Raises:
    ValueError: naming the failing quantity (and for norms the row) and the fix.
  """
  if np.size(x) == 0:
    return
  info = np.finfo(dtype)
  big, eps, what = float(info.max), float(info.eps), np.dtype(dtype).name
  if sigma is None:   # norms only (every chunk of a pass): d * max|x|^2 bounds them, no copy
    top = float(np.max(np.abs(x)))
    if top * top * np.shape(x)[1] < big / 4:
      return
  x = np.asarray(x, np.float64)
  with np.errstate(over="ignore"):
    norms2 = np.sum(x * x, axis=1)
  row = int(np.argmax(norms2))
  norm2 = float(norms2[row])
  if not norm2 < big / 4:
    raise ValueError(f"points of {name} have norms up to {np.sqrt(norm2):.3g}: their squares "
                     f"(squared distances, gradient norms) overflow {what} (the largest at row "
                     f"{where(row)}). {fix}.")
  if sigma is None:
    return
  sigma = np.atleast_1d(np.asarray(sigma, np.float64))
  if np.max(sigma) > big:
    raise ValueError(f"sigma={np.max(sigma):.3g} does not fit in {what} (max {big:.3g}). {fix}, "
                     "or choose a smaller sigma.")
  spread2 = float(np.sum(np.square(x.max(axis=0) - x.min(axis=0))))   # >= every squared distance
  if spread2 == 0:
    raise ValueError(f"the points of {name} are all the same point: a kernel model has "
                     "nothing to learn from. Pass points that differ.")
  if np.min(sigma) * spread2 < eps:
    raise ValueError(f"sigma * (largest squared distance) = {np.min(sigma) * spread2:.3g} is "
                     f"below {what} resolution: every kernel value between points of {name} "
                     f"rounds to 1 and the model is constant. {fix}, or raise sigma.")
  if expansion and np.max(sigma) * eps * norm2 > 1.0:
    raise ValueError(f"the points of {name} lie far from the origin (norm "
                     f"{np.sqrt(norm2):.3g}) for their spread: with sigma={np.max(sigma):.3g} "
                     f"{what} rounding of the squared distances exceeds 1 in the kernel's "
                     f"exponent. {fix}.")


def _scalar_of(value):
  """A concrete 0-d NumPy or JAX array of numbers (``jnp.max(y) + 1``) as its NumPy scalar, so
  that counts and seeds computed with jnp are accepted; anything else as it is."""
  if (isinstance(value, (np.ndarray, jax.Array)) and value.shape == () and not is_traced(value)
      and (np.issubdtype(value.dtype, np.integer) or np.issubdtype(value.dtype, np.floating))):
    return np.asarray(value)[()]
  return value


def check_key(key: "int | jax.Array", name: str = "key") -> jax.Array:
  """A typed PRNG key from an int seed or a key (new-style or raw uint32 [2]), else a clear error.

  Integer seeds are accepted only here, at the API boundary (STYLE.md, habit 4).
  """
  if isinstance(key, (bool, np.bool_)) or key is None:
    raise TypeError(f"{name} must be an int seed or a jax.random.key; received {key!r}. "
                    f"Pass e.g. {name}=0.")
  if is_traced(key) and key.shape == () and jnp.issubdtype(key.dtype, jnp.integer):
    return jax.random.key(key)   # an int seed under jit / vmap (over seeds): its 32-bit key
  if not (isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key)):
    key = _scalar_of(key)   # jnp.int32(3): the seed 3
  if isinstance(key, (int, np.integer)):
    seed = int(key)
    if not 0 <= seed < 2**63:
      raise ValueError(f"{name}={key} is out of range; use a seed in 0..2**63-1.")
    # jax.random.key keeps the low 32 bits only: the high ones are folded in, so that distinct
    # seeds give distinct streams (seeds below 2**32 are unchanged).
    low = jax.random.key(seed & 0xFFFFFFFF)
    return jax.random.fold_in(low, seed >> 32) if seed >> 32 else low
  if isinstance(key, jax.Array) and jax.dtypes.issubdtype(key.dtype, jax.dtypes.prng_key):
    if key.shape:
      raise ValueError(f"{name} must be a single key; received a batch of shape {key.shape}. "
                       "Vmap over keys with the pure API (qsg_jax.engine.init / "
                       "qsg_jax.engine.train).")
    return key
  arr = np.asarray(key)
  if arr.shape == (2,) and arr.dtype == np.uint32:
    return jax.random.wrap_key_data(jnp.asarray(arr))
  raise TypeError(f"{name} must be an int seed or a jax.random.key; received {type(key).__name__}"
                  f" {arr.shape if arr.ndim else key!r}. Pass e.g. {name}=0.")


# Counts (steps, sizes, folds) become int32 inside JAX: a larger one overflows there.
MAX_COUNT = 2**31 - 1


def check_count(name: str, value: object, minimum: int = 1, allow_none: bool = False,
                fix: str = "", maximum: Optional[int] = MAX_COUNT) -> Optional[int]:
  """``value`` as a Python int in ``minimum``..``maximum`` (None passes when ``allow_none``),
  else an error.

  Whole floats (5.0) count; fractions (2.5), bools and non-numbers are refused, never rounded.
  ``maximum``: ``MAX_COUNT`` (int32's largest) by default; None for numbers that are not counts
  JAX holds (seeds, bytes). The message names ``name``, what was received and ``fix`` (the
  caller's advice).
  """
  if value is None and allow_none:
    return None
  value = _scalar_of(value)
  whole_float = isinstance(value, (float, np.floating)) and float(value).is_integer()
  if not whole_float and (isinstance(value, (bool, np.bool_))
                          or not isinstance(value, (int, np.integer))):
    raise TypeError(f"{name} must be a whole number >= {minimum}"
                    f"{' or None' if allow_none else ''}; received {value!r:.60}. {fix}".rstrip())
  if int(value) < minimum:
    raise ValueError(f"{name} must be a whole number >= {minimum}; received {value!r:.60}. "
                     f"{fix}".rstrip())
  if maximum is not None and int(value) > maximum:
    shown = f"{float(value):.3g}" if int(value) > 10**12 else f"{int(value):,}"
    raise ValueError(f"{name}={shown} is beyond the largest count {maximum:,} (2**31 - 1: "
                     f"counts are int32 inside JAX). {fix}".rstrip())
  return int(value)


# ---- Semi-supervised labels of the scikit-learn face ------------------------------------------

# The scikit-learn convention marks unlabeled rows with -1 (``sklearn.semi_supervised``).
MARKER = -1


def nan_rows(y):
  """[n] bool: entries of ``y`` that are float NaN or pandas' NA (also inside object arrays)."""
  if y.dtype.kind == "f":
    return np.isnan(y)
  if y.dtype == object:
    return np.array([v is None or (isinstance(v, (float, np.floating)) and np.isnan(v))
                     or type(v).__name__ in ("NAType", "NaTType") for v in y], bool)
  return np.zeros(y.shape, bool)


def as_float(value):
  try:
    return float(value)
  except (TypeError, ValueError):
    return np.nan


def _same(value, marker):
  """Whether one label equals the marker, both numbers or both strings (never across types)."""
  if isinstance(marker, str) or isinstance(value, str):
    return isinstance(marker, str) and isinstance(value, str) and value == marker
  return bool(value == marker)


def check_marker(unlabeled_label) -> None:
  """Refuses an ``unlabeled_label`` that is not one label: a sequence or array (compared
  element-wise with y, or broadcast) and a bool (equal to 1 / 0, so True would drop class 1)."""
  if unlabeled_label is None or isinstance(unlabeled_label, (str, bytes)):
    return
  if isinstance(unlabeled_label, (bool, np.bool_)):
    raise TypeError(f"unlabeled_label={unlabeled_label!r} is a bool, which equals "
                    f"{int(unlabeled_label)} and would mark class {int(unlabeled_label)} as "
                    "unlabeled: pass the marker itself (e.g. -1), 'auto' or None.")
  if np.ndim(unlabeled_label) != 0 or isinstance(unlabeled_label, (set, frozenset, dict)):
    raise TypeError(f"unlabeled_label must be one label (e.g. -1 or 'unlabeled'), 'auto' or "
                    f"None; received {type(unlabeled_label).__name__} "
                    f"{unlabeled_label!r:.40}. Mark every unlabeled row of y with that one value.")


def _label_dtype(y):
  """The dtype of labels ``y``: its own, or a one-column data frame's column's."""
  dtype = getattr(y, "dtype", None)
  dtypes = getattr(y, "dtypes", None)   # y = frame[["target"]]: its column's
  if dtype is None and dtypes is not None and hasattr(dtypes, "iloc") and len(dtypes) == 1:
    dtype = dtypes.iloc[0]
  return dtype


def stated_order(y) -> Optional[list]:
  """The categories of ``y`` when it is an ordered pandas Categorical (a Series or a one-column
  data frame of that dtype, or the Categorical itself), which state the class order; else None
  (the sorted order)."""
  dtype = _label_dtype(y)
  if not getattr(dtype, "ordered", False) or not hasattr(dtype, "categories"):
    return None
  return list(dtype.categories)


def marking_advice(given, labels, unlabeled_label) -> str:
  """How to mark the NaN / NA rows of ``given`` (y as the user passed it) as unlabeled, as code
  that runs on that form of y: "e.g. y = ... with unlabeled_label=...". A pandas Categorical
  needs its marker added as a category first (``fillna`` refuses a new value), a NumPy array
  has no ``fillna``, ``np.isnan`` refuses text. The marker is the user's ``unlabeled_label``
  where it is of the labels' kind (text or number) or in y, else the one other rows already
  carry (``_marker_present``), else 'unlabeled' or -1 (or a number below the classes where -1
  is one). Numbers beside text go through an object array (np.where on a list makes them text);
  k > 2 words not in a stated order get the order in the same line. A nullable boolean or
  unsigned y holds no -1: a Series / frame is made objects first (bool labels stay bool
  classes), a bare pandas array takes np.where.
  ``labels``: the other rows' labels, [n] array."""
  dtype = _label_dtype(given)
  categories = getattr(dtype, "categories", None)
  known = labels[~nan_rows(labels)]
  if categories is not None:
    text = categories.dtype.kind not in "biuf"
    known = np.concatenate([known.astype(object), np.asarray(categories, object)])
  else:
    text = known.dtype.kind in "US" or bool(_is_text(known).any())
  values = distinct_values(known)
  numbers_known = [v for v in values if isinstance(v, (numbers.Number, np.bool_))]
  words = [v for v in values if isinstance(v, (str, bytes))]
  user = unlabeled_label
  if user is not None and not (isinstance(user, str) and user == "auto") and (
      isinstance(user, str) == text or any(_same(v, user) for v in values)) and not (
          isinstance(user, float) and np.isnan(user)):
    marker = user.item() if isinstance(user, np.generic) else user
  else:   # a marker the other rows already carry, else one no label is
    marker = _marker_present(numbers_known, words)
    if marker is None:
      marker = "unlabeled" if text else -1 if -1 not in numbers_known else int(
          np.floor(min(numbers_known))) - 1
  narrow = getattr(dtype, "kind", "") in "bu"   # boolean / UInt: no -1 fits
  # numbers beside text (a -1 marker among words): np.where on a list or text makes them text
  boxed = "np.asarray(y, dtype=object)" if text and (
      numbers_known or not isinstance(marker, str)) else "y"
  classes = [v for v in words if not _same(v, marker)]
  if text and not getattr(dtype, "ordered", False) and all(
      _same(v, marker) for v in numbers_known) and order_unstated(np.asarray(classes, object)):
    # words of k > 2 classes: their order is stated in the same line (an ordinal estimator
    # refuses the alphabetical one next: two errors in turn before)
    flat = ".ravel()" if np.ndim(given) == 2 else ""
    return (f"e.g. y = pd.Categorical(np.where(pd.isna(y), {marker!r}, {boxed}){flat}, [*order, "
            f"{marker!r}], True) with unlabeled_label={marker!r}, order = the classes, lowest "
            "first")
  if categories is not None:   # a Series' .cat, a frame column's, the Categorical itself
    column, accessor = (("y", "") if hasattr(given, "add_categories") else
                        ("y", ".cat") if hasattr(given, "cat") else ("y.iloc[:, 0]", ".cat"))
    added = "" if marker in list(categories) else f"{accessor}.add_categories({marker!r})"
    code = f"y = {column}{added}.fillna({marker!r})"
  elif hasattr(given, "iloc"):   # a pandas Series or one-column frame
    code = f"y = y{'.astype(object)' if narrow else ''}.fillna({marker!r})"
  elif hasattr(given, "fillna") and not narrow:   # a nullable pandas array
    code = f"y = y.fillna({marker!r})"
  elif np.asarray(given).dtype.kind == "f" and not narrow:
    code = f"y = np.where(np.isnan(y), {marker!r}, y)"
  else:   # objects (text or numbers beside None), pandas' NA: np.isnan refuses them
    code = f"y = np.where(pd.isna(y), {marker!r}, {boxed})"
  return f"e.g. {code} with unlabeled_label={marker!r}"


def _marker_present(numbers_known, words):
  """The marker that distinct non-NaN labels already carry, or None: -1 beside text classes, or
  beside at least two other numbers of which it cannot be an ordered class
  (``marker_may_be_a_class``: -1 / 0 / +1 is a sentiment scale, -1 / +1 two classes); one word
  beside numeric classes; else a word of ``MARKER_WORDS`` ('?', 'unlabeled', ...)."""
  others = [v for v in numbers_known if not v == MARKER]
  if len(others) < len(numbers_known) and (words or len(others) >= 2 and not (
      marker_may_be_a_class(others))):
    return MARKER
  if len(words) == 1 and len(numbers_known) >= 2:   # one word beside numeric classes
    return words[0]
  return _marker_word(words)


def _marker_word(values):
  """The first text of ``values`` that is a conventional marker (``MARKER_WORDS``), or None."""
  return next((v for v in values if isinstance(v, str) and v.strip().lower() in MARKER_WORDS),
              None)


def _marker_hint(found) -> str:
  """"unlabeled_label=<found> if <found> marks the unlabeled rows, or " ("" for None)."""
  return "" if found is None else (
      f"unlabeled_label={found!r} if {found!r} marks the unlabeled rows, or ")


def _marker_in_use(y) -> str:
  """``_marker_hint`` of the conventional marker [n] labels ``y`` hold (-1, or text of
  ``MARKER_WORDS``), "" where they hold none."""
  text = _is_text(y)
  numbers_hold = any(as_float(v) == MARKER for v in y[~text].tolist())
  return _marker_hint(MARKER if numbers_hold else _marker_word(y[text].tolist()))


def _is_text(y: np.ndarray) -> np.ndarray:
  """[n] bool: which entries of a 1-D object array are text (str or bytes)."""
  return np.array([isinstance(v, (str, bytes)) for v in y.tolist()], bool)


def keep_label_types(y):
  """``y`` as an object array where it is a list or tuple of labels mixing numbers and text, the
  numbers kept numbers (NumPy makes every label text: [0, 1, 2, 'u'] gave classes '0', '1', '2'
  and predictions in text, so predict(X) == y_true held nowhere); any other ``y`` as it is."""
  if not isinstance(y, (list, tuple)):
    return y
  items = [v[0] if isinstance(v, (list, tuple)) and len(v) == 1 else v for v in y]  # [[0], ..]
  if not all(isinstance(v, (str, bytes, numbers.Number, np.bool_)) for v in items):
    return y
  text = [isinstance(v, (str, bytes)) for v in items]
  return np.asarray(y, dtype=object) if any(text) and not all(text) else y


def unbox_numbers(y: np.ndarray) -> np.ndarray:
  """``y`` in its numbers' own dtype where it is an object array holding no text (a pandas object
  column of ints, which scikit-learn calls an "unknown" label type); any other ``y`` as it is."""
  if y.dtype != object or _is_text(y.ravel()).any():
    return y
  return np.asarray(y.tolist())


def refuse_mixed_labels(y, labeled=None):
  """``ValueError`` where the ``labeled`` rows (default all) of an object array ``y`` hold both
  text and numbers (0 and "1"): they neither sort nor compare, and "1" is not 1. (A marker of
  another type than the classes, -1 beside "cat" / "dog", is fine.)"""
  y = np.asarray(y)
  labeled = np.ones(y.shape, bool) if labeled is None else np.asarray(labeled, bool)
  if y.dtype != object or not labeled.any():
    return
  y, labeled = y.ravel(), labeled.ravel()
  text = _is_text(y)
  if text[labeled].any() and not text[labeled].all():
    r, t = int(np.argmax(labeled & ~text)), int(np.argmax(labeled & text))
    words = list(dict.fromkeys(y[labeled & text].tolist()))
    hint = _marker_hint(words[0]) if len(words) == 1 else _marker_in_use(y[labeled])
    fix = f"Pass {hint}use" if hint else "Use"
    raise ValueError(f"y mixes numbers and text: y[{r}] = {y[r]!r} and y[{t}] = {y[t]!r}, "
                     f"which are different labels that do not sort. {fix} one type, e.g. y = "
                     "np.asarray(y).astype(str), or .astype(int) where the text holds numbers.")


def unlabeled_mask(y, unlabeled_label, classes=None, given=None) -> np.ndarray:
  """[n] bool mask of the rows of ``y`` marked unlabeled, after refusing labels that would
  silently become a class or silently vanish.

  Args:
    y: [n] labels.
    unlabeled_label: the marker of unlabeled rows; None: every row is labeled; "auto": -1 (the
      scikit-learn convention) where -1 cannot be a class, else an error asking for an explicit
      marker (ordinal classes 0, 1, ... may well have a class -1 below them, as sentiment -1 / 0
      / +1 does: it would be dropped as unlabeled without a word).
    classes: the fitted classes (scorers); default the labeled values of ``y``.
    given: ``y`` as the user passed it (a pandas Series, Categorical or data frame), whose form
      the advice for NaN labels follows (``marking_advice``); default ``y``.

  Raises:
    ValueError: NaN / NA labels, the marker written as another type ("-1" for -1), or an
      ambiguous -1 under "auto" (the message names the first row and the fix).

  Example:
    >>> unlabeled_mask(np.array([0, -1, 2]), -1).tolist()
    [False, True, False]
  """
  refuse_unreadable("y", y)
  given = y if given is None else given
  y = np.asarray(y)
  check_marker(unlabeled_label)
  nan = nan_rows(y)
  if isinstance(unlabeled_label, (float, np.floating)) and np.isnan(unlabeled_label):
    said = "unlabeled_label=nan is not supported (NaN equals nothing, not even NaN)"
    if nan.any():
      raise ValueError(f"{said}: mark the unlabeled rows with another marker, "
                       f"{marking_advice(given, y.ravel(), None)}.")
    raise ValueError(f"{said}, and y holds no NaN: pass {_marker_in_use(y.ravel())}"
                     "unlabeled_label=None if every row is labeled.")
  if nan.any():
    raise ValueError(
        f"y contains {int(nan.sum())} NaN / NA labels (first at row {int(np.argmax(nan))}), "
        f"neither a class nor unlabeled_label={unlabeled_label!r}. Mark them, "
        f"{marking_advice(given, y.ravel(), unlabeled_label)}; or drop them.")
  if unlabeled_label is None:
    refuse_mixed_labels(y)
    return np.zeros(y.shape, bool)
  auto = isinstance(unlabeled_label, str) and unlabeled_label == "auto"
  marker = MARKER if auto else unlabeled_label
  _refuse_wrapped_marker(y, marker)
  numeric = y.dtype.kind in "biuf"
  if numeric:
    unlabeled = np.zeros(y.shape, bool) if isinstance(marker, str) else y == marker
    numbers = y.astype(float)
  else:
    unlabeled = np.array([_same(v, marker) for v in y.tolist()], bool)
    numbers = np.array([as_float(v) for v in y.tolist()], float)
  text = np.char.strip(y.astype(str)) == str(marker).strip()
  lookalike = ~unlabeled & (text | (numbers == as_float(marker)))
  if lookalike.any():
    r = int(np.argmax(lookalike))
    value = y[r].item() if isinstance(y[r], np.generic) else y[r]
    kind = type(marker).__name__
    text_classes = isinstance(value, str) and any(   # "-1" among words: NumPy made the -1 text
        isinstance(v, str) and not _reads_as_float(v) for v in y[~lookalike][:1000].tolist())
    fix = ("keep -1 a number where y is built: np.array(labels, dtype=object) (a NumPy array of "
           "text turns -1 into '-1')" if text_classes else
           f"y = y.astype({kind})")
    raise ValueError(
        f"y[{r}] = {value!r} ({type(value).__name__}) looks like the unlabeled marker but "
        f"unlabeled_label={marker!r} is {'an' if kind[0] in 'aeiou' else 'a'} {kind}, so it would "
        f"become a class. Use one type for both: unlabeled_label={value!r} (the marker in y's "
        f"type), or {fix}.")
  refuse_mixed_labels(y, ~unlabeled)
  labeled = np.unique(y[~unlabeled]) if classes is None else np.asarray(classes)
  if auto and unlabeled.any() and labeled.dtype.kind in "biuf" and marker_may_be_a_class(labeled):
    where = ("below 0" if labeled.min() == MARKER + 1 else "between them" if labeled.max() > MARKER
             else "above them")
    raise ValueError(
        f"y has {int(unlabeled.sum())} rows -1 and the classes [{summarize(labeled.tolist(), 6)}]: "
        f"-1 is scikit-learn's unlabeled marker but could also be an ordered class {where} (as in "
        "sentiment -1 / 0 / +1), which would be dropped. Say which: unlabeled_label=-1 if -1 "
        "marks unlabeled rows, unlabeled_label=None if every row is labeled.")
  if auto and classes is None and not numeric:
    _refuse_text_marker_as_class(y[~unlabeled])
  return np.asarray(unlabeled, bool).reshape(y.shape)


# Text that marks a missing label in data files; under "auto" (whose marker is -1) a class.
MARKER_WORDS = ("?", "", "-", "na", "n/a", "nan", "none", "null", "missing", "unknown",
                "unlabeled", "unlabelled")


def _refuse_text_marker_as_class(labels):
  """``ValueError`` where a text class under ``unlabeled_label="auto"`` reads as a missing-label
  marker ("?", "unknown", ...): it would be trained as a class (an ordered Categorical may even
  place it above the others)."""
  words = np.char.lower(np.char.strip(labels.astype(str)))
  found = np.isin(words, MARKER_WORDS)
  if found.any():
    value = labels[np.argmax(found)]
    value = value.item() if isinstance(value, np.generic) else value
    raise ValueError(
        f"y holds {int(found.sum())} rows {value!r}, which reads as a missing-label marker, but "
        f"unlabeled_label='auto' marks only -1, so {value!r} would be trained as a class. Say "
        f"which: unlabeled_label={value!r} if it marks unlabeled rows, unlabeled_label=None if "
        "it is a class.")


def _refuse_wrapped_marker(y, marker):
  """``ValueError`` where unsigned labels hold their type's largest value while the marker is
  negative: a -1 written into (or cast to) uint8 is 255, which would become a class."""
  if y.dtype.kind != "u" or isinstance(marker, (str, bytes)) or not as_float(marker) < 0:
    return
  top = np.iinfo(y.dtype).max
  wrapped = y == top
  if wrapped.any() and np.unique(y[~wrapped]).size >= 2:   # else a class ({0, 255} masks)
    raise ValueError(
        f"y is {y.dtype} and holds {top} in {int(wrapped.sum())} rows (the first at row "
        f"{int(np.argmax(wrapped))}): rows marked {marker!r} become {top} in {y.dtype}, a class "
        f"unless said. Keep y signed (y.astype(np.int64) before marking rows), or pass "
        f"unlabeled_label={top} if it marks unlabeled rows (None if it is a class).")


# --- Estimator inputs (the scikit-learn faces: QS3ORAO, QSGS2AUC, ROCSVM, OnlinePairwiseRanker)


def marker_may_be_a_class(classes) -> bool:
  """Whether -1 could be an ordered class among numeric ``classes``: the one below a lowest class
  0 (sentiment -1 / 0 / +1), or one between them (a Likert scale -2..2 missing its -1 rows)."""
  classes = np.asarray(classes, float)
  return bool(classes.size) and (classes.min() == MARKER + 1 or classes.min() < MARKER)


def _callers_dirs():
  """The folders whose frames are not the user's line: this package, and scikit-learn and joblib
  when loaded (a Pipeline, GridSearchCV or cross_val_score calling an estimator)."""
  dirs = [_PACKAGE_DIR]
  for name in ("sklearn", "joblib"):
    module = sys.modules.get(name)
    if getattr(module, "__file__", None):
      dirs.append(os.path.dirname(os.path.abspath(module.__file__)))
  return tuple(d + os.sep for d in dirs)


def outside_stacklevel() -> int:
  """The ``stacklevel`` of a warning issued by the function that calls this one which points at
  the first line outside the package and the scikit-learn machinery that may call it (the
  user's call, through any path of library frames)."""
  frame, level = sys._getframe(1), 1   # pylint: disable=protected-access
  dirs = _callers_dirs()
  while frame.f_back is not None and (os.path.abspath(frame.f_code.co_filename).startswith(
      dirs) or frame.f_code.co_filename == contextlib.__file__):   # (a with)
    frame, level = frame.f_back, level + 1
  return level


@contextlib.contextmanager
def warnings_at(said=()):
  """Runs the block with its warnings recorded, then warns each once again at the first line
  outside the package (``outside_stacklevel``), except those with the category and text of one
  in ``said`` (already reported: a refit that repeats its CV's checks). Yields the record. A
  block that raises reports nothing."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    yield caught
  seen = {(w.category, str(w.message)) for w in said}
  level = outside_stacklevel()
  for warning in caught:
    if (warning.category, str(warning.message)) not in seen:
      seen.add((warning.category, str(warning.message)))
      warnings.warn(warning.message, warning.category, stacklevel=level)


@contextlib.contextmanager
def fitted_state_kept_on_error(estimator):
  """On an exception, restores every fitted attribute (a name ending in "_") as it was before:
  a refit that fails leaves the estimator as it was (or unfitted)."""
  before = {name: value for name, value in vars(estimator).items() if name.endswith("_")}
  try:
    yield
  except BaseException:
    for name in [n for n in vars(estimator) if n.endswith("_")]:
      delattr(estimator, name)
    vars(estimator).update(before)
    raise


def seed_of(random_state) -> int:
  """An int seed from an estimator's ``random_state``: an int in [0, 2**32) as it is (NumPy's
  seed range), a ``np.random.RandomState`` or None drawn; anything else refused naming it."""
  want = "an int in [0, 2**32), a np.random.RandomState or None"
  if isinstance(random_state, numbers.Integral) and not isinstance(random_state, bool):
    if not 0 <= random_state < 2**32:
      raise ValueError(f"random_state must be {want}; received {random_state}.")
    return int(random_state)
  if random_state is None:   # NumPy's global RandomState, as scikit-learn's None
    return int(np.random.randint(np.iinfo(np.int32).max))
  if not isinstance(random_state, np.random.RandomState):
    hint = (" (a np.random.Generator: pass an int drawn from it, e.g. "
            "int(rng.integers(2**32)))" if isinstance(random_state, np.random.Generator) else "")
    raise TypeError(f"random_state must be {want}; received {type(random_state).__name__} "
                    f"{random_state!r:.40}{hint}.")
  return int(random_state.randint(np.iinfo(np.int32).max))


def check_features(X, name="X", training=False):
  """Short, row- or column-naming errors for the commonest bad X before scikit-learn's
  ``validate_data`` (whose messages print the whole array or do not name the column): complex
  numbers, text columns (numbers written as text too), not 2-D, NaN / inf, sparse matrices
  (with the fix inside a Pipeline), and with ``training`` (fit's X) a saved row index. Objects
  ``float()`` cannot read (a dict) are left to ``validate_data`` (its TypeError)."""
  if hasattr(X, "toarray") or hasattr(X, "tocsr"):
    raise TypeError(f"{name} is a scipy sparse matrix; the estimators need dense features. Pass "
                    f"{name}.toarray(); in a Pipeline, make the step before dense: "
                    "OneHotEncoder(sparse_output=False), or make_column_transformer(..., "
                    "sparse_threshold=0).")
  refuse_unreadable(name, X)   # a masked array
  refuse_dates(X, name)
  _refuse_odd_columns(X, name)
  index = saved_index_column(X) if training else None
  if index is not None:
    raise ValueError(f"{name} column {index!r} is a row index pandas saved (to_csv's default "
                     "index=True): its integers count the rows, so as a feature it would rank by "
                     f"file order. Drop it ({name}.drop(columns={index!r})), or read the file "
                     "with index_col=0 (save it with index=False).")
  try:
    values = as_numbers(X, name)
  except ValueError as error:
    if "inhomogeneous" in str(error):
      raise ValueError(f"{name} is ragged: its rows have different lengths ({error}). Pass a "
                       "2-D array [n_samples, n_features], every row of the same length.") from None
    return
  except TypeError:
    return
  if values.dtype.kind == "c":
    raise ValueError(f"Complex data not supported: {name} has dtype {values.dtype}; the estimators "
                     f"take real features. Pass e.g. np.c_[{name}.real, {name}.imag] (both parts "
                     f"as columns) or np.abs({name}).")
  if values.ndim == 2 and values.dtype.kind not in "biuf":
    values = _text_columns_refused(X, values, name)
    if values is None:
      return   # objects float() cannot read: validate_data's TypeError
  if values.dtype.kind not in "biuf":
    return
  values = values.astype(np.float64)
  if values.ndim != 2:
    how = ((f"{name}.to_frame() for one feature, {name}.to_frame().T for one sample (a frame's "
            "row i: df.iloc[[i]])") if hasattr(X, "to_frame") else
           f"{name}.reshape(-1, 1) for one feature, {name}.reshape(1, -1) for one sample")
    raise ValueError(f"{name} must be 2-D [n_samples, n_features]; received shape "
                     f"{values.shape}. Reshape your data: {how}.")
  bad = ~np.isfinite(values)
  if bad.any():
    row, col = (int(i[0]) for i in np.nonzero(bad))
    names = column_names(X)
    shown = f"{col} {names[col]!r}" if names else f"{col}"   # a data frame's: by name too
    raise ValueError(f"{name} contains NaN or inf: {int(bad.any(axis=1).sum())} rows, the first "
                     f"at row {row} (column {shown}, value {values[row, col]}). Impute or drop "
                     "those rows.")


def refuse_dates(X, name):
  """``ValueError`` naming the date / time columns of ``X`` (a DataFrame's datetime64 /
  timedelta64 columns, or such an array), which the estimators cannot read as numbers."""
  dtypes = getattr(X, "dtypes", None)
  if dtypes is not None and hasattr(dtypes, "items"):
    dates = [column for column, dtype in dtypes.items() if getattr(dtype, "kind", "") in "mM"]
  elif isinstance(X, np.ndarray) and X.dtype.kind in "mM":
    raise ValueError(f"{name} is an array of {X.dtype} (dates or durations); qsg_jax takes "
                     f"numbers. Convert it first, e.g. ({name} - {name}.min()) / np.timedelta64("
                     "1, 's') (seconds).")
  else:
    return
  if dates:
    raise ValueError(f"{name} has dates or durations in column(s) {summarize(dates, 6)}; "
                     "qsg_jax takes numbers. Convert them first, e.g. (X[c] - X[c].min())"
                     ".dt.total_seconds() for a date or X[c].dt.total_seconds() for a duration, "
                     "or derive features (month, day of week).")


def _refuse_odd_columns(X, name):
  """``ValueError`` for column layouts NumPy or pandas would fail on deep inside, naming them:
  a structured array, a data frame with repeated column names, interval / period columns."""
  if isinstance(X, np.ndarray) and X.dtype.names:
    raise ValueError(f"{name} is a structured array (fields {summarize(list(X.dtype.names), 6)});"
                     " the estimators take a plain 2-D array. Pass numpy.lib.recfunctions."
                     f"structured_to_unstructured({name}) or a pandas DataFrame of it.")
  columns = getattr(X, "columns", None)
  dtypes = getattr(X, "dtypes", None)
  if columns is None or dtypes is None or not hasattr(dtypes, "items"):
    return
  repeated = list(dict.fromkeys(c for c, twice in zip(columns, columns.duplicated()) if twice))
  if repeated:
    raise ValueError(f"{name} has repeated column names {summarize(repeated, 6)}; each column "
                     f"needs its own name. Rename them first, e.g. {name}.columns = "
                     f"[f'{{c}}_{{i}}' for i, c in enumerate({name}.columns)].")
  odd = [c for c, dtype in dtypes.items()   # (pd.cut's bins: categories of intervals)
         if str(getattr(getattr(dtype, "categories", None), "dtype", dtype)).startswith(
             ("interval", "period"))]
  if odd:
    raise ValueError(f"{name} has intervals or periods in column(s) {summarize(odd, 6)}; the "
                     "estimators take numbers. Convert them first, e.g. X[c].array.mid (an "
                     "interval's midpoint), X[c].cat.codes (ordered bins) or X[c].dt.to_timestamp()"
                     " for a period.")


def _text_columns_refused(X, values, name):
  """``values`` [n, d] (strings or objects) as float64, or a ``ValueError`` naming the columns
  holding text and the encoder that fixes them; None where an entry is neither a number nor
  text (left to ``validate_data``)."""
  try:
    return values.astype(np.float64)
  except TypeError:
    return None
  except ValueError:
    pass
  text = []
  for col in range(values.shape[1]):
    try:
      values[:, col].astype(np.float64)
    except TypeError:
      return None
    except ValueError:
      row = next((r for r, v in enumerate(values[:, col].tolist())
                  if isinstance(v, (str, bytes)) and not _reads_as_float(v)), None)
      if row is None:   # not text: a sequence in a cell?
        row = next((r for r, v in enumerate(values[:, col].tolist()) if np.ndim(v)), None)
        if row is None:
          return None   # validate_data's error
        shown = X.columns[col] if hasattr(X, "columns") else col
        raise ValueError(f"{name} column {shown!r} holds a sequence in a cell (row {row}: "
                         f"{str(values[row, col])[:30]}); each cell must be one number. Spread "
                         "it into columns first, e.g. pd.DataFrame(X[c].tolist()).")
      text.append((col, row, values[row, col]))
  label = lambda col: X.columns[col] if hasattr(X, "columns") else col
  parsed = [col for col, _, _ in text if numbers_written_as_text(values[:, col])]
  if parsed:   # one-hot encoding would make one column per number (AUC 0.82 against 0.998)
    row = next(r for r, v in enumerate(values[:, parsed[0]].tolist())
               if not _reads_as_float(v) and _number_unit(v) is not None)
    value = values[row, parsed[0]]
    what, fix = number_text_fix(values[:, parsed[0]])
    raise ValueError(f"{name} has numbers written as text in column(s) "
                     f"{summarize([label(c) for c in parsed], 6)} (e.g. {str(value)[:20]!r} "
                     f"at row {row}: {what}); parse them first, e.g. {fix}.")
  names = [label(col) for col, _, _ in text]
  col, row, value = text[0]
  dtypes = getattr(X, "dtypes", None)
  ordered = [c for c in names if dtypes is not None and getattr(dtypes[c], "ordered", False)]
  if ordered:   # sweep Z10: one-hot encoding would drop the order the user stated
    raise ValueError(f"{name} has ordered categories in column(s) {summarize(ordered, 6)} (e.g. "
                     f"{str(value)[:20]!r} at row {row}); the estimators take numbers. Keep "
                     f"their order as numbers first, e.g. {name}[c] = {name}[c].cat.codes, or "
                     "OrdinalEncoder(categories=[list(X[c].cat.categories)]) in a pipeline.")
  raise ValueError(f"{name} has text in column(s) {summarize(names, 6)} (e.g. "
                   f"{str(value)[:20]!r} at row {row}); the estimators take numbers. Encode those "
                   "columns first, e.g. make_pipeline(make_column_transformer((OneHotEncoder("
                   f"sparse_output=False), {names[:6]!r}), remainder='passthrough'), estimator).")


# Characters spreadsheets write inside numbers: thousands separators.
_THOUSANDS = str.maketrans("", "", ",_' \u00a0\u2009\u202f")


# A number a spreadsheet or report wrote as text: a sign, a currency sign, accounting parentheses,
# digits with separators, a percent sign, a currency or a unit of measure ("-$1,257.30",
# "($3.10)", "64%", "12.5 kg", "1.234,56 EUR"). Only units of this list count: "1A", "4th",
# "1990s" or "10am" are codes or words, categories to encode (sweep Z11).
_CURRENCY = "[$\u20ac\u00a3\u00a5\u20b9]?"
_UNITS = frozenset("""% $ \u20ac \u00a3 \u00a5 \u20b9 usd eur gbp chf jpy cad aud inr cny kg mg
    \u00b5g ug ng lb lbs oz km cm mm \u00b5m um nm mi ft yd ml dl cl ms sec secs min mins hr hrs wk
    yr yrs kb mb gb tb kib mib gib tib bps kbps mbps gbps hz khz mhz ghz kw mw kwh wh mv ma kj
    cal kcal \u00b0c \u00b0f \u00b0 bpm mmhg mg/dl mmol/l g/l mg/l px pt dpi rpm km/h mph m/s""".split())
# (No one-letter unit: "1A", "3B", "1990s" are codes as often as amperes, grams or seconds.)
_AFFIXED = re.compile(
    rf"^(?P<sign>[-+\u2212]?)\s*(?P<outer>{_CURRENCY})\s*(?P<open>\(?)\s*(?P<inner>{_CURRENCY})\s*"
    r"(?P<digits>[-+\u2212]?\.?\d[\d.,'_ \u00a0\u2009\u202f]*)\s*(?P<close>\)?)\s*"
    r"(?P<unit>[^\d\s().,'_+\-\u2212][^\d\s()]{0,6})?$")


def _number_unit(cell) -> Optional[str]:
  """The affix of a cell that is no plain number but reads as one once thousands separators are
  removed ("1,910.89"), its decimal comma is read as a point ("1910,89"), or a sign written as
  "\u2212", a currency sign, accounting parentheses, a percent sign or a unit of ``_UNITS`` are
  taken off: "" for separators alone, else the affix ("$", "()", "%", "kg", "$()"); None for
  other text."""
  match = _AFFIXED.match(str(cell).strip())
  if match is None or bool(match["open"]) != bool(match["close"]) or (
      match["outer"] and match["inner"]):
    return None
  unit = match["unit"] or ""
  if unit and (unit.lower() not in _UNITS or match["outer"] or match["inner"]):
    return None
  digits = match["digits"].replace("\u2212", "-").strip()
  if not (_reads_as_float(digits.translate(_THOUSANDS)) or _reads_as_float(
      digits.replace(".", "").replace(",", "."))):
    return None
  minus = "\u2212" if "\u2212" in match["sign"] + match["digits"] else ""
  return minus + match["outer"] + match["inner"] + ("()" if match["open"] else "") + unit


def _units(values):
  """(cells that are no plain number, their ``_number_unit``s) of a column."""
  cells = [v for v in np.asarray(values, object).ravel().tolist() if not _reads_as_float(v)]
  return cells, [_number_unit(v) for v in cells]


def numbers_written_as_text(values) -> bool:
  """Whether more than 90% of a column's cells that are not plain numbers read as numbers with
  one affix (``_number_unit``: thousands separators, a decimal comma, "$", "%", "kg", ...; with
  or without accounting parentheses and a written minus): numbers a spreadsheet exported as
  text, which one-hot encoding would turn into a column per value (a number column with a stray
  word is text; codes "1A", "4th" are categories)."""
  cells, units = _units(values)
  found = {_bare(unit) for unit in units if unit is not None} - {""}   # "2,000.00" beside "$5"
  count = sum(unit is not None for unit in units)
  return bool(cells) and count > 0.9 * len(cells) and len(found) <= 1


def _bare(unit: str) -> str:
  """A ``_number_unit`` without its parentheses and written minus: "($3.10)" and "$2,000.00"
  have one unit."""
  return unit.replace("()", "").replace("\u2212", "")


def _decimal_comma(cells) -> bool:
  """Whether a column's numbers use a decimal comma: a comma after the last point ("1.234,56"),
  or commas that are no thousands separators ("12,5", "1910,89")."""
  for cell in cells:
    text = re.sub(r"[^\d.,]", "", str(cell))
    if "," in text and (text.rfind(",") > text.rfind(".") >= 0 or not re.fullmatch(
        r"\d{1,3}(,\d{3})+(\.\d*)?", text)):
      return True
  return False


def number_text_fix(values) -> Tuple[str, str]:
  """(what the text around a column's numbers is, code that parses them) for a column of
  ``numbers_written_as_text``: the code removes its affix, turns parentheses and a written minus
  into "-", and its separators (thousands, or a decimal comma) into a plain number; cells that
  are no number become NaN (said)."""
  cells, units = _units(values)
  numbers_ = [cell for cell, unit in zip(cells, units) if unit is not None]
  affixes = {unit for unit in units if unit is not None}
  sign = max(map(_bare, affixes), key=len, default="")   # the affix ("" for separators alone)
  what, code = [], "pd.to_numeric(X[c].astype(str)"
  if sign:
    kind = ("percent sign" if sign == "%" else "currency sign" if len(sign) == 1 and not
            sign.isalpha() or sign.lower() in ("usd", "eur", "gbp", "chf", "jpy") else "unit")
    what.append(f"the {kind} {sign!r}")
    code += f".str.replace({sign!r}, '', regex=False)"
  if any("()" in unit for unit in affixes):
    what.append("accounting negatives in parentheses")
    code += ".str.replace('(', '-').str.replace(')', '')"
  if any("\u2212" in unit for unit in affixes):
    what.append("a minus sign '\u2212'")
    code += ".str.replace('\u2212', '-')"
  if _decimal_comma(numbers_):
    what.append("decimal commas")
    code += ".str.replace(r\"[\\s.'_]\", '', regex=True).str.replace(',', '.')"
  else:
    if not sign and len(affixes) == 1:
      what.append("thousands separators")
    code += ".str.replace(r\"[\\s,'_]\", '', regex=True)"
  coerce = len(numbers_) < len(cells)
  code += (", errors='coerce')" if coerce else ")") + (
      " (divided by 100 for fractions)" if sign == "%" else "") + (
          " (cells that are no number become NaN: impute or drop them)" if coerce else "")
  return " and ".join(what) or "separators", code


def saved_index_column(X):
  """"Unnamed: 0" where it is a data frame's first column and a row index pandas saved and read
  back (``to_csv``'s default index=True: integers, each once, increasing); else None."""
  columns = list(getattr(X, "columns", ()))[:1]
  if columns != ["Unnamed: 0"]:
    return None
  values = np.asarray(X[columns[0]])
  if values.dtype.kind in "iu" and values.size > 1 and np.all(np.diff(values) > 0):
    return columns[0]
  return None


def _reads_as_float(value) -> bool:
  try:
    float(value)
  except (TypeError, ValueError):
    return False
  return True
