"""The training loop: ``init`` builds the state, ``run_chunk`` runs C iterations, ``train`` T.

Iteration i (0-based) of the papers' Algorithm 1 draws per-class labeled mini-batches and an
unlabeled mini-batch, regenerates feature block i from (feature_key, i), scores the sampled
points with f_i = sum_{j<i} alpha_j . phi_j, and applies the DSG update (``engine.update``,
Eqs. 13-14). The loop computes exactly these coefficients with less work:
  * the decay (Eq. 14) is one running scalar ``scale``: stored ``coef_j = alpha_j / scale``;
  * every labeled point's score is kept current (one new block per step over n_l points), so
    labeled points are never predicted through old blocks;
  * samples of a chunk of C iterations are drawn up front (sampling does not depend on the
    model); the chunk's unlabeled points are scored through all blocks of earlier chunks in one
    large blocked matrix product, and only blocks created inside the chunk are added step by step.
Peak memory is O(T m + n_l + C B (d + m)) beyond the data, for any number of unlabeled points.
When the unlabeled set is small (see ``use_unlabeled_cache``) it is cheaper to keep every
unlabeled score current like the labeled ones (``cache_unlabeled``): O(n_u m) per step instead
of O(B t m). Both modes give the same coefficients.
"""

import functools
from typing import Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.engine import checks
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine.scoring import scores_through_blocks
from qsg_jax.engine.step import Metrics
from qsg_jax.engine.step import dsg_step
from qsg_jax.engine.types import BUCKETS_PER_OCTAVE
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import State
from qsg_jax.engine.types import TrainData


def init(key: jax.Array, data: TrainData, config: EngineConfig,
         num_unlabeled: Optional[int] = None, num_labeled: Optional[int] = None) -> State:
  """Initial state (no blocks yet, f = 0) with everything the update needs.

  Args:
    key: PRNG key of the run (split into feature and sample keys).
    data: ``TrainData``.
    config: ``EngineConfig``.
    num_unlabeled: n_u when ``data.x_unlabeled`` is a padded layout (``shard_unlabeled``'s, or
      ``bucket_data``'s; checked against its rows); default ``len(data.x_unlabeled)``.
    num_labeled: n_l when the labeled rows after the first n_l are padding (``bucket_data``):
      they weigh 0 and are never sampled; default ``len(data.x_labeled)``.

  Returns:
    ``State`` at step 0: the class index of the labeled points, the subproblem weights of the
    labeled slots (``risk.subproblem_weights``), zero coefficients and scores (and zero
    per-split corrections with ``config.split_corrections``).
  """
  k = config.num_classes
  x_l, y_l, x_u = data
  checks.check_data(data, k)
  if checks.readable(key) or (jnp.ndim(key) == 0 and jnp.issubdtype(key.dtype, jnp.integer)):
    key = validation.check_key(key)   # (a traced int seed too: vmap over seeds)
  n_u = checks.check_num_rows("num_unlabeled", num_unlabeled, x_u.shape[0])
  n_l = checks.check_num_rows("num_labeled", num_labeled, x_l.shape[0])
  sampling.strata(n_u, config.num_shards)      # refuses fewer points than strata
  feature_key, sample_key = jax.random.split(key)
  if n_l < x_l.shape[0]:   # padding: class k sorts last and belongs to no class (weight 0)
    y_l = jnp.where(jnp.arange(x_l.shape[0]) < n_l, jnp.asarray(y_l, jnp.int32), k)
  index = sampling.class_index(y_l, k)
  slot_classes = sampling.slot_classes(y_l, k, config.labeled_batch_size)
  pos_w, neg_w = risk.subproblem_weights(slot_classes, index.counts)
  cached = x_u.shape[0] if config.cache_unlabeled else 0
  heads = k if config.split_corrections else 1
  return State(
      step=jnp.zeros((), jnp.int32),
      head_coef=jnp.zeros((config.num_steps, 2 * config.num_frequencies, heads), jnp.float32),
      head_scale=jnp.ones(heads, jnp.float32),
      head_labeled=jnp.zeros((heads, x_l.shape[0]), jnp.float32),
      head_unlabeled=jnp.zeros((heads, cached), jnp.float32),
      feature_key=feature_key,
      sample_key=sample_key,
      class_order=index.order,
      class_offsets=index.offsets,
      class_counts=index.counts,
      pos_w=pos_w,
      neg_w=neg_w,
      num_unlabeled=jnp.asarray(n_u, jnp.int32),
      sigma=jnp.zeros((), jnp.float32))


