"""Ranking metrics: binary AUC with ties, ordinal mean AUC over the k-1 splits, MAE.

All functions are pure, jittable and O(n log n). Labels of ordinal problems are integers
``0 .. k-1`` (the papers write ``1 .. k``); binary labels are 0/1 (or -1/+1, or bool), positive
= 1.

Exact on concrete input: called on concrete arrays (NumPy, lists, JAX arrays outside ``jit``), the
AUCs compare the scores on the host in their own precision (float64 for float input, the integers
for integer input), so float64 scores that float32 would merge (1 + 1e-12 and 1, saturated
probabilities) or overflow (1e300) are ranked as ``sklearn.metrics.roc_auc_score`` ranks them.
Under ``jax.jit`` / ``vmap`` the AUCs run on the device in the scores' dtype: integers (and
bool) compared as integers, floats as float32 or wider (float64 only with ``jax_enable_x64``).

No silent wrong answer: called on concrete arrays, every metric raises ``ValueError`` for NaN or
infinite scores and for labels outside the convention (1..k labels are named: "subtract 1").
Under ``jax.jit`` / ``vmap`` values cannot be checked; there an AUC is NaN when any score it
uses is non-finite or any label lies outside 0..k-1, so NaN never turns into a number, and an AUC
is always NaN or in [0, 1]. The MAE of non-finite, negative or fractional classes is NaN there.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation


def _check_rank1(name, x):
  if np.ndim(x) != 1:   # np.ndim / np.shape read tracers too, and lists without a warning
    raise ValueError(
        f"{name} must be a vector of shape [n]; received shape {np.shape(x)}. "
        "Flatten it (x.reshape(-1)) or pass one column.")


def _check_same_length(a_name, a, b_name, b):
  if np.shape(a)[0] != np.shape(b)[0]:
    raise ValueError(
        f"{a_name} and {b_name} must have the same length; received "
        f"{np.shape(a)[0]} and {np.shape(b)[0]}.")


def _concrete(*arrays):
  """Whether every array has known values (none is a tracer under jit / vmap)."""
  return not any(validation.is_traced(a) for a in arrays)


def _host_scores(scores):
  """Concrete scores as NumPy, compared exactly: float64 for floats, integers stay integers."""
  arr = np.asarray(scores)
  if arr.dtype == bool:
    return arr.astype(np.int8)
  if np.issubdtype(arr.dtype, np.integer):
    return arr
  return arr.astype(np.float64)


def _result(value):
  """A host AUC as the scalar the jitted path returns (float32 unless ``jax_enable_x64``)."""
  return jnp.asarray(value, jnp.result_type(float))


def exact_auc(scores, positive, negative):
  """Exact Mann-Whitney AUC of NumPy ``scores`` [n] (positive vs negative masks [n]) as a Python
  float, or of every row of ``scores`` [..., n] as a float64 array; unchecked (for host loops;
  ``masked_auc`` is the checked form).

  Pairs are counted in integers (2 x won + tied = 2 x the positives' midrank sum minus
  n_P (n_P + 1), exact in float64) and divided once, so the result is the exact AUC rounded
  once; NaN when either group is empty or a row holds NaN.
  """
  scores = np.asarray(scores)
  pos, neg = scores[..., positive], scores[..., negative]
  n_pos, n_neg = pos.shape[-1], neg.shape[-1]
  both = np.concatenate([pos, neg], axis=-1)
  rows = both.reshape(int(np.prod(both.shape[:-1])), both.shape[-1])
  if n_pos == 0 or n_neg == 0:
    auc = np.full(rows.shape[0], np.nan)
  else:
    order = np.argsort(rows, axis=-1)
    ranked = np.take_along_axis(rows, order, axis=-1)
    starts = np.ones(ranked.shape, bool)                  # each tie group's first sorted entry
    starts[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    first = np.flatnonzero(starts)
    sizes = np.diff(np.append(first, starts.size))
    midrank = (first % rows.shape[1] + (sizes + 1) / 2.0)[np.cumsum(starts) - 1]   # 1-based
    rank_sum = np.sum(np.where(order < n_pos, midrank.reshape(rows.shape), 0.0), axis=-1)
    auc = (2.0 * rank_sum - n_pos * (n_pos + 1.0)) / (2.0 * n_pos * n_neg)
    auc[np.isnan(rows).any(axis=-1)] = np.nan
  return float(auc[0]) if scores.ndim == 1 else auc.reshape(scores.shape[:-1])


def _traced_masked_auc(scores, positive, negative):
  """``masked_auc`` with jnp ops, for tracers (under jit / vmap); values are not checked."""
  scores = jnp.asarray(scores)
  dtype = jnp.promote_types(scores.dtype, jnp.float32)
  # Integers are ranked as integers (float32 would merge those beyond 2^24), floats as floats.
  if scores.dtype == bool or jnp.issubdtype(scores.dtype, jnp.integer):
    scores = scores.astype(jnp.int32) if scores.dtype == bool else scores
    last = jnp.iinfo(scores.dtype).max
  else:
    scores, last = scores.astype(dtype), jnp.inf
  positive, negative = jnp.asarray(positive, bool), jnp.asarray(negative, bool)
  # Non-negatives go last (+inf, or the largest integer): capping the counts at n_neg keeps them
  # out of every positive's count, ties with the largest integer included.
  sorted_neg = jnp.sort(jnp.where(negative, scores, last))
  n_neg = jnp.sum(negative)
  n_pos = jnp.sum(positive)
  below = jnp.minimum(jnp.searchsorted(sorted_neg, scores, side="left"), n_neg)
  upto = jnp.minimum(jnp.searchsorted(sorted_neg, scores, side="right"), n_neg)
  # Per-positive fraction in [0, 1]: averaging these keeps float32 accurate for large n.
  frac = (below + 0.5 * (upto - below)).astype(dtype) / jnp.maximum(n_neg, 1).astype(dtype)
  total = jnp.sum(jnp.where(positive, frac, 0.0))
  auc = total / jnp.maximum(n_pos, 1).astype(dtype)
  finite = ~jnp.any((positive | negative) & ~jnp.isfinite(scores))
  return jnp.where((n_pos > 0) & (n_neg > 0) & finite, auc, jnp.nan)


def _check_mask(name, mask):
  """``mask`` as a bool array: bool, or concrete integers 0/1; floats are refused."""
  dtype = jnp.result_type(mask) if validation.is_traced(mask) else np.asarray(mask).dtype
  if dtype == bool:
    return mask if validation.is_traced(mask) else np.asarray(mask)
  if not jnp.issubdtype(dtype, jnp.integer):
    raise TypeError(f"{name} must be a bool mask (e.g. labels == 1); received dtype {dtype}. "
                    "Build it with a comparison.")
  if validation.is_traced(mask):
    return mask != 0
  arr = np.asarray(mask)
  bad = (arr != 0) & (arr != 1)
  if bad.any():
    row = int(np.argmax(bad))
    raise ValueError(f"{name} must be a bool mask (or 0/1); received {arr[row]} at row {row}. "
                     "For labels pass a comparison, e.g. labels > j.")
  return arr.astype(bool)


def masked_auc(scores, positive, negative):
  """AUC of the points where ``positive`` against those where ``negative`` (Mann-Whitney).

  AUC = P(f(x_p) > f(x_n)) + 1/2 P(f(x_p) = f(x_n)), computed exactly after one sort of the
  negatives: for each positive, count negatives strictly below and tied by binary search.
  Concrete scores are compared on the host in float64 (integers as integers); under jit in
  their own dtype.

  Args:
    scores: [n] float scores.
    positive: [n] bool mask of positive points (0/1 integers are accepted).
    negative: [n] bool mask of negative points, disjoint from ``positive``.

  Returns:
    Scalar AUC in [0, 1]; NaN when either group is empty, and under jit when a score of either
    group is non-finite (concrete non-finite scores raise ``ValueError``).

  Raises:
    ValueError: concrete non-finite scores, masks that overlap or hold values other than 0/1.
    TypeError: float masks.
  """
  validation.check_scores("scores", scores)
  _check_rank1("scores", scores)
  _check_rank1("positive", positive)
  _check_rank1("negative", negative)
  _check_same_length("scores", scores, "positive", positive)
  _check_same_length("scores", scores, "negative", negative)
  positive = _check_mask("positive", positive)
  negative = _check_mask("negative", negative)
  if not _concrete(scores, positive, negative):
    return _traced_masked_auc(scores, positive, negative)
  both = positive & negative
  if both.any():
    raise ValueError(f"positive and negative overlap at {int(both.sum())} points (first at row "
                     f"{int(np.argmax(both))}); a point is in one group or neither. Pass "
                     "disjoint masks, e.g. labels > j and labels <= j.")
  return _result(exact_auc(_host_scores(scores), positive, negative))


def binary_auc(scores, labels):
  """Binary AUC with ties counted 1/2; agrees with ``sklearn.metrics.roc_auc_score``.

  Concrete float64 scores are ranked in float64 (see the module docstring).

  Args:
    scores: [n] float scores, larger means more positive.
    labels: [n] labels 0/1, -1/+1 or bool; positive where ``labels > 0``. Concrete labels with
      other values (e.g. 3 classes, NaN) raise ``ValueError``.

  Returns:
    Scalar AUC in [0, 1]; NaN when one class is absent (or, under jit, a score is non-finite or a
    label is not binary).

  Raises:
    ValueError: concrete non-finite scores or non-binary labels, shapes other than [n].

  Example:
    >>> float(binary_auc(jnp.array([0.1, 0.4, 0.35, 0.8]), jnp.array([0, 0, 1, 1])))
    0.75
  """
  validation.check_scores("scores", scores)
  validation.check_binary_labels(
      labels, fix="For k ordered classes use qsg_jax.ordinal_auc(scores, labels, k).")
  _check_rank1("scores", scores)
  _check_rank1("labels", labels)
  _check_same_length("scores", scores, "labels", labels)
  if not _concrete(scores, labels):   # a label other than 0/1/-1/bool (e.g. NaN) gives NaN
    labels = jnp.asarray(labels)
    # 0/1 or -1/+1, never both conventions at once (a -1 beside 0s is no negative class).
    binary = (jnp.all((labels == 1) | (labels == 0)) | jnp.all((labels == 1) | (labels == -1)))
    return jnp.where(binary, _traced_masked_auc(scores, labels > 0, labels <= 0), jnp.nan)
  positive = np.asarray(labels) > 0
  return _result(exact_auc(_host_scores(scores), positive, ~positive))


def split_aucs(scores, labels, num_classes, mask=None):
  """AUC of each of the k-1 ordinal splits {y <= j} (negative) vs {y > j} (positive).

  Split j is scored by column j of per-split scores (``qsg_jax.split_scores``, M-SAMULT), or
  every split by the same [n] scores f(x); only the rows where ``mask`` count.

  Args:
    scores: [n] ranking scores shared by every split, or [n, k-1] per-split scores.
    labels: [n] int labels in 0..k-1 (a class may be absent; bool is 0/1).
    num_classes: k >= 2, static.
    mask: optional [n] bool, the rows to score (e.g. a held-out fold); default every row.

  Returns:
    [k-1] AUCs (ordinal paper, the terms of Eq. 2); NaN for a split with an empty side, and
    under jit for every split when a score it uses is non-finite or a label lies outside 0..k-1.

  Raises:
    ValueError: concrete non-finite scores, labels outside 0..k-1 (1..k: "subtract 1"), k < 2,
      shapes other than [n] / [n, k-1].

  Example:
    >>> split_aucs(np.array([[0., 0.], [1., 0.], [1., 1.]]), np.array([0, 1, 2]), 3).tolist()
    [1.0, 1.0]
  """
  num_classes = validation.check_num_classes(num_classes)
  validation.check_scores("scores", scores, ndim=np.ndim(scores))
  validation.check_class_labels(labels, num_classes)
  _check_rank1("labels", labels)
  k1, n = num_classes - 1, np.shape(labels)[0]
  if np.ndim(scores) == 1:
    _check_same_length("scores", scores, "labels", labels)
  elif np.shape(scores) != (n, k1):
    raise ValueError(f"scores must have shape [n] or [n, k-1] = [{n}, {k1}]; received "
                     f"{np.shape(scores)}. Pass num_classes equal to the model's k.")
  if mask is not None and np.shape(mask) != (n,):
    raise ValueError(f"mask must have shape [{n}] (one per label); received {np.shape(mask)}.")
  mask = np.ones(n, bool) if mask is None else _check_mask("mask", mask)
  if not _concrete(scores, labels, mask):
    return _traced_split_aucs(scores, labels, mask, num_classes)
  host_scores, labels = _host_scores(scores), np.asarray(labels).astype(np.int64)
  column = lambda j: host_scores if host_scores.ndim == 1 else host_scores[:, j]
  return _result([exact_auc(column(j), mask & (labels > j), mask & (labels <= j))
                  for j in range(k1)])


@functools.partial(jax.jit, static_argnames="num_classes")
def _traced_split_aucs(scores, labels, mask, num_classes):
  labels = labels.astype(jnp.int32) if labels.dtype == bool else labels
  columns = jnp.broadcast_to(jnp.reshape(scores, (scores.shape[0], -1)),
                             (scores.shape[0], num_classes - 1))
  aucs = jax.vmap(lambda s, j: _traced_masked_auc(s, mask & (labels > j), mask & (labels <= j)),
                  in_axes=(1, 0))(columns, jnp.arange(num_classes - 1))
  in_range = jnp.all((labels >= 0) & (labels < num_classes) & (labels == jnp.round(labels)))
  return jnp.where(in_range, aucs, jnp.nan)


def ordinal_auc(scores, labels, num_classes):
  """Mean AUC over the k-1 ordinal splits (ordinal paper, Eq. 2); k = 2 is binary AUC.

  Args:
    scores: [n] ranking scores f(x), or [n, k-1] per-split scores (column j for split j).
    labels: [n] int labels in 0..k-1 (bool is 0/1).
    num_classes: k >= 2.

  Returns:
    Scalar mean AUC in [0, 1], or NaN (a split with an empty side; under jit, as
    ``split_aucs``).

  Raises:
    ValueError: as ``split_aucs``.
  """
  return jnp.mean(split_aucs(scores, labels, num_classes))


def _check_classes(name, values, num_classes):
  """Raises unless concrete ``values`` are whole numbers in 0..k-1 (k None: >= 0)."""
  if validation.is_traced(values):
    return
  arr = np.asarray(values)
  if arr.dtype == bool or arr.size == 0:
    return
  fractional = np.mod(arr, 1) != 0
  if fractional.any():
    row = int(np.argmax(fractional))
    raise ValueError(f"{name} must be classes 0..k-1 (e.g. from qsg_jax.predict_classes), not "
                     f"scores; received {float(arr[row]):.6g} at row {row}.")
  top = None if num_classes is None else num_classes - 1
  bad = (arr < 0) if top is None else ((arr < 0) | (arr > top))
  if bad.any():
    row = int(np.argmax(bad))
    hint = (" (predict_classes gives -1 where a score is NaN: the model diverged)"
            if arr[row] == -1 else "")
    expected = "0..k-1" if top is None else f"0..{top} (num_classes={num_classes})"
    raise ValueError(f"{name} must be classes {expected}; received {arr[row].item()} at row "
                     f"{row}{hint}.")


def mean_absolute_error(predicted, labels, num_classes=None):
  """Mean absolute difference between predicted and true ordinal classes.

  Args:
    predicted: [n] predicted classes, whole numbers in 0..k-1 (``qsg_jax.predict_classes``), not
      scores.
    labels: [n] true classes in 0..k-1.
    num_classes: optional k; when given, classes >= k are refused too.

  Returns:
    Scalar MAE (float); NaN under jit when an entry is non-finite, negative or fractional.

  Raises:
    ValueError: concrete non-finite, fractional or negative entries (or >= k), shapes other than
      [n].
  """
  validation.check_scores("predicted", predicted, ndim=None, meaning=(
      "a predicted class is a whole number 0..k-1 (predict_classes; a NaN score's class is -1 "
      f"under jit): pass classes, not scores. {validation.diverged('predict')}"))
  validation.check_scores("labels", labels, ndim=None,
                          meaning="every point needs a class 0..k-1: drop the rows without one.")
  _check_rank1("predicted", predicted)
  _check_rank1("labels", labels)
  _check_same_length("predicted", predicted, "labels", labels)
  if num_classes is not None:
    num_classes = validation.check_num_classes(num_classes)
  _check_classes("predicted", predicted, num_classes)
  _check_classes("labels", labels, num_classes)
  if not (validation.is_traced(predicted) or validation.is_traced(labels)):
    # Concrete classes (checked whole, >= 0 above) differ exactly in float64: float32 would
    # round 2**24 + 1 to 2**24.
    if np.size(labels) == 0:
      raise ValueError("predicted and labels are empty; the MAE needs at least one point.")
    difference = np.asarray(predicted, np.float64) - np.asarray(labels, np.float64)
    return jnp.asarray(np.mean(np.abs(difference)), jnp.float32)
  predicted = jnp.asarray(predicted).astype(jnp.float32)
  labels = jnp.asarray(labels).astype(jnp.float32)
  mae = jnp.mean(jnp.abs(predicted - labels))
  both = jnp.concatenate([predicted, labels])
  valid = jnp.all((both >= 0) & (both == jnp.round(both)))
  if num_classes is not None:
    valid &= jnp.all(both < num_classes)
  return jnp.where(valid, mae, jnp.nan)
