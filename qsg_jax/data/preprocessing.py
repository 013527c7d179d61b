"""The papers' preprocessing: min-max scaling, equal-frequency bins, semi-supervised splits.

Both papers scale every feature to [0, 1] with statistics of the training data only, discretize
regression targets into k = 5 equal-frequency classes (QS3ORAO, Sec. 5), and draw a few labeled
points (500 ordinal, 200 binary) with the rest unlabeled. Also two checks of a user's data frame
that the estimators and ``experiments.peers`` share (defined with the estimators' other input
checks): ``numbers_written_as_text`` ("1,910.89", "64%", "12.5 kg") with ``number_text_fix``, and
``saved_index_column`` ("Unnamed: 0").
"""

import warnings
from typing import NamedTuple

import jax
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax._validation import number_text_fix  # pylint: disable=unused-import
from qsg_jax._validation import numbers_written_as_text  # pylint: disable=unused-import
from qsg_jax._validation import saved_index_column  # pylint: disable=unused-import
from qsg_jax.data.dataset import as_numeric
from qsg_jax.data.dataset import check_finite


def numpy_rng(seed):
  """A NumPy generator from an int seed, a jax PRNG key, or a ``np.random.Generator`` (as is).

  An int seed s means ``_validation.check_key(s)`` (distinct seeds in 0..2**63-1 give distinct
  streams; negative seeds and bools are refused); a key's bits seed the generator, so data drawn
  from it is a pure function of the key, without compiling a jax sampler for every new shape.
  """
  if isinstance(seed, np.random.Generator):
    return seed
  if isinstance(seed, (int, np.integer, bool, np.bool_)) or seed is None:
    seed = validation.check_key(seed, "seed")
  dtype = getattr(seed, "dtype", None)
  if dtype is not None and jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
    seed = jax.random.key_data(seed)
  bits = np.asarray(seed)
  if bits.dtype != np.uint32:
    raise TypeError(f"expected an int seed, a jax PRNG key or a np.random.Generator; received "
                    f"{type(seed).__name__} with dtype {bits.dtype}.")
  return np.random.default_rng(bits.ravel())


def minmax_fit(x):
  """Per-feature offset and scale that map the training data ``x`` onto [0, 1].

  Constant columns get scale 1 (they map to 0), so nothing is divided by zero.

  Args:
    x: [n, d] training features (finite).

  Returns:
    (lo, scale): float64 [d] each; apply with ``minmax_apply``.

  Example:
    >>> lo, scale = minmax_fit(np.array([[0., 5.], [2., 5.]]))
    >>> minmax_apply(np.array([[1., 5.], [4., 5.]]), lo, scale).tolist()
    [[0.5, 0.0], [2.0, 0.0]]
  """
  x = check_finite("minmax_fit x", x).astype(np.float64)
  if x.ndim != 2 or x.shape[0] == 0:
    raise ValueError(f"minmax_fit expects training features of shape [n, d] with n >= 1; "
                     f"received shape {x.shape}.")
  lo = x.min(axis=0)
  with np.errstate(over="ignore"):
    span = x.max(axis=0) - lo
  if not np.all(np.isfinite(span)):
    c = int(np.argmax(~np.isfinite(span)))
    raise ValueError(f"minmax_fit: column {c} spans more than float64 holds (min {lo[c]:.3g}, "
                     f"max {x[:, c].max():.3g}); rescale it (e.g. divide by 1e300) first.")
  scale = np.where(span > 0, span, 1.0)
  return lo, scale


SQUASHED_SHARE = 1e-2   # central 98% of a column within this share of its min-max range


