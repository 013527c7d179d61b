"""The semi-supervised AUC risk of a mini-batch and its gradient with respect to the scores.

Subproblem j (of k-1) splits the classes into negatives {0..j} and positives {j+1..k-1}
(0-based). Its risk on a mini-batch (ordinal paper, Eq. 7) is

    R^j = gamma_j R_PN^j + (1 - gamma_j) (R_PU^j + R_NU^j - 1/2),
    R_PN^j = sum_{a, b} P_j(a) N_j(b) l(f_a, f_b),
    R_PU^j = sum_a P_j(a) mean_u l(f_a, f_u),       R_NU^j = sum_b N_j(b) mean_u l(f_u, f_b),

where P_j and N_j are weights over labeled slots summing to one: a slot of class c gets
``share_j(c) / (slots of class c)`` with ``share_j(c) = n_c / sum_{c' on its side} n_c'``
(the class's share of the union, which keeps the estimate unbiased when classes differ in size).
The total risk is the mean over subproblems (Eq. 8); its binary case (k = 2) is QSG-S2AUC's Eq. (7).

The gradient with respect to every score is written with the six derivatives l1..l6 (Eq. 10):
positives collect gamma l1 + (1-gamma) l3, negatives gamma l2 + (1-gamma) l6, unlabeled points
(1-gamma)(l4 + l5). Tests compare it with ``jax.grad`` of ``minibatch_risk``.
"""

import functools
from typing import Optional, Tuple

import chex
import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from qsg_jax.engine import losses as losses_lib
from qsg_jax.engine.losses import LossLike
from qsg_jax.numerics import HIGHEST


@jax.jit   # one program where called outside jit (the auto step's set-up), not one per op
def subproblem_weights(slot_classes: ArrayLike,
                       class_counts: ArrayLike) -> Tuple[jax.Array, jax.Array]:
  """Per-slot weights P_j (positives) and N_j (negatives) of every subproblem.

  Args:
    slot_classes: [S] int class of each labeled slot; a slot of class k (padding,
      ``loop.init``'s ``num_labeled``) weighs 0.
    class_counts: [k] number of labeled points per class in the whole labeled set (n_c).

  Returns:
    (pos_w, neg_w), each [k-1, S]; every row sums to 1.
  """
  k = class_counts.shape[0]
  counts = class_counts.astype(jnp.float32)
  slots_per_class = jnp.bincount(slot_classes, length=k).astype(jnp.float32)
  per_slot = jnp.where(slot_classes < k, 1.0 / slots_per_class[slot_classes], 0.0)   # [S]
  j = jnp.arange(k - 1)[:, None]                                       # [k-1, 1]
  c = jnp.arange(k)[None, :]                                           # [1, k]
  is_pos = c > j                                                       # [k-1, k]
  n_pos = jnp.sum(jnp.where(is_pos, counts, 0.0), axis=1, keepdims=True)
  n_neg = jnp.sum(jnp.where(is_pos, 0.0, counts), axis=1, keepdims=True)
  share_pos = jnp.where(is_pos, counts[None, :] / n_pos, 0.0)           # [k-1, k]
  share_neg = jnp.where(is_pos, 0.0, counts[None, :] / n_neg)
  per_slot = per_slot[None, :]
  return share_pos[:, slot_classes] * per_slot, share_neg[:, slot_classes] * per_slot


def subproblem_risk(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike, pos_w: ArrayLike,
                    neg_w: ArrayLike, gamma: ArrayLike) -> jax.Array:
  """Mini-batch risk R^j of one subproblem (Eq. 7), written with explicit pair sums.

  Args:
    loss: name or ``PairwiseLoss``.
    f_l: [S] scores of the labeled slots.
    f_u: [B] scores of the unlabeled mini-batch.
    pos_w: [S] weights P_j.
    neg_w: [S] weights N_j.
    gamma: scalar trade-off gamma_j.

  Returns:
    Scalar risk.
  """
  loss = losses_lib.get_loss(loss)
  dot = functools.partial(jnp.matmul, precision=HIGHEST)
  r_pn = dot(dot(pos_w, loss.value(f_l[:, None], f_l[None, :])), neg_w)
  r_pu = dot(pos_w, jnp.mean(loss.value(f_l[:, None], f_u[None, :]), axis=1))
  r_nu = dot(jnp.mean(loss.value(f_u[:, None], f_l[None, :]), axis=0), neg_w)
  return gamma * r_pn + (1.0 - gamma) * (r_pu + r_nu - 0.5)


