"""What every cross-validation in the package shares: folds, grids, the result and the best point.

``qsg_jax.model_selection`` (QS3ORAO / QSG-S2AUC), ``qsg_jax.baselines.cross_validate`` (the
exact baselines) and ``qsg_jax.roc_svm.cross_validate`` keep their own task runners and share
everything else from here: ``stratified_folds`` (the same seed gives the same folds, so methods
can be compared fold by fold; copies of a labeled point share a fold, ``copy_groups``),
``fold_training_sets``, the papers' grids and their checks
(``paper_grid``, ``quick_grid``, ``check_grid``), the ``CVResult``, the best-point rule
(``best_point``: the largest finite score, ties to the first) and the unlabeled subsample
(``subsample``).
"""

from typing import NamedTuple, Optional, Tuple

import numpy as np
from numpy.typing import ArrayLike

from qsg_jax import _validation as validation


class CVResult(NamedTuple):
  """Outcome of a grid search by k-fold cross-validation."""
  best: dict               # keyword arguments of the chosen setting: floats, or [k-1] arrays
                           # when chosen per split.
  best_score: float        # mean validation AUC of the chosen setting(s).
  scores: np.ndarray       # [*grid shape, k-1] validation AUC per grid point and split (fold mean).
  fold_scores: np.ndarray  # [*grid shape, num_folds, k-1].
  grid: dict               # name -> 1-D array, in the axis order of ``scores`` (roc_svm: a
                           # tuple of fit-argument dicts, one axis).
  solver: Optional[str] = None  # QSG: the solver whose fits were scored ("dsg" or "direct",
                                # ``qsg_jax.config.choose_solver``); None for other methods.


def nanmean(a: ArrayLike, axis: int = -1) -> np.ndarray:
  """Mean over ``axis`` ignoring NaN (NaN where every entry is NaN), without warnings.

  Example:
    >>> nanmean(np.array([[1.0, np.nan], [np.nan, np.nan]])).tolist()
    [1.0, nan]
  """
  ok = np.isfinite(a)
  count = ok.sum(axis=axis)
  total = np.where(ok, a, 0.0).sum(axis=axis)
  return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def best_point(target: ArrayLike, fix: str) -> Tuple[int, ...]:
  """Index of the largest finite entry of ``target`` (ties: the first), else ``ValueError(fix)``.

  NaN marks a point that diverged on some fold or had no AUC; it is never chosen.

  Example:
    >>> best_point(np.array([[0.5, np.nan], [0.7, 0.7]]), "no point")
    (1, 0)
  """
  target = np.asarray(target, np.float64)
  finite = np.isfinite(target)
  if not finite.any():
    raise ValueError(fix)
  return tuple(int(i) for i in np.unravel_index(np.argmax(np.where(finite, target, -np.inf)),
                                                target.shape))


def subsample(x: ArrayLike, size: Optional[int], seed: int) -> np.ndarray:
  """A uniform subsample of ``size`` rows of ``x`` in their original order (all when None or
  when ``x`` has at most ``size`` rows), drawn with ``np.random.default_rng(seed)``.

  The cross-validations train every task on all the unlabeled points they get: a subsample of
  a few thousand keeps a grid search affordable.

  Example:
    >>> subsample(np.arange(10)[:, None], 3, seed=0).ravel().tolist()
    [5, 6, 9]
  """
  x = np.asarray(x)
  size = validation.check_count("size", size, allow_none=True,
                                fix="None keeps every row.", maximum=None)
  if size is None or x.shape[0] <= size:
    return x
  pick = np.random.default_rng(validation.check_count("seed", seed, minimum=0, maximum=None))
  return x[np.sort(pick.choice(x.shape[0], size, replace=False))]


def stratified_subsample(labels: ArrayLike, size: int, min_per_class: int,
                         rng: np.random.Generator) -> np.ndarray:
  """Sorted indices of about ``size`` labeled points, each class its proportional share (at
  least ``min_per_class``, at most all of it), drawn from ``rng``: what the automatic choices
  (``direct.defaults``, ``direct.bandwidths``) learn from when there are many labels."""
  labels = np.asarray(labels)
  classes, counts = np.unique(labels, return_counts=True)
  keep = []
  for c, n in zip(classes, counts):
    take = int(min(n, max(min_per_class, round(size * n / labels.size))))
    keep.append(rng.choice(np.nonzero(labels == c)[0], take, replace=False))
  return np.sort(np.concatenate(keep))


