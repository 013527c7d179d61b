"""The doubly stochastic functional-gradient update of QS3ORAO / QSG-S2AUC (Eqs. 13-14).

Iteration i adds one block of coefficients over the random features phi_i and shrinks every
earlier block (ordinal paper, Algorithm 1; QSG-S2AUC Eq. 15):

    alpha_i = -eta_i * sum_x dR/df(x) phi_i(x)          (Eq. 13, l5 with x_u and l6 with x_n)
    alpha_j <- (1 - eta_i lam) alpha_j       for j < i  (Eq. 14)

where dR/df(x) are the score gradients of the mini-batch risk (``engine.risk.score_grads``,
built from l1'..l6'). The engine stores alpha_j = scale * coef_j, so Eq. (14) costs one scalar
multiplication instead of touching every old block; ``dsg_update`` applies both equations in
that representation, for every head of the state at once: f alone, or f and the per-split
corrections g_j (``engine.corrections``), whose blocks take a proximal step instead of Eq. (14).
Tests check ``functional_gradient`` against ``jax.grad`` of the risk through the features and
``dsg_update`` against the literal Algorithm 1 (``engine.reference``).
"""

from typing import NamedTuple, Optional

import chex
import jax
import jax.numpy as jnp

from qsg_jax.numerics import HIGHEST

# Below this magnitude the running scale is folded into the stored coefficients.
RENORMALIZE_BELOW = 1e-20


def functional_gradient(g_labeled: jax.Array, phi_labeled: jax.Array, g_unlabeled: jax.Array,
                        phi_unlabeled: jax.Array, axis_name: Optional[str] = None) -> jax.Array:
  """Gradient of the mini-batch risk in the new block's coefficients (Eq. 13 without -eta).

  Args:
    g_labeled: [n_l] dR/df of every labeled point (zero where not sampled).
    phi_labeled: [n_l, 2m] features phi_i of the labeled points.
    g_unlabeled: [B] dR/df of the unlabeled mini-batch.
    phi_unlabeled: [B, 2m] their features.
    axis_name: mesh axis the unlabeled mini-batch is split over (sums it over devices), or None.

  Returns:
    [2m] gradient.
  """
  chex.assert_rank([g_labeled, phi_labeled, g_unlabeled, phi_unlabeled], [1, 2, 1, 2])
  chex.assert_equal_shape_prefix([g_labeled, phi_labeled], 1)
  chex.assert_equal_shape_prefix([g_unlabeled, phi_unlabeled], 1)
  grad_u = jnp.matmul(g_unlabeled, phi_unlabeled, precision=HIGHEST)
  if axis_name is not None:
    grad_u = jax.lax.psum(grad_u, axis_name)
  return jnp.matmul(g_labeled, phi_labeled, precision=HIGHEST) + grad_u


class Update(NamedTuple):
  """Result of one ``dsg_update`` of h heads."""
  coef: jax.Array      # [T, 2m, h] stored coefficients, row ``step`` now set.
  scale: jax.Array     # [h], alpha_j = scale * coef_j per head.
  partial: jax.Array   # [h, p] unscaled partial scores, rescaled where a scale was folded in.
  alpha: jax.Array     # [h, 2m] the new blocks' actual coefficients alpha_i.
  block: jax.Array     # [h, 2m] the new blocks as stored (alpha_i / scale).
  decay: jax.Array     # [h] the factor every earlier block of a head was multiplied by.


def dsg_update(coef: jax.Array, scale: jax.Array, partial: jax.Array, step: jax.Array,
               gradient: jax.Array, eta: jax.Array, decay: jax.Array,
               split_lam: Optional[jax.Array] = None) -> Update:
  """Eqs. (13)-(14) for h heads stored as alpha_j = scale * coef_j.

  Head 0 is f: its new block is -eta times its gradient (Eq. 13) and its old blocks are
  multiplied by ``decay`` = 1 - eta lam (Eq. 14, ``step.decay``). Heads 1..h-1 are the
  per-split corrections g_j: the proximal step of lam_g/2 ||g||^2,
  g <- (g - eta grad) / (1 + eta lam_g), so their new blocks are
  -eta grad / (1 + eta lam_g) and their old blocks shrink by 1 / (1 + eta lam_g): equal to
  Eq. (14) to first order, the same fixed point (lam_g g = -grad), and stable for every lam_g,
  where 1 - eta lam_g < -1 would diverge. ``split_lam = inf`` gives zero blocks: g stays 0.

  Args:
    coef: [T, 2m, h] stored coefficients (rows >= step are zero).
    scale: [h] running products of the decays.
    partial: [h, p] unscaled partial scores u = score / scale of points the caller keeps current
      (they change if a scale is folded into ``coef``), or [h, 0].
    step: iteration index i (row of the new blocks).
    gradient: [h, 2m] ``functional_gradient`` of every head (the corrections' preconditioned:
      not divided by k-1, ``engine.corrections``).
    eta: step size eta_i.
    decay: f's factor 1 - eta lam of Eq. (14).
    split_lam: lam_g > 0 or inf of the corrections; used only when h > 1.

  Returns:
    ``Update``. Where |scale| falls below ``RENORMALIZE_BELOW`` it is folded into ``coef`` and
    ``partial`` (exact up to rounding; rare).

  Example:
    >>> out = dsg_update(jnp.zeros((2, 2, 1)), jnp.ones(1), jnp.zeros((1, 0)), 0,
    ...                  jnp.array([[1.0, -1.0]]), 0.5, 1.0 - 0.5 * 0.2)
    >>> out.alpha.tolist(), out.decay.tolist(), out.coef[0, :, 0].tolist()
    ([[-0.5, 0.5]], [0.8999999761581421], [-0.5555555820465088, 0.5555555820465088])
  """
  chex.assert_rank([coef, scale, partial, gradient], [3, 1, 2, 2])
  chex.assert_axis_dimension(coef, 1, gradient.shape[1])
  chex.assert_equal_shape_prefix([gradient, scale, partial], 1)
  dtype = gradient.dtype
  decay = jnp.reshape(decay, (1,)).astype(dtype)                      # Eq. (14), f
  gain = jnp.ones(1, dtype)
  if gradient.shape[0] > 1:                                            # proximal, the g_j
    shrink = jnp.full(gradient.shape[0] - 1, 1.0 / (1.0 + eta * split_lam), dtype)
    decay, gain = jnp.concatenate([decay, shrink]), jnp.concatenate([gain, shrink])
  alpha = -eta * gain[:, None] * gradient                              # Eq. (13)
  coef, new_scale, partial = _fold_small_scales(coef, scale * decay, partial)
  block = alpha / new_scale[:, None]
  return Update(coef.at[step].set(block.T), new_scale, partial, alpha, block, decay)


def _fold_small_scales(coef, scale, partial):
  """(coef, scale, partial) with every scale below ``RENORMALIZE_BELOW`` folded into its head's
  coefficients and partial scores (exact up to rounding; rare, so behind a ``lax.cond``)."""
  def fold(c, s, p):
    low = jnp.abs(s) < RENORMALIZE_BELOW
    factor = jnp.where(low, s, jnp.ones_like(s))
    return c * factor[None, None, :], jnp.where(low, jnp.ones_like(s), s), p * factor[:, None]
  return jax.lax.cond(jnp.any(jnp.abs(scale) < RENORMALIZE_BELOW), fold,
                      lambda c, s, p: (c, s, p), coef, scale, partial)