def minibatch_risk(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike, pos_w: ArrayLike,
                   neg_w: ArrayLike, gamma: ArrayLike) -> jax.Array:
  """Mean over the k-1 subproblems of ``subproblem_risk`` (Eq. 8); gamma is [k-1]."""
  risks = jax.vmap(subproblem_risk, in_axes=(None, None, None, 0, 0, 0))(
      loss, f_l, f_u, pos_w, neg_w, gamma)
  return jnp.mean(risks)


def _unlabeled_total(x, axis_name):
  """Sum over the unlabeled points of every device (identity on one device)."""
  return x if axis_name is None else jax.lax.psum(x, axis_name)


def subproblem_score_grads(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike, pos_w: ArrayLike,
                           neg_w: ArrayLike, gamma: ArrayLike,
                           axis_name: Optional[str] = None) -> Tuple[jax.Array, jax.Array]:
  """Gradient of ``subproblem_risk`` in the scores, from the six derivatives l1..l6.

  Args:
    loss: name or ``PairwiseLoss``.
    f_l: [S] labeled slot scores.
    f_u: [B] unlabeled scores (this device's share when ``axis_name`` is set).
    pos_w: [S] weights P_j.
    neg_w: [S] weights N_j.
    gamma: scalar gamma_j.
    axis_name: mesh axis the unlabeled mini-batch is split over, or None.

  Returns:
    (g_l [S], g_u [B]).
  """
  num_u = _unlabeled_total(f_u.shape[0], axis_name)
  d = losses_lib.subproblem_derivatives(loss, f_l, f_u)                 # Eq. (10)
  dot = functools.partial(jnp.matmul, precision=HIGHEST)
  if losses_lib.get_loss(loss) is losses_lib.HINGE:   # d.l1, d.l2 unused: XLA drops them
    g_pn = hinge_pair_sums(f_l, pos_w, neg_w)
  else:
    g_pn = pos_w * dot(d.l1, neg_w) + neg_w * dot(pos_w, d.l2)
  mean_l3 = _unlabeled_total(jnp.sum(d.l3, axis=1), axis_name) / num_u
  mean_l6 = _unlabeled_total(jnp.sum(d.l6, axis=0), axis_name) / num_u
  g_l_unl = pos_w * mean_l3 + neg_w * mean_l6
  g_u = (dot(pos_w, d.l4) + dot(d.l5, neg_w)) / num_u
  return gamma * g_pn + (1.0 - gamma) * g_l_unl, (1.0 - gamma) * g_u


def hinge_pair_sums(f_l: ArrayLike, pos_w: ArrayLike, neg_w: ArrayLike) -> jax.Array:
  """[S] P(a) sum_b N(b) l1(f_a, f_b) + N(a) sum_b P(b) l2(f_b, f_a) of the hinge loss, by sorting:
  O(S log S) instead of the O(S^2) pair sums, with the same pairs counted.

  l1(u, v) = -l2(u, v) = -1{1 - u + v > 0}, and in floating point fl(1 - u) + v > 0 exactly when
  v > -fl(1 - u) = fl(u - 1): the first sum is minus the weight N of the slots b scoring above
  fl(f_a - 1) (a suffix sum over the scores in ascending order, found by binary search), the
  second the weight P of the slots b with fl(f_b - 1) < f_a (a prefix sum; fl(f_b - 1) is
  ascending in that order too). Ties and kinks are counted as the pair sums count them.
  """
  order = jnp.argsort(f_l)
  ascending = f_l[order]
  zero = jnp.zeros(1, f_l.dtype)
  neg_from = jnp.concatenate([jnp.cumsum(neg_w[order][::-1])[::-1], zero])   # [S + 1] suffixes
  pos_until = jnp.concatenate([zero, jnp.cumsum(pos_w[order])])             # [S + 1] prefixes
  above = jnp.searchsorted(ascending, f_l - 1.0, side="right")    # first slot scoring above
  below = jnp.searchsorted(ascending - 1.0, f_l, side="left")     # slots with fl(f_b - 1) < f_a
  return -pos_w * neg_from[above] + neg_w * pos_until[below]