def check_fold_labels(labels: ArrayLike) -> np.ndarray:
  """``labels`` as an int64 vector [n] of finite whole numbers, else a clear error.

  Bool labels count as 0/1. NaN, inf, fractions (2.5) and non-numbers (strings) are refused:
  a NaN would otherwise form a class of its own or be left without a fold.
  """
  arr = validation.whole_labels(
      labels, "labels", "whole numbers (class ids)", fix="Map the classes to 0..k-1 first, e.g. "
      "np.unique(y, return_inverse=True)[1].", non_finite_fix="Every point needs a class to get "
      "a fold: drop unlabeled rows before splitting into folds.")
  if arr.ndim != 1 or arr.size == 0:
    raise ValueError(f"labels must be a non-empty vector [n]; received shape {arr.shape}.")
  return arr


def check_num_folds(num_folds: int) -> int:
  """F as a Python int >= 2 (a whole number, never truncated), else a clear error."""
  return validation.check_count("num_folds", num_folds, minimum=2,
                                fix="Pass e.g. num_folds=5 (fractions are never rounded).")


def check_seed(seed: int) -> int:
  """The fold seed as a Python int >= 0, else a clear error (None would not repeat the folds)."""
  fix = ("None would draw different folds on every call. " if seed is None else "")
  return validation.check_count("seed", seed, minimum=0, fix=fix + "Pass e.g. seed=0.",
                                maximum=None)


# Rows equal after rounding each column to this share of its span are one point: exact copies,
# float32 round trips, and jitter far below what the kernel can tell apart (1e-9 on [0, 5] split
# 7 of 60 triples when compared in float32, and the CV picked a lookup table). One grid, never
# a chain of neighbours: a tolerance linked in chains merged half of 30,000 distinct dense rows.
COPY_GRID = 1e-6
# Repeats are copies only where some column is continuous: at least this share of the distinct
# points has a value of its own there (so two observations cannot plausibly coincide) ...
CONTINUOUS_SHARE = 0.9
# ... among at least this many distinct points (fewer tell nothing).
MIN_DISTINCT = 10


def copy_groups(points: ArrayLike, labels: ArrayLike) -> np.ndarray:
  """[n] int64 group of every labeled point: copies of one (point, label) share a group;
  groups are numbered in order of their first row.

  Copies are rows equal to ``COPY_GRID`` of each column's span, with equal labels, in data that
  have a continuous column (``CONTINUOUS_SHARE``): there a repeated row was copied (a class
  oversampled, a record entered twice), and a fold that holds out a row while its copy trains
  scores a lookup table (each of 100 rows given 3 times: the narrowest kernel won the CV, test
  AUC 0.87 against 0.97). Where every column takes few values (answers, counts, indicators)
  repeats are genuine observations of one point, whose labels and frequencies are the signal:
  every row is then its own group (grouped by label, two binary features had a cross-validated
  AUC of 0.04).

  Args:
    points: [n, d] finite points (checked: NaN, inf and other row counts are refused).
    labels: [n] labels.

  Example:
    >>> x = np.linspace(0, 1, 12)[:, None]
    >>> copy_groups(np.r_[x, x[:1]], np.r_[np.arange(12) % 2, 0])[[0, 1, 12]].tolist()
    [0, 1, 0]
  """
  labels = np.asarray(labels)
  x = validation.check_points("points", points, allow_empty=True)
  if x.shape[0] != labels.size:
    raise ValueError(f"points must have one row per label ({labels.size}); received "
                     f"{x.shape[0]} rows.")
  each = np.arange(labels.size, dtype=np.int64)
  if labels.size < MIN_DISTINCT:
    return each
  x = x.astype(np.float64)
  low, span = x.min(axis=0), np.ptp(x, axis=0)
  x = np.round((x[:, span > 0] - low[span > 0]) / (COPY_GRID * span[span > 0]))
  rows, point_of = np.unique(x, axis=0, return_inverse=True)
  point_of = point_of.reshape(-1)
  if rows.shape[0] == labels.size or not _continuous(rows):
    return each
  _, label_of = np.unique(labels, return_inverse=True)
  key = point_of * (label_of.max() + 1) + label_of.reshape(-1)
  _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
  rank = np.empty(first.size, np.int64)
  rank[np.argsort(first)] = np.arange(first.size)    # number groups by their first row
  return rank[inverse.reshape(-1)]


