"""What every cross-validation in the package shares: stratified folds, the result type, means.

``qsg_jax.model_selection`` (the QSG methods) and ``qsg_jax.baselines.cross_validate`` (the exact
baselines) both split with ``stratified_folds`` (the same seed gives the same folds, so methods
can be compared fold by fold) and return a ``CVResult``.
"""

from typing import NamedTuple, Tuple

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
  grid: dict               # name -> 1-D array, in the axis order of ``scores``.


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


def check_num_folds(num_folds: int) -> int:
  """F as a Python int >= 2 (a whole number, never truncated), else a clear error."""
  try:
    return validation.check_count("num_folds", num_folds, minimum=2)
  except (TypeError, ValueError) as error:
    raise type(error)(f"num_folds must be a whole number >= 2; received {num_folds!r:.60}. Pass "
                      "e.g. num_folds=5 (fractions are never rounded).") from None


def check_seed(seed: int) -> int:
  """The fold seed as a Python int >= 0, else a clear error (None would not repeat the folds)."""
  if seed is None:
    raise TypeError("seed must be a whole number >= 0; received None, which would draw "
                    "different folds on every call. Pass e.g. seed=0.")
  try:
    return validation.check_count("seed", seed, minimum=0)
  except (TypeError, ValueError) as error:
    raise type(error)(f"seed must be a whole number >= 0; received {seed!r:.60}. Pass e.g. "
                      "seed=0.") from None


def check_fold_labels(labels: ArrayLike) -> np.ndarray:
  """``labels`` as an int64 vector [n] of finite whole numbers, else a clear error.

  Bool labels count as 0/1. NaN, inf, fractions (2.5) and non-numbers (strings) are refused:
  a NaN would otherwise form a class of its own or be left without a fold.
  """
  if type(labels).__module__.startswith("scipy.sparse"):
    raise TypeError("labels is a scipy sparse matrix; pass a dense vector (labels.toarray()).")
  arr = np.asarray(labels)
  if arr.ndim != 1 or arr.size == 0:
    raise ValueError(f"labels must be a non-empty vector [n]; received shape {arr.shape}.")
  if arr.dtype == bool:
    return arr.astype(np.int64)
  if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
    raise TypeError(f"labels must be whole numbers (class ids); received dtype {arr.dtype}. Map "
                    "the classes to 0..k-1 first, e.g. np.unique(y, return_inverse=True)[1].")
  validation.check_whole_numbers(
      arr, "labels", "whole numbers (class ids)",
      non_finite_fix="Every point needs a class to get a fold: drop unlabeled rows before "
      "splitting into folds.", fraction_fix="Map the classes to 0..k-1 first.")
  return arr.astype(np.int64)


def stratified_folds(labels: ArrayLike, num_folds: int, seed: int = 0) -> np.ndarray:
  """Fold index 0..F-1 of every labeled point; each class is shuffled and dealt in turn.

  Args:
    labels: [n] labels: whole numbers or bool (each distinct value is a class); NaN, fractions
      and strings are refused.
    num_folds: F, a whole number >= 2, at most the size of the smallest class.
    seed: whole number >= 0 seeding the shuffle (None is refused: the folds must repeat).

  Returns:
    [n] int64 fold ids; each fold holds every class and fold sizes differ by at most 1.

  Raises:
    TypeError, ValueError: bad labels, num_folds or seed (named in the message).

  Example:
    >>> stratified_folds(np.array([0, 0, 1, 1]), 2, seed=0).tolist()
    [0, 1, 0, 1]
  """
  num_folds = check_num_folds(num_folds)
  seed = check_seed(seed)
  labels = check_fold_labels(labels)
  classes, counts = np.unique(labels, return_counts=True)
  if counts.min() < num_folds:
    raise ValueError(f"num_folds must be >= 2 and at most the smallest labeled class size "
                     f"{int(counts.min())} (class counts [{validation.summarize(counts.tolist())}]"
                     f"); received {num_folds}. Use fewer folds or label more points.")
  rng = np.random.default_rng(seed)
  folds = np.full(labels.shape[0], -1, np.int64)
  dealt = 0
  for c in classes:
    idx = rng.permutation(np.nonzero(labels == c)[0])
    folds[idx] = (dealt + np.arange(idx.size)) % num_folds
    dealt += idx.size
  return folds


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