def warn_if_squashed(x, lo, scale, name="X"):
  """``UserWarning`` naming the columns whose central 98 % of rows (percentiles 1 to 99) lie
  within ``SQUASHED_SHARE`` of the column's min-max range, though not all on one value: a few
  extreme rows set the range, and after min-max scaling the model barely sees the feature (one
  unlabeled value of 1e4 in a [0, 1] column took an easy set's AUC from 0.996 to 0.53).
  Columns of one repeated value with rare others (binary, a 999 code) have a central spread of
  0 and pass.

  Args:
    x: [n, d] rows the scaling was fitted on; lo, scale: ``minmax_fit``'s.
    name: the array's name in the message.
  """
  x = np.asarray(x, np.float64)
  if x.shape[0] < 100:   # the percentiles of a few rows say little
    return
  low, high = np.percentile(x, [1.0, 99.0], axis=0, method="nearest")   # values of rows
  spread = (high - low) / scale
  squashed = np.nonzero((spread > 0) & (spread < SQUASHED_SHARE))[0]
  if not squashed.size:
    return
  c = int(squashed[0])
  far = int(np.argmax(np.abs(x[:, c] - np.median(x[:, c]))))
  warnings.warn(
      f"{name}'s column(s) {validation.summarize(squashed.tolist(), 6)}: 98% of the rows lie "
      f"in a sliver of the min-max range (column {c}: in [{low[c]:.4g}, {high[c]:.4g}], "
      f"{spread[c]:.2g} of the range; row {far} holds {x[far, c]:.4g}), so after min-max "
      "scaling the model barely sees the feature. Clip or transform it first (e.g. "
      "make_pipeline(QuantileTransformer(), estimator)), or drop the extreme rows.", UserWarning,
      stacklevel=validation.outside_stacklevel())


def fit_scaling(x, scale_inputs: bool, name="X"):
  """(lo, scale) of an estimator's input scaling: ``minmax_fit`` and the squashed-column
  warning (``warn_if_squashed``, at the first line outside qsg_jax) when
  ``scale_inputs``, else the identity (zeros, ones)."""
  if not scale_inputs:
    return np.zeros(x.shape[1]), np.ones(x.shape[1])
  lo, scale = minmax_fit(x)
  warn_if_squashed(x, lo, scale, name)
  return lo, scale


# ``tail_ranks``: a column is long-tailed when it has more than TAIL_MIN_VALUES distinct values
# and its middle half (interquartile range) spans less than TAIL_SHARE of its range.
TAIL_MIN_VALUES = 10
TAIL_SHARE = 0.1
RANK_QUANTILES = 1000    # quantiles kept per ranked column


class Ranks(NamedTuple):
  """Rank transforms of some columns: x_c -> its training rows' CDF at x_c, in [0, 1]."""
  columns: np.ndarray    # [t] int indices of the ranked columns.
  quantiles: np.ndarray  # [q, t] float64 training quantiles at levels linspace(0, 1, q).


def tail_ranks(x) -> Ranks:
  """``Ranks`` of the long-tailed columns of training rows x [n, d] (``TAIL_SHARE``).

  A smooth kernel on min-max scaled features sees such a column only through its few extreme
  rows (ijcnn1's ten lag features: the middle half within 0.068 of the range); ranking it, as
  trees implicitly do, spreads its rows over [0, 1]. Binary, few-valued and evenly spread
  columns are kept as they are. Measured: ``experiments/reproduction/RESULTS.md#one-se``.

  The rule reads each distinct row once: one record repeated over half the rows put every
  column's middle half at one value, and every column was ranked (test AUC 0.91 against 0.98).
  The quantiles are those of all rows.
  """
  x = np.asarray(x, np.float64)
  distinct = np.unique(x, axis=0)
  low, high = distinct.min(axis=0), distinct.max(axis=0)
  q1, q3 = np.percentile(distinct, [25.0, 75.0], axis=0)
  narrow = np.flatnonzero((high > low) & (q3 - q1 < TAIL_SHARE * (high - low)))
  columns = np.array([c for c in narrow if np.unique(distinct[:, c]).size > TAIL_MIN_VALUES],
                     np.int64)
  levels = np.linspace(0.0, 1.0, min(RANK_QUANTILES, x.shape[0]))
  return Ranks(columns, np.quantile(x[:, columns], levels, axis=0).reshape(levels.size, -1))