def _continuous(rows):
  """Whether some column of the distinct points ``rows`` takes a value of its own at
  ``CONTINUOUS_SHARE`` of them."""
  if rows.shape[0] < MIN_DISTINCT:
    return False
  levels = 1 + np.sum(np.diff(np.sort(rows, axis=0), axis=0) > 0, axis=0)
  return bool(levels.size) and levels.max() >= CONTINUOUS_SHARE * rows.shape[0]


def distinct(points, labels):
  """(points, labels) with each copy group (``copy_groups``) kept once, at its first row: what
  the automatic choices (``direct.defaults.choose``, ``direct.learn_length_scales``) read."""
  groups = copy_groups(points, labels)
  if groups.max() + 1 == groups.size:
    return points, labels
  _, keep = np.unique(groups, return_index=True)
  return points[keep], labels[keep]   # groups are numbered by first row: keep is sorted


def class_counts(labels: ArrayLike, points: Optional[ArrayLike] = None):
  """(classes, distinct points per class): with ``points``, copies of a point count once
  (``copy_groups``), as ``stratified_folds`` deals them."""
  labels = np.asarray(labels)
  return _group_counts(labels, None if points is None else copy_groups(points, labels))


def _group_counts(labels, groups):
  """(classes, groups per class); groups None: every row its own."""
  classes = np.unique(labels)
  if groups is None:
    return classes, np.array([np.sum(labels == c) for c in classes])
  return classes, np.array([np.unique(groups[labels == c]).size for c in classes])


def stratified_folds(labels: ArrayLike, num_folds: int, seed: int = 0,
                     points: Optional[ArrayLike] = None) -> np.ndarray:
  """Fold index 0..F-1 of every labeled point; each class is shuffled and dealt in turn.

  Args:
    labels: [n] labels: whole numbers or bool (each distinct value is a class); NaN, fractions
      and strings are refused.
    num_folds: F, a whole number >= 2, at most the number of distinct points of the smallest
      class.
    seed: whole number >= 0 seeding the shuffle (None is refused: the folds must repeat).
    points: [n, d] the labeled points, or None. Given, copies of a (point, label)
      (``copy_groups``) share one fold: a class's groups are dealt largest first, each to the
      fold holding the fewest of that class's points so far. Without copies the folds are those
      of ``points=None``.

  Returns:
    [n] int64 fold ids; each fold holds every class. Fold sizes differ by at most 1 (without
    copies; with copies, as evenly as the whole groups allow).

  Raises:
    TypeError, ValueError: bad labels, num_folds or seed (named in the message).

  Example:
    >>> stratified_folds(np.array([0, 0, 1, 1]), 2, seed=0).tolist()
    [0, 1, 0, 1]
  """
  num_folds = check_num_folds(num_folds)
  seed = check_seed(seed)
  labels = check_fold_labels(labels)
  groups = None if points is None else copy_groups(points, labels)
  if groups is not None and groups.max() + 1 == labels.size:
    groups = None                                   # no copies: the plain folds
  classes, counts = _group_counts(labels, groups)
  if counts.min() < num_folds:
    copies = "" if groups is None else " distinct points (copies of a point share a fold)"
    raise ValueError(f"num_folds must be >= 2 and at most the smallest labeled class size "
                     f"{int(counts.min())}{copies} (class counts "
                     f"[{validation.summarize(counts.tolist())}]); received {num_folds}. " + (
                         "Use fewer folds or label more points." if counts.min() >= 2 else
                         f"Class {classes[int(np.argmin(counts))]} has a single"
                         f"{' distinct' if copies else ''} labeled point, which no fold count "
                         "can hold out: label more points of it."))
  rng = np.random.default_rng(seed)
  folds = np.full(labels.shape[0], -1, np.int64)
  dealt = 0
  for c in classes:
    idx = rng.permutation(np.nonzero(labels == c)[0])
    if groups is None:
      folds[idx] = (dealt + np.arange(idx.size)) % num_folds
    else:
      folds[idx] = _deal_groups(groups[idx], num_folds, dealt)
    dealt += idx.size
  return folds


def _deal_groups(groups, num_folds, start):
  """Folds of a shuffled class whose rows belong to ``groups``: each group whole, largest
  first (ties in shuffled order), to the fold with the fewest rows so far (ties: the first
  from fold ``start`` on, cyclically, as the plain dealing continues)."""
  _, first, inverse, sizes = np.unique(groups, return_index=True, return_inverse=True,
                                       return_counts=True)
  order = np.argsort(first)
  order = order[np.argsort(-sizes[order], kind="stable")]
  load = np.zeros(num_folds, np.int64)
  cyclic = (start + np.arange(num_folds)) % num_folds
  fold_of = np.empty(first.size, np.int64)
  for g in order:
    fold_of[g] = cyclic[np.argmin(load[cyclic])]
    load[fold_of[g]] += sizes[g]
  return fold_of[inverse.reshape(-1)]


