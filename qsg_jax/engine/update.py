"""The doubly stochastic functional-gradient update of QS3ORAO / QSG-S2AUC (Eqs. 13-14).

Iteration i adds one block of coefficients over the random features phi_i and shrinks every
earlier block (ordinal paper, Algorithm 1; QSG-S2AUC Eq. 15):

    alpha_i = -eta_i * sum_x dR/df(x) phi_i(x)          (Eq. 13, l5 with x_u and l6 with x_n)
    alpha_j <- (1 - eta_i lam) alpha_j       for j < i  (Eq. 14)

where dR/df(x) are the score gradients of the mini-batch risk (``engine.risk.score_grads``,
built from l1'..l6'). The engine stores alpha_j = scale * coef_j, so Eq. (14) costs one scalar
multiplication instead of touching every old block; ``dsg_update`` applies both equations in
that representation. Tests check ``functional_gradient`` against ``jax.grad`` of the risk through
the features and ``dsg_update`` against the literal Algorithm 1 (``engine.reference``).
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
  """Result of one ``dsg_update``."""
  coef: jax.Array      # [T, 2m] stored coefficients, row ``step`` now set.
  scale: jax.Array     # scalar, alpha_j = scale * coef_j.
  partial: jax.Array   # [p] unscaled partial scores, rescaled if ``scale`` was folded in.
  alpha: jax.Array     # [2m] the new block's actual coefficients alpha_i.
  decay: jax.Array     # scalar 1 - eta lam of Eq. (14).


def dsg_update(coef: jax.Array, scale: jax.Array, partial: jax.Array, step: jax.Array,
               gradient: jax.Array, eta: jax.Array, lam: jax.Array) -> Update:
  """Eqs. (13)-(14) on coefficients stored as alpha_j = scale * coef_j.

  Args:
    coef: [T, 2m] stored coefficients (rows >= step are zero).
    scale: scalar running product of the decays.
    partial: [p] unscaled partial scores u = f / scale of points the caller keeps current (their
      scale changes if ``scale`` is folded into ``coef``), or an empty array.
    step: iteration index i (row of the new block).
    gradient: [2m] ``functional_gradient`` of this iteration.
    eta: step size eta_i.
    lam: regularization lambda.

  Returns:
    ``Update``. When |scale| falls below ``RENORMALIZE_BELOW`` it is folded into ``coef`` and
    ``partial`` (exact up to rounding; rare).

  Example:
    >>> out = dsg_update(jnp.zeros((2, 2)), jnp.float32(1.0), jnp.zeros(0), 0,
    ...                  jnp.array([1.0, -1.0]), 0.5, 0.2)
    >>> out.alpha.tolist(), float(out.decay), out.coef[0].tolist()
    ([-0.5, 0.5], 0.9, [-0.5555555820465088, 0.5555555820465088])
  """
  chex.assert_rank([coef, gradient], [2, 1])
  chex.assert_axis_dimension(coef, 1, gradient.shape[0])
  alpha = -eta * gradient                                              # Eq. (13)
  decay = 1.0 - eta * lam                                              # Eq. (14)
  coef, new_scale, partial = _store_block(coef, scale * decay, partial, step, alpha)
  return Update(coef, new_scale, partial, alpha, decay)


def _store_block(coef, new_scale, partial, step, block):
  """(coef with row ``step`` = block / scale, scale, partial) after folding a scale that fell
  below ``RENORMALIZE_BELOW`` into ``coef`` and ``partial`` (exact up to rounding; rare)."""
  coef, partial, new_scale = jax.lax.cond(
      jnp.abs(new_scale) < RENORMALIZE_BELOW,
      lambda c, p, s: (c * s, p * s, jnp.ones_like(s)),
      lambda c, p, s: (c, p, s), coef, partial, new_scale)
  return coef.at[step].set(block / new_scale), new_scale, partial


def split_functional_gradient(g_labeled: jax.Array, phi_labeled: jax.Array,
                              g_unlabeled: jax.Array, phi_unlabeled: jax.Array,
                              axis_name: Optional[str] = None) -> jax.Array:
  """``functional_gradient`` of every split's own risk: the new g_j blocks' gradients.

  Args:
    g_labeled: [k-1, n_l] dR^j/ds_j of every labeled point (``risk.split_score_grads``).
    phi_labeled: [n_l, 2m] features phi_i of the labeled points.
    g_unlabeled: [k-1, B] dR^j/ds_j of the unlabeled mini-batch.
    phi_unlabeled: [B, 2m] their features.
    axis_name: mesh axis of the unlabeled mini-batch, or None.

  Returns:
    [k-1, 2m]: row j is the gradient of R^j(f + g_j + b . phi_i) in b at b = 0.
  """
  chex.assert_rank([g_labeled, g_unlabeled], [2, 2])
  return jax.vmap(functional_gradient, in_axes=(0, None, 0, None, None))(
      g_labeled, phi_labeled, g_unlabeled, phi_unlabeled, axis_name)


def correction_update(coef: jax.Array, scale: jax.Array, partial: jax.Array, step: jax.Array,
                      gradient: jax.Array, eta: jax.Array, split_lam: jax.Array) -> Update:
  """The proximal DSG step of the corrections g_j, stored as g blocks = scale * coef.

      g <- (g - eta grad) / (1 + eta lam_g)   (the new block: -eta grad / (1 + eta lam_g))

  is the step of ``dsg_update`` with Eq. (14)'s decay 1 - eta lam_g replaced by the proximal
  shrinkage 1 / (1 + eta lam_g) of lam_g/2 ||g||^2: equal to first order, the same fixed point
  (lam_g g = -grad), and stable for every lam_g, where 1 - eta lam_g < -1 would diverge.
  ``split_lam = inf`` gives shrinkage 0 and a zero block: g stays exactly 0 (plain QS3ORAO).

  Args:
    coef: [T, 2m, k-1] stored correction coefficients (rows >= step are zero).
    scale: scalar running product of the shrinkages.
    partial: [k-1, p] unscaled partial corrections of points the caller keeps current, or
      [k-1, 0].
    step: iteration index i.
    gradient: [k-1, 2m] ``split_functional_gradient`` (preconditioned: not divided by k-1).
    eta: step size eta_i.
    split_lam: lam_g > 0, or inf.

  Returns:
    ``Update`` with alpha [k-1, 2m] (the new blocks' actual coefficients) and decay the shrinkage.

  Example:
    >>> out = correction_update(jnp.zeros((2, 2, 1)), jnp.float32(1.0), jnp.zeros((1, 0)), 0,
    ...                         jnp.array([[1.0, -1.0]]), 0.5, 2.0)
    >>> out.alpha.tolist(), float(out.decay)
    ([[-0.25, 0.25]], 0.5)
  """
  chex.assert_rank([coef, gradient, partial], [3, 2, 2])
  chex.assert_axis_dimension(coef, 1, gradient.shape[1])
  chex.assert_axis_dimension(coef, 2, gradient.shape[0])
  shrink = 1.0 / (1.0 + eta * split_lam)
  alpha = -eta * shrink * gradient
  coef, new_scale, partial = _store_block(coef, scale * shrink, partial, step, alpha.T)
  return Update(coef, new_scale, partial, alpha, shrink)