def apply_ranks(x, ranks: Ranks) -> np.ndarray:
  """float64 x with each ranked column replaced by its training CDF (interpolated between the
  stored quantiles, ties averaged as scikit-learn's ``QuantileTransformer`` does; values beyond
  the training range map to 0 or 1)."""
  if not ranks.columns.size:
    return np.asarray(x, np.float64)
  x = np.array(x, np.float64)
  levels = np.linspace(0.0, 1.0, ranks.quantiles.shape[0])
  for i, c in enumerate(ranks.columns):
    q = ranks.quantiles[:, i]
    x[:, c] = 0.5 * (np.interp(x[:, c], q, levels) - np.interp(-x[:, c], -q[::-1], -levels[::-1]))
  return x


def no_ranks() -> Ranks:
  """``Ranks`` of no column."""
  return Ranks(np.zeros(0, np.int64), np.zeros((2, 0)))


def minmax_apply(x, lo, scale):
  """Scales ``x`` with training statistics: (x - lo) / scale.

  Test points may fall outside [0, 1]; they are deliberately not clipped.

  Args:
    x: [n, d] features.
    lo: [d] offsets from ``minmax_fit``.
    scale: [d] positive scales from ``minmax_fit``.

  Returns:
    float64 [n, d].
  """
  x = check_finite("minmax_apply x", x).astype(np.float64)
  lo = np.asarray(lo, dtype=np.float64)
  scale = np.asarray(scale, dtype=np.float64)
  if x.ndim != 2 or lo.shape != (x.shape[1],) or scale.shape != (x.shape[1],):
    raise ValueError(f"minmax_apply expects x [n, d] with lo and scale [d]; received x "
                     f"{x.shape}, lo {lo.shape}, scale {scale.shape}. Fit on data with the same "
                     "columns.")
  if not (np.all(np.isfinite(lo)) and np.all(np.isfinite(scale))):
    raise ValueError("lo and scale must be finite; use the (lo, scale) returned by minmax_fit on "
                     "finite training features.")
  if np.any(scale <= 0):
    raise ValueError("scale must be positive; use the scale returned by minmax_fit.")
  with np.errstate(over="ignore"):
    out = (x - lo) / scale
  beyond = ~np.isfinite(out)
  if beyond.any():   # x - lo beyond float64: far outside the training range
    row, col = (int(i[0]) for i in np.nonzero(beyond))
    raise ValueError(f"minmax_apply: x[{row}, {col}] = {x[row, col]:.3g} lies so far from the "
                     f"training range (min {lo[col]:.3g}, span {scale[col]:.3g}) that its scaled "
                     "value overflows float64; check the units of that column.")
  return out


def discretize_equal_frequency(y, num_bins):
  """Cuts a continuous target into ``num_bins`` classes of (nearly) equal size by its quantiles.

  Class j holds the values in (edges[j], edges[j+1]] (class 0 also holds the minimum), where
  ``edges = np.quantile(y, linspace(0, 1, k + 1))``. Ties at an edge go to the lower class, so
  sizes differ from n/k only by ties.

  Args:
    y: [n] finite regression target (e.g. the SGEMM mean runtime).
    num_bins: k >= 2.

  Returns:
    (labels, edges): int64 [n] in 0..k-1, and float64 [k + 1] edges; apply the same edges to
    other data with ``discretize_with_edges``.

  Raises:
    ValueError: too few distinct values for k non-empty bins.
  """
  raw = check_finite("discretize_equal_frequency y", y)
  y = raw.astype(np.float64)
  if y.ndim != 1 or y.size == 0:
    raise ValueError(f"y must be a non-empty vector [n]; received shape {y.shape}.")
  merged = np.unique(y).size < np.unique(raw).size   # integers float64 cannot tell apart
  num_bins = validation.check_count("num_bins", num_bins, minimum=2)
  distinct = np.unique(y).size
  ties = ("y's distinct integers beyond 2**53 become equal in float64, where the edges are "
          "computed: subtract their minimum first" if merged else
          f"num_bins={num_bins} exceeds the {distinct} distinct values of y" if distinct < num_bins
          else "y has too many tied values. Use fewer bins")
  edges = np.quantile(y, np.linspace(0.0, 1.0, int(num_bins) + 1))
  labels = discretize_with_edges(y, edges)
  counts = np.bincount(labels, minlength=int(num_bins))
  empty = np.nonzero(counts == 0)[0].tolist()
  if empty:
    raise ValueError(
        f"equal-frequency discretization into {num_bins} bins left bins {empty} empty (edges "
        f"{edges.tolist()}): {ties}.")
  return labels, edges