def fold_training_sets(folds: ArrayLike, labels: ArrayLike) -> Tuple[np.ndarray, np.ndarray]:
  """Equal-size training index sets of the folds, and their held-out masks.

  Fold f trains on the points outside fold f. Fold sizes differ by at most one, so a complement
  may have one point more than the smallest: that point is left out (taken from the class with
  the most training points, the last such index), and all training sets have n_l - max fold size
  points. The held-out set of fold f is fold f itself.

  Args:
    folds: [n_l] int fold ids 0..F-1 (``stratified_folds``).
    labels: [n_l] int labels.

  Returns:
    (train [F, n_train] int32 sorted indices, valid [F, n_l] bool).

  Example:
    >>> fold_training_sets(np.array([0, 1, 0, 1, 0]), np.array([0, 0, 1, 1, 1]))[0]
    array([[1, 3],
           [0, 2]], dtype=int32)
  """
  folds, labels = np.asarray(folds), np.asarray(labels)
  num_folds = int(folds.max()) + 1
  n_train = folds.size - int(np.bincount(folds, minlength=num_folds).max())
  train = np.empty((num_folds, n_train), np.int32)
  for f in range(num_folds):
    idx = np.nonzero(folds != f)[0]
    while idx.size > n_train:
      classes, counts = np.unique(labels[idx], return_counts=True)
      largest = classes[np.argmax(counts)]
      idx = np.delete(idx, np.nonzero(labels[idx] == largest)[0][-1])
    train[f] = idx
  valid = folds[None, :] == np.arange(num_folds)[:, None]
  return train, valid


# ---- Grids ------------------------------------------------------------------------------------


class Axis(NamedTuple):
  """The values one grid key may take: numbers in a range, and some words ("auto", None)."""
  low: float
  high: float
  open_low: bool = False          # low itself excluded
  finite: bool = True             # inf excluded
  words: tuple = ()               # non-numbers allowed (kept as they are)
  default: Optional[list] = None  # the values when the key is left out (None: required)


_POSITIVE = Axis(0.0, np.inf, open_low=True)
_OPTIONAL = object()   # a key that is no axis unless given
# The keys of each method's grid in the axis order of ``CVResult.scores`` (the keyword names of
# its fit function). QSG: lam may be 0; split_lam (per-split corrections) is optional, None
# meaning plain QS3ORAO; the step is not searched unless given. "direct": the direct solver's
# own CV (``qsg_jax.direct.cross_validate``), QSG's objective without the DSG step.
GRID_AXES = {
    "qsg": {"lam": Axis(0.0, np.inf), "sigma": _POSITIVE, "gamma": Axis(0.0, 1.0),
            "step_size": Axis(0.0, np.inf, open_low=True, words=("auto",), default=["auto"]),
            "split_lam": Axis(0.0, np.inf, open_low=True, finite=False, words=(None,),
                              default=_OPTIONAL)},
    "direct": {"lam": Axis(0.0, np.inf), "sigma": _POSITIVE, "gamma": Axis(0.0, 1.0)},
    "samult": {"lam": _POSITIVE, "sigma": _POSITIVE, "gamma": Axis(0.0, 1.0)},
    "pnu_auc": {"lam": _POSITIVE, "sigma": _POSITIVE, "gamma": Axis(-1.0, 1.0)},
    "svorex": {"c": _POSITIVE, "sigma": _POSITIVE},
}
GRID_AXES["m_samult"], GRID_AXES["m_pnu_auc"] = GRID_AXES["samult"], GRID_AXES["pnu_auc"]
# The papers' values of lam and sigma (SVOREX: C and sigma), 2^-3..2^3.
PAPER_POWERS = 2.0 ** np.arange(-3, 4)


def _method_axes(method):
  if not isinstance(method, str) or method not in GRID_AXES:
    raise ValueError(f"unknown method {method!r:.60}; expected one of {sorted(GRID_AXES)}.")
  return GRID_AXES[method]


