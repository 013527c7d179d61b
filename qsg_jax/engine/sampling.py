"""Per-iteration sampling of labeled and unlabeled mini-batches, a pure function of (key, step).

Following the ordinal paper's implementation note, one mini-batch is drawn per class and one
unlabeled mini-batch per iteration, and all k-1 subproblems are built from them. Alternatively the
whole labeled set is used every step (``labeled_batch_size=None``): same objective, lower
variance, and cheap because labeled sets are small.

Labeled points enter the risk through *slots*: slot s refers to labeled point ``labeled[s]`` of
class ``slot_classes[s]``. With mini-batches, slots ``c*b .. (c+1)*b-1`` hold class c; with the
whole set, slot s is labeled point s. Slot classes are fixed across steps, so the subproblem
weights (``engine.risk.subproblem_weights``) are computed once.
"""

import functools
from typing import NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike
import numpy as np


class ClassIndex(NamedTuple):
  """Labeled points grouped by class, for drawing per-class mini-batches."""
  order: jax.Array    # [n_l] int32, labeled indices sorted by class.
  offsets: jax.Array  # [k] int32, start of each class in ``order``.
  counts: jax.Array   # [k] int32, number of labeled points per class (all > 0).


class StepSample(NamedTuple):
  """Indices drawn for one iteration."""
  labeled: jax.Array    # [S] int32 indices into the labeled set, one per slot.
  unlabeled: jax.Array  # [B] int32 indices into the unlabeled set.


def class_index(y_labeled: ArrayLike, num_classes: int) -> ClassIndex:
  """Groups labeled points by class.

  Args:
    y_labeled: [n_l] int labels in 0..k-1 (every class present; checked at the API boundary).
    num_classes: k, static.

  Returns:
    ``ClassIndex``.
  """
  y = jnp.asarray(y_labeled, jnp.int32)
  order = jnp.argsort(y, stable=True).astype(jnp.int32)
  counts = jnp.bincount(y, length=num_classes).astype(jnp.int32)
  offsets = (jnp.cumsum(counts) - counts).astype(jnp.int32)
  return ClassIndex(order, offsets, counts)


def slot_classes(y_labeled: ArrayLike, num_classes: int,
                 labeled_batch_size: Optional[int]) -> jax.Array:
  """Class of every labeled slot: [k * b] for mini-batches, [n_l] (= y) for the whole set."""
  if labeled_batch_size is None:
    return jnp.asarray(y_labeled, jnp.int32)
  return jnp.repeat(jnp.arange(num_classes, dtype=jnp.int32), labeled_batch_size)


def strata(num_unlabeled: int | jax.Array, num_shards: int) -> Tuple[np.ndarray, np.ndarray]:
  """Sizes and offsets of ``num_shards`` contiguous strata of the unlabeled rows (NumPy, static).

  Sizes differ by at most one; stratum s holds rows offsets[s] .. offsets[s] + sizes[s] - 1.
  """
  base, extra = divmod(int(num_unlabeled), int(num_shards))
  sizes = np.array([base + (s < extra) for s in range(num_shards)], np.int32)
  if sizes.min() < 1:
    raise ValueError(f"{num_unlabeled} unlabeled points cannot fill {num_shards} shards; use at "
                     "most as many shards as unlabeled points.")
  return sizes, (np.cumsum(sizes) - sizes).astype(np.int32)


@functools.partial(jax.jit, static_argnames="num_shards")   # one program outside jit
def strata_sizes(num_unlabeled: int | jax.Array, num_shards: int) -> Tuple[jax.Array, jax.Array]:
  """Sizes and offsets of the strata as int32 arrays; ``num_unlabeled`` may be traced.

  The same layout as ``strata`` (sizes differ by at most one, the first ``n % D`` are larger).
  """
  n = jnp.asarray(num_unlabeled, jnp.int32)
  s = jnp.arange(num_shards, dtype=jnp.int32)
  base, extra = n // num_shards, n % num_shards
  return base + (s < extra).astype(jnp.int32), s * base + jnp.minimum(s, extra)


def sample_unlabeled(key: jax.Array, batch_size: int, num_unlabeled: int | jax.Array,
                     num_shards: int = 1, shard: Optional[jax.Array] = None) -> jax.Array:
  """Unlabeled indices: batch_size / num_shards uniform draws from each stratum.

  With one shard this is uniform sampling with replacement. With several (the multi-device
  layout, one stratum per device) every stratum contributes equally; the single-device run with
  the same ``num_shards`` draws the very same points, so the two runs agree.

  Args:
    key: PRNG key of this step's unlabeled draw.
    batch_size: B, a multiple of num_shards.
    num_unlabeled: n_u (int32 scalar, may be traced).
    num_shards: number of strata D (static int).
    shard: None for all strata (global indices), or a (traced) stratum index for that stratum
      only, as local indices into it.

  Returns:
    [B] global indices, or [B / D] local indices of stratum ``shard``.
  """
  per_shard = batch_size // num_shards
  sizes, offsets = strata_sizes(num_unlabeled, num_shards)
  if shard is not None:
    return jax.random.randint(jax.random.fold_in(key, shard), (per_shard,), 0, sizes[shard],
                              jnp.int32)
  draws = [jax.random.randint(jax.random.fold_in(key, s), (per_shard,), 0, sizes[s], jnp.int32)
           + offsets[s] for s in range(num_shards)]
  return jnp.concatenate(draws)


def sample_step(key: jax.Array, step: int | jax.Array, index: ClassIndex,
                labeled_batch_size: Optional[int], unlabeled_batch_size: int,
                num_unlabeled: int | jax.Array, num_shards: int = 1,
                shard: Optional[jax.Array] = None) -> StepSample:
  """Indices of iteration ``step``: per-class labeled mini-batches and an unlabeled mini-batch.

  Sampling is with replacement and uniform within each source; it depends only on
  ``(key, step)``, never on the model, so a chunk of iterations can be drawn up front.

  Args:
    key: the sampling PRNG key of a run.
    step: iteration index (int32 scalar).
    index: ``ClassIndex`` of the labeled set.
    labeled_batch_size: b points per class, or None to use every labeled point.
    unlabeled_batch_size: B.
    num_unlabeled: n_u (int32 scalar, may be traced, > 0).
    num_shards: strata of the unlabeled set (see ``sample_unlabeled``).
    shard: None, or the stratum whose local indices to return.

  Returns:
    ``StepSample``.
  """
  key_l, key_u = jax.random.split(jax.random.fold_in(key, step))
  if labeled_batch_size is None:
    labeled = jnp.arange(index.order.shape[0], dtype=jnp.int32)
  else:
    k = index.counts.shape[0]
    within = jax.random.randint(key_l, (k, labeled_batch_size), 0, index.counts[:, None],
                                jnp.int32)
    labeled = index.order[(index.offsets[:, None] + within).reshape(-1)]
  unlabeled = sample_unlabeled(key_u, unlabeled_batch_size, num_unlabeled, num_shards, shard)
  return StepSample(labeled.astype(jnp.int32), unlabeled.astype(jnp.int32))
