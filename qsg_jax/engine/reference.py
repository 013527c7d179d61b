"""A literal, slow port of Algorithms 1 (training) and 2 (prediction), for tests and benchmarks.

Written the way the papers write it: every iteration predicts each sampled point through every
earlier feature block, regenerating each block's frequencies from its seed (Algorithm 2); the new
coefficients are the sum over subproblems of Eq. (13) term by term (with l5 on x_u and l6 on x_n,
as Eqs. 10-11 and QSG-S2AUC's Eq. 15 have it); then every old coefficient is multiplied by
(1 - eta lambda) (Eq. 14). It draws exactly the same samples and frequencies as
``qsg_jax.engine`` for the same key, so the two produce the same coefficients.
"""

import functools

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from qsg_jax.engine import features
from qsg_jax.engine import losses
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine.step import step_size
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import TrainData
from qsg_jax import numerics
from qsg_jax.numerics import HIGHEST


def predict_literal(feature_key: jax.Array, alphas: ArrayLike, num_blocks: int | jax.Array,
                    x: ArrayLike, num_frequencies: int, sigma: float | jax.Array) -> jax.Array:
  """Algorithm 2: f(x) = sum_{j < num_blocks} alpha_j . phi_j(x), one block at a time.

  Args:
    feature_key: PRNG key of the feature blocks.
    alphas: [T, 2m] actual (already decayed) coefficients.
    num_blocks: blocks to use (may be traced).
    x: [n, d] points.
    num_frequencies: m.
    sigma: kernel parameter.

  Returns:
    [n] scores.
  """
  def body(j, f):
    phi = features.block_features(feature_key, j, x, num_frequencies, sigma)
    return f + jnp.matmul(phi, alphas[j], precision=HIGHEST)
  return jax.lax.fori_loop(0, num_blocks, body, jnp.zeros(x.shape[0], x.dtype))


def _new_coefficients(loss, f_l, f_u, phi_l, phi_u, pos_w, neg_w, gamma):
  """sum_j of Eq. (13)'s bracket (before -eta / (k-1)), term by term in feature space."""
  num_u = f_u.shape[0]
  d = losses.subproblem_derivatives(loss, f_l, f_u)    # l1, l2 [a, b]; l3, l4 [a, u]; l5, l6 [u, b]
  total = jnp.zeros(phi_l.shape[1], phi_l.dtype)
  for j in range(pos_w.shape[0]):
    p, n = pos_w[j], neg_w[j]
    pn = (jnp.einsum("ab,a,b,af->f", d.l1, p, n, phi_l, precision=HIGHEST)
          + jnp.einsum("ab,a,b,bf->f", d.l2, p, n, phi_l, precision=HIGHEST))
    pu = (jnp.einsum("au,a,af->f", d.l3, p, phi_l, precision=HIGHEST)
          + jnp.einsum("au,a,uf->f", d.l4, p, phi_u, precision=HIGHEST)) / num_u
    nu = (jnp.einsum("ub,b,uf->f", d.l5, n, phi_u, precision=HIGHEST)
          + jnp.einsum("ub,b,bf->f", d.l6, n, phi_l, precision=HIGHEST)) / num_u
    total = total + gamma[j] * pn + (1.0 - gamma[j]) * (pu + nu)
  return total


@functools.partial(jax.jit, static_argnames=("config",))
def reference_fit(key: jax.Array, data: TrainData, hyper: Hyperparams,
                  config: EngineConfig) -> jax.Array:
  """Literal Algorithm 1.

  Args:
    key: the same key one would pass to ``engine.init``.
    data: ``engine.TrainData``.
    hyper: ``engine.Hyperparams``.
    config: ``engine.EngineConfig`` (chunking fields are ignored).

  Returns:
    [T, 2m] actual coefficients alpha_j after T iterations (compare with
    ``state.scale * state.coef`` of the engine).
  """
  data, hyper = numerics.as_float32((data, hyper))
  feature_key, sample_key = jax.random.split(key)
  k, m = config.num_classes, config.num_frequencies
  index = sampling.class_index(data.y_labeled, k)
  slot_classes = sampling.slot_classes(data.y_labeled, k, config.labeled_batch_size)
  pos_w, neg_w = risk.subproblem_weights(slot_classes, jnp.bincount(data.y_labeled, length=k))

  def iteration(i, alphas: ArrayLike):
    sample = sampling.sample_step(sample_key, i, index, config.labeled_batch_size,
                                  config.unlabeled_batch_size, data.x_unlabeled.shape[0],
                                  config.num_shards)
    x_l = data.x_labeled[sample.labeled]
    x_u = data.x_unlabeled[sample.unlabeled]
    f_l = predict_literal(feature_key, alphas, i, x_l, m, hyper.sigma)
    f_u = predict_literal(feature_key, alphas, i, x_u, m, hyper.sigma)
    phi_l = features.block_features(feature_key, i, x_l, m, hyper.sigma)
    phi_u = features.block_features(feature_key, i, x_u, m, hyper.sigma)
    eta = step_size(config, hyper, i)
    alpha_i = -eta / (k - 1) * _new_coefficients(
        config.loss, f_l, f_u, phi_l, phi_u, pos_w, neg_w, hyper.gamma)
    alphas = alphas * (1.0 - eta * hyper.lam)        # Eq. (14); rows >= i are still zero
    return alphas.at[i].set(alpha_i)

  alphas = jnp.zeros((config.num_steps, 2 * m), jnp.float32)
  return jax.lax.fori_loop(0, config.num_steps, iteration, alphas)
