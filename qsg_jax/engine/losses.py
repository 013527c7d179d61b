"""Pairwise surrogate losses l(u, v) of the AUC and their partial derivatives.

``u`` is the score of the point that should rank higher, ``v`` of the one that should rank lower.
l1' = dl/du and l2' = dl/dv are written out by hand (the DSG update needs them, Eq. 10-11 of the
ordinal paper); tests check them against ``jax.grad``.

Naming: for subproblem j with scores ``f_p`` (positive), ``f_n`` (negative), ``f_u`` (unlabeled)
the six quantities of the papers are

    l1, l2 = l1'(f_p, f_n), l2'(f_p, f_n)      (positive vs negative)
    l3, l4 = l1'(f_p, f_u), l2'(f_p, f_u)      (positive vs unlabeled)
    l5, l6 = l1'(f_u, f_n), l2'(f_u, f_n)      (unlabeled vs negative)
"""

from typing import Any, Callable, NamedTuple, Tuple, Union

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike


class PairwiseLoss(NamedTuple):
  """A pairwise loss and its two partial derivatives, all elementwise on arrays."""
  name: str
  value: Callable  # (u, v) -> l(u, v)
  d1: Callable     # (u, v) -> dl/du
  d2: Callable     # (u, v) -> dl/dv


def _squared(u, v):
  return jnp.square(1.0 - u + v)


def _squared_d1(u, v):
  return -2.0 * (1.0 - u + v)


def _squared_d2(u, v):
  return 2.0 * (1.0 - u + v)


def _hinge(u, v):
  return jnp.maximum(0.0, 1.0 - u + v)


def _hinge_d1(u, v):
  return jnp.where(1.0 - u + v > 0, -1.0, 0.0)


def _hinge_d2(u, v):
  return jnp.where(1.0 - u + v > 0, 1.0, 0.0)


def _logistic(u, v):
  return jnp.logaddexp(0.0, v - u)


def _logistic_d1(u, v):
  return -jnp.exp(-jnp.logaddexp(0.0, u - v))  # -sigmoid(v - u), stable


def _logistic_d2(u, v):
  return jnp.exp(-jnp.logaddexp(0.0, u - v))


# A loss argument: a name ("squared", "hinge", "logistic") or a ``PairwiseLoss``.
LossLike = Union[str, PairwiseLoss]

SQUARED = PairwiseLoss("squared", _squared, _squared_d1, _squared_d2)
HINGE = PairwiseLoss("hinge", _hinge, _hinge_d1, _hinge_d2)
LOGISTIC = PairwiseLoss("logistic", _logistic, _logistic_d1, _logistic_d2)

_LOSSES = {loss.name: loss for loss in (SQUARED, HINGE, LOGISTIC)}


def get_loss(loss: LossLike) -> PairwiseLoss:
  """Returns the ``PairwiseLoss`` named ``loss`` ("squared", "hinge", "logistic") or ``loss``.

  Squared, (1 - u + v)^2, is the papers' choice; its derivatives are Lipschitz and bounded on
  bounded scores (their Assumptions 2-3). Hinge uses the subgradient 0 at the kink.
  """
  if isinstance(loss, PairwiseLoss):
    return loss
  if loss not in _LOSSES:
    raise ValueError(
        f"unknown pairwise loss {loss!r}; expected one of {sorted(_LOSSES)} or a "
        "qsg_jax.engine.losses.PairwiseLoss(name, value, d1, d2).")
  return _LOSSES[loss]


def pairwise_loss_grads(loss: LossLike, u: ArrayLike, v: ArrayLike) -> Tuple[jax.Array, jax.Array]:
  """(l1'(u, v), l2'(u, v)): derivatives of ``loss`` in its first and second argument."""
  loss = get_loss(loss)
  return loss.d1(u, v), loss.d2(u, v)


class Derivatives(NamedTuple):
  """The six derivatives l1'..l6' of one subproblem on every pair of a mini-batch (Eq. 10).

  Rows and columns index labeled slots (a as positive, b as negative) and unlabeled points u.
  """
  l1: Any  # [S, S] l1'(f_a, f_b): d l(f_p, f_n) / d f_p on (positive a, negative b).
  l2: Any  # [S, S] l2'(f_a, f_b): d l(f_p, f_n) / d f_n.
  l3: Any  # [S, B] l1'(f_a, f_u): d l(f_p, f_u) / d f_p on (positive a, unlabeled u).
  l4: Any  # [S, B] l2'(f_a, f_u): d l(f_p, f_u) / d f_u.
  l5: Any  # [B, S] l1'(f_u, f_b): d l(f_u, f_n) / d f_u on (unlabeled u, negative b).
  l6: Any  # [B, S] l2'(f_u, f_b): d l(f_u, f_n) / d f_n.


def subproblem_derivatives(loss: LossLike, f_l: ArrayLike, f_u: ArrayLike) -> Derivatives:
  """l1'..l6' of the ordinal paper's Eq. (10) on every (labeled, labeled) and (labeled,
  unlabeled) pair of a mini-batch: the one definition the engine, the literal reference and the
  tests use. The subproblem (which slots are positive or negative) enters through the weights
  ``engine.risk`` applies, so one call serves all k-1 subproblems.

  Args:
    loss: name or ``PairwiseLoss``.
    f_l: [S] scores of the labeled slots.
    f_u: [B] scores of the unlabeled mini-batch.

  Returns:
    ``Derivatives`` (l1, l2 [S, S]; l3, l4 [S, B]; l5, l6 [B, S]).

  Example:
    >>> d = subproblem_derivatives("squared", jnp.array([1.0, 0.0]), jnp.array([0.5]))
    >>> d.l1.tolist(), d.l4.tolist()
    ([[-2.0, -0.0], [-4.0, -2.0]], [[1.0], [3.0]])
  """
  loss = get_loss(loss)
  f_l, f_u = jnp.asarray(f_l), jnp.asarray(f_u)
  if f_l.ndim != 1 or f_u.ndim != 1:
    raise ValueError(f"f_l and f_u must be vectors [S] and [B]; received shapes {f_l.shape} and "
                     f"{f_u.shape}.")
  a, b = f_l[:, None], f_l[None, :]
  return Derivatives(l1=loss.d1(a, b), l2=loss.d2(a, b),
                     l3=loss.d1(a, f_u[None, :]), l4=loss.d2(a, f_u[None, :]),
                     l5=loss.d1(f_u[:, None], b), l6=loss.d2(f_u[:, None], b))
