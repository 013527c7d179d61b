"""One DSG iteration (Algorithm 1) of every head, and its step size: the engine's scan body.

Iteration i regenerates feature block i from (feature_key, i) for the labeled points and the
unlabeled pool, takes the score gradients of the mini-batch risk at the sampled points
(``risk``), their functional gradient in the new block (Eq. 13), applies the update
(``update.dsg_update``, Eqs. 13-14) and keeps every labeled score and the pool's unscaled scores
current by adding the new block. The state carries h heads on the same blocks: f alone (h = 1),
or f and the per-split corrections g_j (h = k, ``engine.corrections``), so one evaluation of
cos and sin serves all of them. ``loop.run_chunk`` scans this function; the grouped
cross-validation (``engine.grouped``) vmaps that scan over tasks.
"""

import functools
from typing import Callable, Dict, Tuple

import jax
import jax.numpy as jnp

from qsg_jax.engine import features
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine import update
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import State
from qsg_jax.numerics import HIGHEST

Metrics = Dict[str, jax.Array]


def inverse_time_schedule(eta0, lam) -> Callable[[jax.Array], jax.Array]:
  """eta_t = eta0 / (1 + eta0 lam t): starts at eta0, decays like 1 / (lam t) (theta = 1/lam).

  Example:
    >>> float(inverse_time_schedule(2.0, 0.5)(2.0))
    0.6666666865348816
  """
  return lambda step: jnp.asarray(eta0 / (1.0 + eta0 * lam * step), jnp.float32)


def step_size(config: EngineConfig, hyper: Hyperparams, step: jax.Array) -> jax.Array:
  """eta of iteration ``step`` (0-based): ``config.schedule``, or the default from ``hyper.eta0``.

  Raises:
    ValueError (at trace time): both or neither of ``config.schedule`` and ``hyper.eta0`` set.
  """
  if (config.schedule is None) == (hyper.eta0 is None):
    raise ValueError(
        "set exactly one step size: EngineConfig.schedule (a callable) or Hyperparams.eta0 (the "
        "initial step of eta0 / (1 + eta0 lam t)); received "
        + ("both: Hyperparams.eta0 would be ignored, pass eta0=None."
           if hyper.eta0 is not None else "neither."))
  if config.schedule is not None:
    return jnp.asarray(config.schedule(step), jnp.float32)
  return inverse_time_schedule(hyper.eta0, hyper.lam)(jnp.asarray(step, jnp.float32))


def decay(config: EngineConfig, hyper: Hyperparams, step: jax.Array,
          eta: jax.Array) -> jax.Array:
  """Eq. (14)'s factor 1 - eta_i lam on f's earlier blocks; NaN where it is <= 0 after step 0.

  For the default schedule it is computed as (1 + eta0 lam (i - 1)) / (1 + eta0 lam i), equal in
  exact arithmetic and free of cancellation: with lam = 1e10 the exact decay at i = 1 is 1e-10,
  while 1 - fl(eta_1) lam rounds to +-1e-7, and a negative value flips the sign of f (the first
  block dominates: AUC 0.21 instead of 0.8). With a schedule callable it is 1 - eta_i lam; past
  step 0 a value <= 0 would erase or flip every earlier block (the papers' analysis needs
  eta_i lam < 1), so it is NaN, which poisons the model (``train`` refuses concrete cases up
  front). At step 0 there is no earlier block and any value is harmless.
  """
  if config.schedule is None:
    rate = hyper.eta0 * hyper.lam
    step = jnp.asarray(step, jnp.float32)
    value = (1.0 + rate * (step - 1.0)) / (1.0 + rate * step)
  else:
    value = 1.0 - eta * hyper.lam
  return jnp.where((step > 0) & ~(value > 0), jnp.nan, value).astype(jnp.float32)


def dsg_step(state: State, sample: sampling.StepSample, *, x_labeled: jax.Array,
             x_pool: jax.Array, hyper: Hyperparams,
             config: EngineConfig) -> Tuple[State, Metrics]:
  """Iteration ``state.step`` of Algorithm 1 for every head: ``(state, sample) -> (state,
  metrics)``, the body of ``lax.scan``.

  Args:
    state: ``State`` whose ``head_unlabeled`` holds the unscaled scores [h, p] of the pool
      ``x_pool`` (every unlabeled point when cached, else the chunk's sampled points).
    sample: this step's ``StepSample``: labeled slots [S] and pool rows [B'] (this device's).
    x_labeled: [n_l, d] labeled points.
    x_pool: [p, d] the pool's points.
    hyper: ``Hyperparams``.
    config: static ``EngineConfig``.

  Returns:
    (state after the step, metrics: "eta" and "max_abs_score", the largest |f| and |f + g_j|
    over the labeled points the risk weighs).
  """
  i, axis, h = state.step, config.axis_name, state.head_scale.shape[0]
  phi_l, phi_pool = features.block_features_of(                      # [n_l, 2m], [p, 2m]
      state.feature_key, i, (x_labeled, x_pool), config.num_frequencies, hyper.sigma)
  slots, rows = sample.labeled, sample.unlabeled
  s_l = state.head_labeled[:, slots]                                   # [h, S]
  s_u = state.head_scale[:, None] * state.head_unlabeled[:, rows]      # [h, B']
  g_l, g_u = (s_l[1:], s_u[1:]) if h > 1 else (None, None)   # split j ranks with f + g_j
  d_l, d_u = risk.split_score_grads(config.loss, s_l[0], s_u[0], g_l, g_u, state.pos_w,
                                    state.neg_w, hyper.gamma, axis)    # [k-1, S], [k-1, B']
  # f's score gradients are those of the mean risk; g_j's are split j's own (preconditioned).
  heads = lambda d: jnp.concatenate([jnp.mean(d, axis=0, keepdims=True), d[:h - 1]])
  d_labeled = jnp.zeros_like(state.head_labeled).at[:, slots].add(heads(d_l))
  grad = jax.vmap(update.functional_gradient, in_axes=(0, None, 0, None, None))(
      d_labeled, phi_l, heads(d_u), phi_pool[rows], axis)               # [h, 2m], Eq. (13)
  eta = step_size(config, hyper, i)
  new = update.dsg_update(state.head_coef, state.head_scale, state.head_unlabeled, i, grad, eta,
                          decay(config, hyper, i, eta), hyper.split_lam)
  dot = functools.partial(jnp.matmul, precision=HIGHEST)
  labeled = new.decay[:, None] * state.head_labeled + dot(new.alpha, phi_l.T)
  state = state._replace(step=i + 1, head_coef=new.coef, head_scale=new.scale,
                         head_labeled=labeled,
                         head_unlabeled=new.partial + dot(new.block, phi_pool.T))
  scores = jnp.abs(jnp.concatenate([labeled[:1], labeled[:1] + labeled[1:]]))   # f, f + g_j
  if config.labeled_batch_size is None:   # slot s is labeled point s; weight 0: held out
    scores = jnp.where(jnp.any((state.pos_w > 0) | (state.neg_w > 0), axis=0), scores, 0.0)
  return state, {"eta": eta, "max_abs_score": jnp.max(scores)}
