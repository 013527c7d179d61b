"""The ``Dataset`` record every loader returns, and the finiteness check applied to it."""

import dataclasses
from typing import Optional

import numpy as np

from qsg_jax import _validation as validation

TASKS = ("binary", "ordinal", "regression")


@dataclasses.dataclass(frozen=True, eq=False)
class Dataset:
  """A loaded dataset: features, targets, and the official test split when the source has one.

  Attributes:
    name: registry name (``"sgemm"``).
    task: ``"binary"`` | ``"ordinal"`` | ``"regression"``.
    x: float64 [n, d] features, categoricals one-hot encoded, all finite, not scaled.
    y: [n] targets: binary int {0, 1} with 1 = positive class (``description`` says which raw
      label); ordinal int 0..k-1; regression float64.
    x_test: float64 [n_test, d] official test features (ijcnn1.t, dota2Test.csv, ...), or None.
    y_test: [n_test] official test targets, or None.
    feature_names: d column names.
    description: source, label mapping and preprocessing, plus the files read.
    num_classes: k for binary (2) and ordinal tasks, None for regression.
    bayes_score: float64 [n] Bayes-optimal ranking score f*(x) (synthetic data only), or None.
    bayes_score_test: float64 [n_test] f*(x_test) (synthetic data only), or None.
  """
  name: str
  task: str
  x: np.ndarray
  y: np.ndarray
  x_test: Optional[np.ndarray] = None
  y_test: Optional[np.ndarray] = None
  feature_names: tuple = ()
  description: str = ""
  num_classes: Optional[int] = None
  bayes_score: Optional[np.ndarray] = None
  bayes_score_test: Optional[np.ndarray] = None

  @property
  def num_features(self):
    return self.x.shape[1]

  def __repr__(self):
    test = "" if self.x_test is None else f", x_test={self.x_test.shape}"
    return (f"Dataset(name={self.name!r}, task={self.task!r}, x={self.x.shape}{test}, "
            f"num_classes={self.num_classes})")


def as_numeric(name, x):
  """``x`` as a real NumPy array; pandas nullable columns (Int64, Float64, boolean) become float64
  with NaN where a value is missing (pd.NA), so that finiteness checks see it.

  Args:
    name: what to call the array in messages.
    x: array-like, pandas Series / DataFrame included (not scipy sparse).

  Raises:
    TypeError: scipy sparse input, strings, objects or complex numbers.
  """
  if type(x).__module__.startswith("scipy.sparse"):
    raise TypeError(f"{name} is a scipy sparse matrix; pass {name}.toarray().")
  validation.refuse_masked(name, x)
  validation.refuse_dates(x, name)   # NumPy would read them as nanoseconds
  dtypes = getattr(x, "dtypes", None)
  dtypes = list(dtypes) if hasattr(dtypes, "__iter__") else [getattr(x, "dtype", None)]
  if hasattr(x, "to_numpy") and any(d is not None and not isinstance(d, np.dtype)
                                    for d in dtypes):
    try:   # pandas extension dtypes: nullable numbers, categoricals of numbers
      return x.to_numpy(dtype=np.float64, na_value=np.nan)
    except (TypeError, ValueError):
      raise TypeError(f"{name} has non-numeric columns (dtypes {sorted(set(map(str, dtypes)))});"
                      " encode categorical columns as numbers (e.g. one-hot) first.") from None
  arr = np.asarray(x)
  if arr.dtype == bool:
    return arr
  if not np.issubdtype(arr.dtype, np.number) or np.issubdtype(arr.dtype, np.complexfloating):
    raise TypeError(f"{name} must be real numbers; received dtype {arr.dtype}. Encode "
                    "categorical columns as numbers (e.g. one-hot) first.")
  return arr


def check_finite(name, x):
  """Raises ``ValueError`` if ``x`` holds NaN, missing (pd.NA) or infinite values (count, row).

  Args:
    name: what to call the array in the message (``"sgemm x"``).
    x: array-like [n, d] or [n] (pandas nullable columns included).

  Returns:
    ``x`` as a NumPy array (``as_numeric``).
  """
  arr = as_numeric(name, x)
  bad = ~np.isfinite(arr)
  if bad.any():
    rows = np.nonzero(bad.reshape(arr.shape[0], -1).any(axis=1))[0]
    raise ValueError(
        f"{name} contains {int(bad.sum())} NaN or infinite values in {rows.size} rows (first at "
        f"row {int(rows[0])}). Impute or drop those rows (or fix the source file) before use; "
        "a missing value (pd.NA) counts as NaN.")
  return arr


def make_dataset(name, task, x, y, *, x_test=None, y_test=None, feature_names=None,
                 description="", num_classes=None, bayes_score=None, bayes_score_test=None):
  """Builds a ``Dataset`` after checking shapes, dtypes and finiteness.

  Raises:
    ValueError: unknown task, shape mismatches, non-finite features, bad labels.
  """
  if task not in TASKS:
    raise ValueError(f"task must be one of {TASKS}; received {task!r}.")
  x = np.ascontiguousarray(check_finite(f"{name} x", x), dtype=np.float64)
  if x.ndim != 2:
    raise ValueError(f"{name} x must have shape [n, d]; received {x.shape}.")
  y = _targets(name, "y", task, y, x.shape[0])
  if (x_test is None) != (y_test is None):
    raise ValueError(f"{name}: x_test and y_test must both be given or both be None.")
  if x_test is not None:
    x_test = np.ascontiguousarray(check_finite(f"{name} x_test", x_test), dtype=np.float64)
    if x_test.ndim != 2 or x_test.shape[1] != x.shape[1]:
      raise ValueError(f"{name} x_test has shape {x_test.shape}; expected [n_test, "
                       f"{x.shape[1]}] like x.")
    y_test = _targets(name, "y_test", task, y_test, x_test.shape[0])
  names = tuple(str(n) for n in feature_names) if feature_names is not None else tuple(
      f"f{i + 1}" for i in range(x.shape[1]))
  if len(names) != x.shape[1]:
    raise ValueError(f"{name}: {len(names)} feature names for {x.shape[1]} columns.")
  if task == "binary":
    num_classes = 2
  elif task == "ordinal" and num_classes is None:
    num_classes = int(max(y.max(), -1 if y_test is None else y_test.max())) + 1
  return Dataset(name=name, task=task, x=x, y=y, x_test=x_test, y_test=y_test,
                 feature_names=names, description=description,
                 num_classes=None if task == "regression" else int(num_classes),
                 bayes_score=bayes_score, bayes_score_test=bayes_score_test)


def _targets(name, what, task, y, n):
  y = as_numeric(f"{name} {what}", y)
  if y.shape != (n,):
    raise ValueError(f"{name} {what} must have shape [{n}] (one per row); received {y.shape}.")
  if task == "regression":
    return check_finite(f"{name} {what}", y).astype(np.float64)
  if y.size and (not np.all(np.isfinite(y)) or not np.all(np.equal(np.mod(y, 1), 0))
                 or y.min() < 0):
    raise ValueError(f"{name} {what} must hold integer classes >= 0 for a {task} task.")
  y = y.astype(np.int64)
  if task == "binary" and y.size and y.max() > 1:
    raise ValueError(f"{name} {what} must be 0/1 for a binary task; received max {y.max()}.")
  return y