def bucket_data(data: TrainData, unlabeled: bool = True) -> Tuple[TrainData, int, int]:
  """(``data`` padded, n_l, n_u): labeled rows (and with ``unlabeled`` the unlabeled rows)
  padded to ``numerics.bucket_rows(n, per_octave=4)`` (at most 25 % more), so that data of a new
  size reuses a compilation of ``train``. Pass n_l, n_u to ``init`` (the padding weighs 0 and is
  never sampled: the same model up to float rounding, as sums run over more, zero, terms), and
  ``trim_state`` its result for the state of ``data`` itself.

  The labeled padding repeats the first labeled point (its label too), so every score the
  metrics see is a real point's; the unlabeled padding is zero rows. ``unlabeled=False`` for
  ``shard_unlabeled``'s layout (pad the unlabeled rows there).
  """
  x_l, y_l, x_u = data
  n_l, n_u = x_l.shape[0], x_u.shape[0]
  xp = np if all(isinstance(a, np.ndarray) for a in data) else jnp   # NumPy: no eager compiles
  extra = lambda n: numerics.bucket_rows(n, per_octave=BUCKETS_PER_OCTAVE) - n
  repeat_first = lambda a: xp.concatenate([a, xp.repeat(a[:1], extra(n_l), axis=0)])
  x_u = xp.pad(x_u, ((0, extra(n_u) if unlabeled else 0), (0, 0)))
  return TrainData(repeat_first(x_l), repeat_first(y_l), x_u), n_l, n_u


def trim_state(state: State, config: EngineConfig, unlabeled: bool = True) -> State:
  """The ``State`` of a run ``init`` built on ``bucket_data``'s layout without the padding rows
  (``unlabeled``: the unlabeled ones too, as ``bucket_data`` was called): the state of the
  unpadded data, to train further with that data or read ``f_labeled``."""
  n_l = int(jnp.sum(state.class_counts))
  labeled = lambda a: a[..., :n_l]
  slots = labeled if config.labeled_batch_size is None else (lambda a: a)
  cached = state.head_unlabeled[:, :int(state.num_unlabeled)] if unlabeled else (
      state.head_unlabeled)
  return state._replace(head_labeled=labeled(state.head_labeled), head_unlabeled=cached,
                        class_order=labeled(state.class_order), pos_w=slots(state.pos_w),
                        neg_w=slots(state.neg_w))


def _chunk_samples(state: State, config: EngineConfig, shard) -> sampling.StepSample:
  """Samples of the C iterations starting at ``state.step``: [C, S] labeled, [C, B'] unlabeled."""
  index = sampling.ClassIndex(state.class_order, state.class_offsets, state.class_counts)
  steps = state.step + jnp.arange(config.chunk_size, dtype=jnp.int32)
  return jax.vmap(
      lambda t: sampling.sample_step(state.sample_key, t, index, config.labeled_batch_size,
                                     config.unlabeled_batch_size, state.num_unlabeled,
                                     config.num_shards, shard))(steps)


def train_chunk(state: State, data: TrainData, hyper: Hyperparams,
                config: EngineConfig) -> Tuple[State, Metrics]:
  """``train`` of ``config.chunk_size`` iterations with ``train``'s checks, not jitted (jit or
  scan it yourself; with ``config.axis_name`` inside ``shard_map``); ``train`` and
  ``train_sharded`` scan ``run_chunk``."""
  num_steps = checks.check_training(state, data, hyper, config, config.chunk_size,
                                     sharded=config.axis_name is not None)
  return train_steps(state, data, hyper, config, num_steps)


def run_chunk(state: State, data: TrainData, hyper: Hyperparams,
              config: EngineConfig) -> Tuple[State, Metrics]:
  """Runs ``config.chunk_size`` iterations from ``state``: one ``lax.scan`` of ``step.dsg_step``.

  The unlabeled points whose features each step computes (the "pool") are the chunk's sampled
  points, scored through earlier chunks' blocks up front in one large blocked product, or with
  ``config.cache_unlabeled`` every unlabeled point, whose scores the state carries. Either way
  the scan carries the state with the pool's unscaled scores. With ``config.axis_name`` set
  (inside ``shard_map``), ``data.x_unlabeled`` is this device's stratum.

  Args:
    state: current ``State`` (its step is a multiple of the chunk size).
    data: ``TrainData``.
    hyper: ``Hyperparams``.
    config: static ``EngineConfig``.

  Returns:
    (new state, per-iteration metrics dict of [C] arrays: "eta", "max_abs_score").
  """
  checks.check_split_lam(config, hyper)
  shard = None if config.axis_name is None else jax.lax.axis_index(config.axis_name)
  samples = _chunk_samples(state, config, shard)                     # [C, S], [C, B']
  if config.cache_unlabeled:
    x_pool, pooled = data.x_unlabeled, state
  else:
    x_pool = data.x_unlabeled[samples.unlabeled.reshape(-1)]           # [C * B', d]
    pool = scores_through_blocks(state.feature_key, state.head_coef, state.step, x_pool,
                                 hyper.sigma, config.block_group)      # [C * B', h]
    pooled = state._replace(head_unlabeled=pool.T)
    samples = samples._replace(unlabeled=jnp.arange(x_pool.shape[0], dtype=jnp.int32).reshape(
        config.chunk_size, -1))
  body = functools.partial(dsg_step, x_labeled=data.x_labeled, x_pool=x_pool, hyper=hyper,
                           config=config)
  pooled, metrics = jax.lax.scan(body, pooled, samples)
  return pooled._replace(head_unlabeled=(pooled if config.cache_unlabeled else state)
                         .head_unlabeled), metrics