def _subproblem_grads(loss: LossLike):
  """``subproblem_score_grads`` for ``loss``, as a function of (f_l, f_u, pos_w, neg_w, gamma,
  axis_name): the O(S + B) closed form for the squared loss, the pair sums for any other (the
  hinge's labeled pairs by sorting, ``hinge_pair_sums``)."""
  if losses_lib.get_loss(loss) is losses_lib.SQUARED:
    return squared_subproblem_score_grads
  return lambda *args: subproblem_score_grads(loss, *args)


def split_score_grads(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike,
                      g_l: Optional[ArrayLike], g_u: Optional[ArrayLike], pos_w: ArrayLike,
                      neg_w: ArrayLike, gamma: ArrayLike,
                      axis_name: Optional[str] = None) -> Tuple[jax.Array, jax.Array]:
  """Per-split score gradients dR^j/ds at the per-split scores s_j = f + g_j (or f).

  The gradient of ``minibatch_risk`` in f is the mean of this over j (``score_grads``); with
  per-split corrections, the gradient of ``split_minibatch_risk`` in the scores of g_j is this
  times 1/(k-1). The squared loss uses the O(S + B) closed form
  (``squared_subproblem_score_grads``), other losses the pair sums of ``subproblem_score_grads``
  (the hinge's labeled pairs in O(S log S), ``hinge_pair_sums``).

  Args:
    loss: name or ``PairwiseLoss``.
    f_l: [S] shared labeled slot scores.
    f_u: [B] shared unlabeled scores (this device's share when ``axis_name`` is set).
    g_l: [k-1, S] labeled corrections, or None (every split scored by f).
    g_u: [k-1, B] unlabeled corrections, or None.
    pos_w: [k-1, S].
    neg_w: [k-1, S].
    gamma: [k-1].
    axis_name: mesh axis the unlabeled mini-batch is split over, or None.

  Returns:
    (d_l [k-1, S], d_u [k-1, B]).
  """
  chex.assert_rank([f_l, f_u, pos_w, neg_w, gamma], [1, 1, 2, 2, 1])
  chex.assert_equal_shape([pos_w, neg_w])
  if g_l is None:    # one f for every split: its pair terms are computed once
    s_l, s_u, axis = f_l, f_u, None
  else:
    chex.assert_rank([g_l, g_u], [2, 2])
    chex.assert_equal_shape([g_l, pos_w])
    s_l, s_u, axis = f_l[None, :] + g_l, f_u[None, :] + g_u, 0
  return jax.vmap(_subproblem_grads(loss), in_axes=(axis, axis, 0, 0, 0, None))(
      s_l, s_u, pos_w, neg_w, gamma, axis_name)


def score_grads(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike, pos_w: ArrayLike, neg_w: ArrayLike,
                gamma: ArrayLike, axis_name: Optional[str] = None) -> Tuple[jax.Array, jax.Array]:
  """Gradient of ``minibatch_risk`` in (f_l, f_u): the mean over subproblems.

  Args:
    loss: name or ``PairwiseLoss``.
    f_l: [S] labeled slot scores.
    f_u: [B] unlabeled scores.
    pos_w: [k-1, S].
    neg_w: [k-1, S].
    gamma: [k-1].
    axis_name: mesh axis the unlabeled mini-batch is split over, or None.

  Returns:
    (g_l [S], g_u [B]).

  Example:
    >>> f_l, f_u = jnp.array([0.3, -0.2, 0.5]), jnp.array([0.1, 0.4])
    >>> p, n, g = jnp.array([[0., 0., 1.]]), jnp.array([[.5, .5, 0.]]), jnp.array([.3])
    >>> pairs = jax.vmap(subproblem_score_grads, (None, None, None, 0, 0, 0))(
    ...     "squared", f_l, f_u, p, n, g)                # the O(S (S + B)) pair sums
    >>> fast = score_grads("squared", f_l, f_u, p, n, g)  # the closed form
    >>> all(bool(jnp.allclose(a, b.mean(0))) for a, b in zip(fast, pairs))
    True
  """
  d_l, d_u = split_score_grads(loss, f_l, f_u, None, None, pos_w, neg_w, gamma, axis_name)
  return jnp.mean(d_l, axis=0), jnp.mean(d_u, axis=0)