def paper_grid(method: str = "qsg", step_size="auto") -> dict:
  """The papers' grid (QSG-S2AUC Sec. 6.1; QS3ORAO "Experimental Setup"): lam and sigma (SVOREX:
  C and sigma) in 2^-3..2^3, gamma over the method's range in steps of 0.1 (QSG: 7 x 7 x 11 x 1
  = 539 points, with ``step_size`` ("auto" or numbers) as its own axis).

  Returns:
    Dict of 1-D NumPy arrays in the axis order of ``GRID_AXES[method]``.
  """
  axes = _method_axes(method)
  if "c" in axes:
    return {"c": PAPER_POWERS, "sigma": PAPER_POWERS}
  low = axes["gamma"].low
  grid = {"lam": PAPER_POWERS, "sigma": PAPER_POWERS,
          "gamma": np.arange(round(10 * low), 11) / 10.0}
  return dict(grid, step_size=_values(step_size)) if method == "qsg" else grid


def quick_grid(method: str = "qsg", step_size="auto") -> dict:
  """A small grid for quick runs (2 x 2 x 3; SVOREX 2 x 2). QSG (and direct): lam in
  {1e-3, 2^-3}, sigma in {2^-3, 1}, gamma in {0, 0.5, 1}, around the defaults that work on
  SGEMM."""
  axes = _method_axes(method)
  if "c" in axes:
    return {"c": np.array([1.0, 8.0]), "sigma": np.array([0.5, 2.0])}
  if method in ("qsg", "direct"):
    grid = {"lam": np.array([1e-3, 0.125]), "sigma": np.array([0.125, 1.0]),
            "gamma": np.array([0.0, 0.5, 1.0])}
    return dict(grid, step_size=_values(step_size)) if method == "qsg" else grid
  gammas = [-0.5, 0.0, 0.5] if axes["gamma"].low < 0 else [0.0, 0.5, 1.0]
  return {"lam": np.array([0.125, 1.0]), "sigma": np.array([0.5, 2.0]), "gamma": np.array(gammas)}


def _values(values):
  """1-D object array of numbers (float) and words ("auto", None) from a value or a list."""
  try:
    scalar = values is None or isinstance(values, str) or np.ndim(values) == 0
  except ValueError:   # a ragged nested list: its entries are checked below
    scalar = False
  if scalar:
    values = [values]
  out = np.empty(len(values), dtype=object)
  for i, v in enumerate(values):
    try:
      out[i] = v if v is None or isinstance(v, str) else float(v)
    except (TypeError, ValueError):   # a nested list, an object: check_grid names the key
      out[i] = np.nan
  return out


def check_grid(grid: dict, method: str = "qsg") -> dict:
  """``grid`` with every value checked, in the axis order of ``GRID_AXES[method]``.

  Optional keys left out take their default (QSG: step_size ["auto"]; split_lam is no axis
  unless given). Axes with words ("auto", None) are object arrays, the others float64.

  Raises:
    ValueError: missing or unknown keys, empty lists, values outside the key's range.
  """
  axes = _method_axes(method)
  required = [name for name, axis in axes.items() if axis.default is None]
  if not isinstance(grid, dict) or not set(required) <= set(grid) <= set(axes):
    got = sorted(grid) if isinstance(grid, dict) else type(grid).__name__
    optional = sorted(set(axes) - set(required))
    raise ValueError(f"grid for {method} must be a dict with the keys {required}"
                     f"{f' (optional: {optional})' if optional else ''}; received {got}. Start "
                     f"from quick_grid({method!r}) or paper_grid({method!r}).")
  checked = {}
  for name, axis in axes.items():
    if name not in grid and axis.default is _OPTIONAL:
      continue
    values = _values(grid.get(name, axis.default))
    numbers = [v for v in values if v not in axis.words]
    try:   # text ("1e-3") is refused as the estimators' parameters refuse it, not parsed
      numbers = np.asarray(numbers, np.float64) if not any(
          isinstance(v, (str, bytes)) for v in numbers) else np.array([np.nan])
    except (TypeError, ValueError):
      numbers = np.array([np.nan])
    above = numbers > axis.low if axis.open_low else numbers >= axis.low
    ok = above & (numbers <= axis.high) & ~np.isnan(numbers) & (np.isfinite(numbers)
                                                                 | (not axis.finite))
    if values.size == 0 or not ok.all():
      bounds = f"{'(' if axis.open_low else '['}{axis.low:g}, {axis.high:g}" + (
          ")" if np.isinf(axis.high) and axis.finite else "]")
      words = f" or {' / '.join(repr(w) for w in axis.words)}" if axis.words else ""
      raise ValueError(f"grid[{name!r}] must be a non-empty list of numbers in {bounds}{words}; "
                       f"received {grid.get(name)!r:.100}.")
    checked[name] = values if axis.words else values.astype(np.float64)
  return checked