def train_steps(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
                num_steps: int) -> Tuple[State, Metrics]:
  """``num_steps`` iterations as a ``lax.scan`` of ``run_chunk`` (no checks, no jit), in float32
  whatever ``jax_enable_x64`` says; invalid traced values give NaN (``checks.valid``)."""
  data, hyper = numerics.as_float32(data), numerics.as_float32(hyper)
  ok = checks.valid(state, hyper, config, num_steps)
  state = state._replace(sigma=hyper.sigma)
  state, metrics = jax.lax.scan(lambda s, _: run_chunk(s, data, hyper, config), state, None,
                                length=num_steps // config.chunk_size)
  return checks.poisoned(state, ok), jax.tree.map(lambda a: a.reshape(-1), metrics)


def _check_one_device(config: EngineConfig):
  if config.axis_name is not None:
    raise ValueError(f"config.axis_name={config.axis_name!r} is for sharded training: use "
                     "qsg_jax.engine.train_sharded, or a config with axis_name=None.")


def train(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
          num_steps: int) -> Tuple[State, Metrics]:
  """Runs ``num_steps`` iterations on one device; pure and jitted (``config``, ``num_steps``
  static).

  ``qsg_jax.fit`` adds input checks, progress reports and divergence detection. Vmap it over
  keys (independent trials) or over ``Hyperparams`` (a grid) as needed. Concrete inputs are
  checked (``checks.check_training``); under jit / vmap, invalid values (a hyper-parameter out
  of range, a sigma other than the state's, steps past the last block) give NaN coefficients
  rather than a silently wrong model.

  Args:
    state: ``State`` from ``init`` (or an earlier ``train``).
    data: ``TrainData`` (x_labeled [n_l, d], y_labeled [n_l], x_unlabeled [n_u, d]).
    hyper: ``Hyperparams`` (sigma, lam, gamma [k-1], eta0 or None).
    config: ``EngineConfig``, the one ``init`` got.
    num_steps: iterations to run: a multiple of ``config.chunk_size``; with the steps already
      done, at most ``config.num_steps``.

  Returns:
    (new state, metrics dict of [num_steps] arrays: "eta", "max_abs_score").

  Example:
    >>> data = TrainData(jnp.array([[0.], [1.]]), jnp.array([0, 1]), jnp.array([[0.5]]))
    >>> config = EngineConfig(num_classes=2, num_steps=4, chunk_size=2, block_group=2)
    >>> hyper = Hyperparams(jnp.float32(1.0), jnp.float32(1e-3), jnp.array([0.5]), jnp.float32(1.))
    >>> state, metrics = train(init(jax.random.key(0), data, config), data, hyper, config, 4)
    >>> int(state.step), metrics["eta"].shape, bool(state.f_labeled[1] > state.f_labeled[0])
    (4, (4,), True)
  """
  _check_one_device(config)
  data = jax.tree.map(validation.with_auto_axes, data)   # Explicit axes: gathers would fail
  num_steps = checks.check_training(state, data, hyper, config, num_steps)
  # Python floats, NumPy float64 and jnp.float32 values are one float32 program, not three.
  data, hyper = numerics.as_float32(data), numerics.as_float32(hyper)
  return _train_jit(state, data, hyper, config, num_steps)


_train_jit = jax.jit(train_steps, static_argnames=("config", "num_steps"))


def use_unlabeled_cache(num_unlabeled: int, config: EngineConfig) -> bool:
  """Whether keeping f on every unlabeled point costs less than scoring batches through blocks.

  Cached: n_u new-block features per step. Chunked: on average B (T / 2 + C) per step.
  """
  per_shard = -(-num_unlabeled // config.num_shards)
  batch = config.unlabeled_batch_size // config.num_shards
  return per_shard <= batch * (config.num_steps / 2 + config.chunk_size)