def split_minibatch_risk(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike, g_l: ArrayLike,
                         g_u: ArrayLike, pos_w: ArrayLike, neg_w: ArrayLike,
                         gamma: ArrayLike) -> jax.Array:
  """Mean over the splits of ``subproblem_risk`` with split j scored by f + g_j.

  The risk part of the per-split corrections' objective (``qsg_jax.engine.corrections``);
  with every g_j = 0 it is ``minibatch_risk``.

  Args:
    loss: name or ``PairwiseLoss``.
    f_l: [S] shared scores f of the labeled slots.
    f_u: [B] shared scores f of the unlabeled mini-batch.
    g_l: [k-1, S] corrections g_j of the labeled slots.
    g_u: [k-1, B] corrections g_j of the unlabeled mini-batch.
    pos_w: [k-1, S].
    neg_w: [k-1, S].
    gamma: [k-1].

  Returns:
    Scalar (1/(k-1)) sum_j R^j(f + g_j).
  """
  chex.assert_rank([f_l, f_u, g_l, g_u], [1, 1, 2, 2])
  risks = jax.vmap(subproblem_risk, in_axes=(None, 0, 0, 0, 0, 0))(
      loss, f_l[None, :] + g_l, f_u[None, :] + g_u, pos_w, neg_w, gamma)
  return jnp.mean(risks)


def squared_subproblem_score_grads(f_l: ArrayLike, f_u: ArrayLike, pos_w: ArrayLike,
                                   neg_w: ArrayLike, gamma: ArrayLike,
                                   axis_name: Optional[str] = None
                                   ) -> Tuple[jax.Array, jax.Array]:
  """``subproblem_score_grads`` of the squared loss from weighted means, in O(S + B).

  With l = (1 - u + v)^2 every derivative is linear, l1 = -l2 = -2 (1 - u + v), so each pair sum
  collapses to means: sum_b N(b) l1(f_a, f_b) = -2 (|N| (1 - f_a) + N . f), and likewise for the
  others. Equal to the pairwise form up to rounding (tests compare them) without its [S, S] and
  [S, B] derivative matrices: a step costs O(S + B) per subproblem instead of O(S (S + B)).
  Arguments and result are those of ``subproblem_score_grads`` (no ``loss``).
  """
  num_u = _unlabeled_total(f_u.shape[0], axis_name)
  mean_u = _unlabeled_total(jnp.sum(f_u), axis_name) / num_u
  dot = functools.partial(jnp.matmul, precision=HIGHEST)
  p_tot, n_tot = jnp.sum(pos_w), jnp.sum(neg_w)
  p_mean, n_mean = dot(pos_w, f_l), dot(neg_w, f_l)
  g_pn = (pos_w * (-2.0) * (n_tot * (1.0 - f_l) + n_mean)
          + neg_w * 2.0 * (p_tot * (1.0 + f_l) - p_mean))
  g_l_unl = pos_w * (-2.0) * (1.0 - f_l + mean_u) + neg_w * 2.0 * (1.0 - mean_u + f_l)
  g_u = 2.0 * ((p_tot * (1.0 + f_u) - p_mean) - (n_tot * (1.0 - f_u) + n_mean)) / num_u
  return gamma * g_pn + (1.0 - gamma) * g_l_unl, (1.0 - gamma) * g_u
