"""Scores f(x) of a trained model through every feature block (Algorithm 2), chunked and grouped."""

import functools
from typing import Callable, Optional

import jax
import jax.numpy as jnp

from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import PREDICT_CHUNK
from qsg_jax import numerics
from qsg_jax.engine import checks
from qsg_jax.engine import features
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import Model
from qsg_jax.engine.types import State


def model_of(state: State, hyper: Optional[Hyperparams] = None) -> Model:
  """The ``Model`` (what scoring needs) of a training state, corrections g_j included if any.

  Its sigma is the one the state's blocks were trained with; ``hyper`` is only checked against
  it (concrete: ``ValueError``; traced: NaN scores), and gives sigma before any training.
  """
  sigma = state.sigma
  if hyper is not None:
    checks.check_sigma(state, hyper)
    given = jnp.asarray(hyper.sigma, jnp.float32)
    sigma = jnp.where(sigma == 0, given, jnp.where(sigma == given, sigma, jnp.nan))
  return Model(state.feature_key, state.coef, state.scale, sigma, state.split_coef,
               state.split_scale)


# Rows are padded to a multiple of this before scoring: XLA's CPU matrix-vector kernels round the
# rows of a ragged last tile differently, so without it a point's score would depend (in the last
# bit) on its position in the batch. With it, scores do not depend on row order or batch, so the
# checked entry points pad points into row buckets (``numerics.in_row_buckets``).
ROW_TILE = 8


def block_sums(frequencies_of: Callable[[jax.Array], jax.Array], coef: jax.Array,
               num_blocks: jax.Array, x: jax.Array, block_group: int) -> jax.Array:
  """Unscaled sum_{j < num_blocks} coef_j . phi_j(x), ``block_group`` blocks per matrix product.

  Args:
    frequencies_of: blocks [g] -> their frequencies [g * m, d] (regenerated from the key, or
      read from storage as ``qsg_jax.io`` does).
    coef: [T, 2m, c] stored coefficients of c functions over the same features (f alone, or f
      and the corrections g_j, ``engine.corrections``): one matrix product scores them all.
    num_blocks: int32 scalar (may be traced), a multiple of ``block_group``.
    x: [n, d] points.
    block_group: static group size g (must divide T).

  Returns:
    [n, c] unscaled scores.
  """
  def body(group, acc):
    blocks = group * block_group + jnp.arange(block_group, dtype=jnp.int32)
    return acc + features.grouped_multi_scores(x, frequencies_of(blocks), coef[blocks])

  return jax.lax.fori_loop(0, num_blocks // block_group, body,
                           jnp.zeros((x.shape[0], coef.shape[2]), x.dtype))


def scores_through_blocks(feature_key: jax.Array, coef: jax.Array, num_blocks: jax.Array,
                          x: jax.Array, sigma: jax.Array, block_group: int) -> jax.Array:
  """``block_sums`` with every block's frequencies regenerated from (feature_key, block)."""
  m = coef.shape[1] // 2
  return block_sums(
      lambda blocks: features.sample_frequency_blocks(feature_key, blocks, m, x.shape[1], sigma),
      coef, num_blocks, x, block_group)


def chunked_block_sums(frequencies_of: Callable[[jax.Array], jax.Array], coef: jax.Array,
                       x: jax.Array, block_group: int, predict_chunk: int) -> jax.Array:
  """[n, c] ``block_sums`` through all T blocks, ``predict_chunk`` points per product ([n] for
  coefficients [T, 2m] of one function)."""
  if coef.ndim == 2:
    return chunked_block_sums(frequencies_of, coef[:, :, None], x, block_group, predict_chunk)[:, 0]
  n = x.shape[0]
  if n == 0:   # no points, no scores (the padding below would divide by a zero chunk)
    return jnp.zeros((0,) + coef.shape[2:], coef.dtype)
  rows = n + (-n) % ROW_TILE
  chunk = min(predict_chunk, rows)
  xs = jnp.pad(x, ((0, (-rows) % chunk + rows - n), (0, 0))).reshape(-1, chunk, x.shape[1])
  out = jax.lax.map(
      lambda xc: block_sums(frequencies_of, coef, coef.shape[0], xc, block_group), xs)
  return out.reshape((-1,) + out.shape[2:])[:n]


def unscaled_scores(model: Model, x: jax.Array, block_group: int,
                    predict_chunk: int) -> jax.Array:
  """[n] f(x) / scale through all T blocks, frequencies regenerated from the model's key."""
  m = model.coef.shape[1] // 2
  return chunked_block_sums(
      lambda blocks: features.sample_frequency_blocks(model.feature_key, blocks, m, x.shape[1],
                                                      model.sigma),
      model.coef, x, block_group, predict_chunk)


@functools.partial(jax.jit, static_argnames=("block_group", "predict_chunk"))
def model_scores(model: Model, x: jax.Array, block_group: int = BLOCK_GROUP,
                 predict_chunk: int = PREDICT_CHUNK) -> jax.Array:
  """Ranking scores f(x) through every feature block (Algorithm 2): pure and jittable.

  ``qsg_jax.decision_function`` is the checked version for a ``FitResult``.

  Args:
    model: trained ``Model`` (``model_of(state, hyper)``).
    x: [n, d] float32 points, preprocessed like the training data.
    block_group: blocks per matrix product (must divide T).
    predict_chunk: points per matrix product.

  Returns:
    [n] float32 scores.
  """
  check_scoring(model, x, block_group)
  model, x = numerics.as_float32((model, x))
  return model.scale * unscaled_scores(model, x, block_group, predict_chunk)


def check_scoring(model: Model, x: jax.Array, block_group: int):
  """Raises (at trace time) for points that are not [n, d] or a group that does not divide T."""
  if x.ndim != 2:
    raise ValueError(f"x must have shape [n, d]; received {x.shape}.")
  if model.coef.shape[0] % block_group:
    raise ValueError(f"block_group={block_group} must divide the model's {model.coef.shape[0]} "
                     "blocks; pass config.block_group of the run that trained it.")