def discretize_with_edges(y, edges):
  """Classes of ``y`` under given bin edges (from ``discretize_equal_frequency``).

  Values below edges[0] go to class 0 and above edges[-1] (+inf included) to class k-1.

  Args:
    y: [n] values.
    edges: [k + 1] increasing edges.

  Returns:
    int64 [n] labels in 0..k-1.
  """
  y = as_numeric("discretize_with_edges y", y).astype(np.float64)
  if y.ndim != 1:
    raise ValueError(f"discretize_with_edges y must be a vector [n]; received shape {y.shape}. "
                     "Pass one target column (np.ravel a [n, 1] column).")
  edges = as_numeric("edges", edges).astype(np.float64)
  if edges.ndim != 1 or edges.size < 3 or not np.all(np.diff(edges) >= 0):
    raise ValueError(f"edges must be a nondecreasing vector [k + 1] with k >= 2 and no NaN; "
                     f"received {validation.summarize(edges.tolist())}.")
  missing = np.isnan(y)
  if missing.any():
    raise ValueError(f"discretize_with_edges y has {int(missing.sum())} NaN or missing values "
                     f"(first at row {int(np.argmax(missing))}); they belong to no class. Drop "
                     "or impute them first.")
  return np.searchsorted(edges[1:-1], y, side="left").astype(np.int64)


class Split(NamedTuple):
  """Index arrays (int64, sorted, pairwise disjoint) into a dataset's rows."""
  labeled: np.ndarray    # [num_labeled] points whose labels the learner sees.
  unlabeled: np.ndarray  # [n - num_labeled - num_test] points used without labels.
  test: np.ndarray       # [num_test] held-out points (empty when num_test = 0).


