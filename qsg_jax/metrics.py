"""Ranking metrics: binary AUC with ties, ordinal mean AUC over the k-1 splits, MAE.

All functions are pure, jittable and O(n log n). Labels of ordinal problems are integers
``0 .. k-1`` (the papers write ``1 .. k``).
"""

import functools

import jax
import jax.numpy as jnp


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
    Scalar AUC; NaN when either group is empty.
  """
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
  return jnp.where((n_pos > 0) & (n_neg > 0), auc, jnp.nan)


def binary_auc(scores, labels):
  """Binary AUC with ties counted 1/2; agrees with ``sklearn.metrics.roc_auc_score``.

  Args:
    scores: [n] float scores, larger means more positive.
    labels: [n] labels; positive where ``labels > 0`` (so {0, 1} and {-1, +1} both work).

  Returns:
    Scalar AUC; NaN when one class is absent.

  Example:
    >>> float(binary_auc(jnp.array([0.1, 0.4, 0.35, 0.8]), jnp.array([0, 0, 1, 1])))
    0.75
  """
  labels = jnp.asarray(labels)
  positive = labels > 0
  return masked_auc(scores, positive, ~positive)


@functools.partial(jax.jit, static_argnames="num_classes")
def ordinal_auc_per_split(scores, labels, num_classes):
  """AUC of each of the k-1 splits {y <= j} (negative) vs {y > j} (positive).

  Args:
    scores: [n] float ranking scores f(x).
    labels: [n] int labels in 0..k-1.
    num_classes: k, static.

  Returns:
    [k-1] AUCs (ordinal paper, the terms of Eq. 2); NaN for a split with an empty side.
  """
  _check_rank1("labels", labels)
  splits = jnp.arange(num_classes - 1)
  return jax.vmap(lambda j: masked_auc(scores, labels > j, labels <= j))(splits)


def ordinal_auc(scores, labels, num_classes):
  """Mean AUC over the k-1 ordinal splits (ordinal paper, Eq. 2); k = 2 is binary AUC.

  Args:
    scores: [n] float ranking scores f(x).
    labels: [n] int labels in 0..k-1.
    num_classes: k.

  Returns:
    Scalar mean AUC.
  """
  return jnp.mean(ordinal_auc_per_split(scores, labels, num_classes))


def mean_absolute_error(predicted, labels):
  """Mean absolute difference between predicted and true ordinal classes.

  Args:
    predicted: [n] int predicted classes.
    labels: [n] int true classes.

  Returns:
    Scalar MAE (float).
  """
  _check_rank1("predicted", predicted)
  _check_rank1("labels", labels)
  _check_same_length("predicted", predicted, "labels", labels)
  diff = jnp.asarray(predicted).astype(jnp.float32) - jnp.asarray(labels).astype(jnp.float32)
  return jnp.mean(jnp.abs(diff))
