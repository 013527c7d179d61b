"""Ranking metrics: binary AUC with ties, ordinal mean AUC over the k-1 splits, MAE.

All functions are pure, jittable and O(n log n). Labels of ordinal problems are integers
``0 .. k-1`` (the papers write ``1 .. k``); binary labels are 0/1 (or -1/+1, or bool), positive
= 1.

No silent wrong answer: called on concrete arrays, every metric raises ``ValueError`` for NaN or
infinite scores and for labels outside the convention (1..k labels are named: "subtract 1").
Under ``jax.jit`` / ``vmap`` values cannot be checked; there an AUC is NaN when any score it
uses is non-finite or any label lies outside 0..k-1, so NaN never turns into a number, and an AUC
is always NaN or in [0, 1]. The MAE of non-finite predictions is NaN.
"""

import functools

import jax
import jax.numpy as jnp

from qsg_jax import _validation as validation


def _check_rank1(name, x):
  if jnp.ndim(x) != 1:
    raise ValueError(
        f"{name} must be a vector of shape [n]; received shape {jnp.shape(x)}. "
        "Flatten it (x.reshape(-1)) or pass one column.")


def _check_same_length(a_name, a, b_name, b):
  if jnp.shape(a)[0] != jnp.shape(b)[0]:
    raise ValueError(
        f"{a_name} and {b_name} must have the same length; received "
        f"{jnp.shape(a)[0]} and {jnp.shape(b)[0]}.")


def masked_auc(scores, positive, negative):
  """AUC of the points where ``positive`` against those where ``negative`` (Mann-Whitney).

  AUC = P(f(x_p) > f(x_n)) + 1/2 P(f(x_p) = f(x_n)), computed exactly after one sort of the
  negatives: for each positive, count negatives strictly below and tied by binary search.

  Args:
    scores: [n] float scores.
    positive: [n] bool mask of positive points.
    negative: [n] bool mask of negative points (disjoint from ``positive``).

  Returns:
    Scalar AUC in [0, 1]; NaN when either group is empty, and under jit when a score of either
    group is non-finite (concrete non-finite scores raise ``ValueError``).
  """
  validation.check_scores("scores", scores)
  _check_rank1("scores", scores)
  _check_rank1("positive", positive)
  _check_rank1("negative", negative)
  _check_same_length("scores", scores, "positive", positive)
  _check_same_length("scores", scores, "negative", negative)
  scores = jnp.asarray(scores)
  dtype = jnp.promote_types(scores.dtype, jnp.float32)
  scores = scores.astype(dtype)
  # Non-negatives go to +inf: they sort last and never tie with a finite score.
  sorted_neg = jnp.sort(jnp.where(negative, scores, jnp.inf))
  below = jnp.searchsorted(sorted_neg, scores, side="left")
  upto = jnp.searchsorted(sorted_neg, scores, side="right")
  n_neg = jnp.sum(negative)
  n_pos = jnp.sum(positive)
  # Per-positive fraction in [0, 1]: averaging these keeps float32 accurate for large n.
  frac = (below + 0.5 * (upto - below)).astype(dtype) / jnp.maximum(n_neg, 1).astype(dtype)
  total = jnp.sum(jnp.where(positive, frac, 0.0))
  auc = total / jnp.maximum(n_pos, 1).astype(dtype)
  finite = ~jnp.any((positive | negative) & ~jnp.isfinite(scores))
  return jnp.where((n_pos > 0) & (n_neg > 0) & finite, auc, jnp.nan)


def binary_auc(scores, labels):
  """Binary AUC with ties counted 1/2; agrees with ``sklearn.metrics.roc_auc_score``.

  Args:
    scores: [n] float scores, larger means more positive.
    labels: [n] labels 0/1, -1/+1 or bool; positive where ``labels > 0``. Concrete labels with
      other values (e.g. 3 classes, NaN) raise ``ValueError``.

  Returns:
    Scalar AUC in [0, 1]; NaN when one class is absent (or, under jit, a score is non-finite).

  Raises:
    ValueError: concrete non-finite scores or non-binary labels.

  Example:
    >>> float(binary_auc(jnp.array([0.1, 0.4, 0.35, 0.8]), jnp.array([0, 0, 1, 1])))
    0.75
  """
  validation.check_scores("scores", scores)
  validation.check_binary_labels(labels)
  labels = jnp.asarray(labels)
  positive = labels > 0
  return masked_auc(scores, positive, ~positive)


def ordinal_auc_per_split(scores, labels, num_classes):
  """AUC of each of the k-1 splits {y <= j} (negative) vs {y > j} (positive).

  Args:
    scores: [n] float ranking scores f(x).
    labels: [n] int labels in 0..k-1 (a class may be absent).
    num_classes: k >= 2, static.

  Returns:
    [k-1] AUCs (ordinal paper, the terms of Eq. 2); NaN for a split with an empty side, and
    under jit for every split when a score is non-finite or a label lies outside 0..k-1.

  Raises:
    ValueError: concrete non-finite scores, labels outside 0..k-1 (1..k: "subtract 1"), k < 2.
  """
  num_classes = validation.check_num_classes(num_classes)
  validation.check_scores("scores", scores)
  validation.check_class_labels(labels, num_classes)
  return _ordinal_auc_per_split(scores, labels, num_classes)


@functools.partial(jax.jit, static_argnames="num_classes")
def _ordinal_auc_per_split(scores, labels, num_classes):
  _check_rank1("labels", labels)
  splits = jnp.arange(num_classes - 1)
  aucs = jax.vmap(lambda j: masked_auc(scores, labels > j, labels <= j))(splits)
  in_range = jnp.all((labels >= 0) & (labels < num_classes) & (labels == jnp.round(labels)))
  return jnp.where(in_range, aucs, jnp.nan)


def ordinal_auc(scores, labels, num_classes):
  """Mean AUC over the k-1 ordinal splits (ordinal paper, Eq. 2); k = 2 is binary AUC.

  Args:
    scores: [n] float ranking scores f(x).
    labels: [n] int labels in 0..k-1.
    num_classes: k >= 2.

  Returns:
    Scalar mean AUC in [0, 1], or NaN (a split with an empty side; under jit, as
    ``ordinal_auc_per_split``).

  Raises:
    ValueError: as ``ordinal_auc_per_split``.
  """
  return jnp.mean(ordinal_auc_per_split(scores, labels, num_classes))


def mean_absolute_error(predicted, labels):
  """Mean absolute difference between predicted and true ordinal classes.

  Args:
    predicted: [n] int predicted classes.
    labels: [n] int true classes.

  Returns:
    Scalar MAE (float); NaN under jit when an entry is non-finite.

  Raises:
    ValueError: concrete non-finite entries.
  """
  validation.check_scores("predicted", predicted)
  validation.check_scores("labels", labels)
  _check_rank1("predicted", predicted)
  _check_rank1("labels", labels)
  _check_same_length("predicted", predicted, "labels", labels)
  diff = jnp.asarray(predicted).astype(jnp.float32) - jnp.asarray(labels).astype(jnp.float32)
  return jnp.mean(jnp.abs(diff))