def split_semisupervised(seed, y, num_labeled, num_test=0, stratify=False, num_classes=None,
                         max_tries=1000, cover_unlabeled=False):
  """Random labeled / unlabeled / test split with every class present among the labeled.

  The test points are drawn first, uniformly. The labeled points are then drawn uniformly from
  the rest and redrawn until every class occurs (an exact draw from the uniform distribution
  conditioned on full coverage); with ``stratify=True`` each class instead gets a share of
  ``num_labeled`` proportional to its size, and at least one point. With ``cover_unlabeled``
  every class also keeps a point among the unlabeled (a protocol that scores on them needs
  each class there); a uniform draw that covers both is the same draw as without it.

  Args:
    seed: int seed, jax PRNG key or ``np.random.Generator``; the split is a pure function of it.
    y: [n] int class labels 0..k-1 (discretize a regression target first).
    num_labeled: number of labeled points (the papers: 500 ordinal, 200 binary).
    num_test: number of test points (0 when the dataset has an official test split).
    stratify: proportional per-class allocation instead of uniform draws.
    num_classes: k; every class 0..k-1 must occur. Default: the classes present in y.
    max_tries: redraws allowed before giving up (uniform draws only).
    cover_unlabeled: every class keeps at least one unlabeled point too.

  Returns:
    ``Split(labeled, unlabeled, test)``.

  Raises:
    ValueError: sizes that do not fit, fewer labeled points than classes, a class with no point
      (two with ``cover_unlabeled``) outside the test set, or no covering draw within
      ``max_tries``.
  """
  y = as_numeric("y", y)
  if y.ndim != 1:
    raise ValueError(f"y must be a vector of class labels [n]; received shape {y.shape}.")
  validation.check_whole_numbers(
      y, "y", "int class labels 0..k-1", non_finite_fix="Every point needs a class: drop or "
      "label those rows first.", fraction_fix="Discretize a regression target first "
      "(discretize_equal_frequency).")
  y = y.astype(np.int64)
  n = y.shape[0]
  classes = (np.unique(y) if num_classes is None
             else np.arange(validation.check_count("num_classes", num_classes, minimum=1)))
  outside = (y < 0) | (y > classes.max(initial=0) if num_classes is None else y >= classes.size)
  if outside.any():
    row = int(np.argmax(outside))
    k = classes.size if num_classes else "the largest + 1"
    raise ValueError(f"y must hold class labels 0..k-1 (k = {k}); y[{row}] = {int(y[row])} "
                     f"({int(outside.sum())} such rows). "
                     "This splits fully labeled data: a -1 'unlabeled' marker is not a class, and "
                     "labels 1..k map to 0..k-1 with y - 1.")
  missing = np.setdiff1d(classes, y)
  if missing.size:
    raise ValueError(f"classes [{validation.summarize(missing.tolist())}] do not occur in y at "
                     "all; every class needs points. Check num_classes or the labels.")
  num_labeled = validation.check_count("num_labeled", num_labeled, minimum=1)
  num_test = validation.check_count("num_test", num_test, minimum=0)
  if num_labeled < classes.size:
    raise ValueError(f"num_labeled={num_labeled} is smaller than the number of classes "
                     f"({classes.size}); every class needs a labeled point.")
  if num_test < 0 or num_labeled + num_test > n:
    raise ValueError(f"num_labeled + num_test = {num_labeled + num_test} must be at most the "
                     f"number of points n = {n} (and num_test >= 0).")
  rng = numpy_rng(seed)
  perm = rng.permutation(n)
  test, rest = perm[:num_test], perm[num_test:]
  counts = np.array([np.sum(y[rest] == c) for c in classes])
  needed = 2 if cover_unlabeled else 1
  if np.any(counts < needed):
    short = counts < needed
    sizes = np.array([np.sum(y == c) for c in classes[short]])
    raise ValueError(f"after drawing {num_test} test points, classes "
                     f"{classes[short].tolist()} have "
                     + ("fewer than 2 points left: one to label and one to leave unlabeled. "
                        if cover_unlabeled else "no point left to label. ")
                     + ("Use fewer test points or another seed." if np.all(sizes >= needed)
                        else f"They have {sizes.tolist()} in all: merge them with a neighbouring "
                        "class or drop them."))
  if cover_unlabeled and rest.size - num_labeled < classes.size:
    raise ValueError(f"num_labeled={num_labeled} leaves {rest.size - num_labeled} unlabeled "
                     f"points, fewer than the {classes.size} classes that each need one.")
  if stratify:
    labeled = _stratified(rng, y, rest, classes, counts - (needed - 1), num_labeled)
  else:
    for _ in range(max_tries):
      labeled = rng.choice(rest, size=num_labeled, replace=False)
      if np.isin(classes, y[labeled]).all() and (
          not cover_unlabeled or np.isin(classes, y[np.setdiff1d(rest, labeled)]).all()):
        break
    else:
      raise ValueError(
          f"no draw of {num_labeled} labeled points out of {rest.size} covered all classes "
          + ("among the labeled and the unlabeled " if cover_unlabeled else "")
          + f"in {max_tries} tries (class sizes {counts.tolist()}). Use stratify=True or label "
          + ("another number of points." if cover_unlabeled else "more points."))
  unlabeled = np.setdiff1d(rest, labeled)
  return Split(np.sort(labeled).astype(np.int64), unlabeled.astype(np.int64),
               np.sort(test).astype(np.int64))


def _stratified(rng, y, rest, classes, counts, num_labeled):
  """Largest-remainder allocation of ``num_labeled`` proportional to ``counts``, >= 1 per class."""
  quota = counts / counts.sum() * num_labeled
  alloc = np.minimum(np.maximum(np.floor(quota), 1), counts).astype(np.int64)
  while alloc.sum() < num_labeled:  # The most under-served class with room gets one more.
    alloc[int(np.argmax(np.where(alloc < counts, quota - alloc, -np.inf)))] += 1
  while alloc.sum() > num_labeled:  # Minimum-one bumps overshot: the most over-served gives one.
    alloc[int(np.argmax(np.where(alloc > 1, alloc - quota, -np.inf)))] -= 1
  picks = [rng.choice(rest[y[rest] == c], size=a, replace=False) for c, a in zip(classes, alloc)]
  return np.concatenate(picks)
