"""The training loop: ``init`` builds the state, ``train_chunk`` runs C iterations, ``train`` T.

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
from qsg_jax.engine import corrections
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine.scoring import scores_through_blocks
from qsg_jax.engine.step import Metrics
from qsg_jax.engine.step import dsg_step
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import State
from qsg_jax.engine.types import TrainData


def init(key: jax.Array, data: TrainData, config: EngineConfig,
         num_unlabeled: Optional[int] = None) -> State:
  """Initial state (no blocks yet, f = 0) with everything the update needs.

  Args:
    key: PRNG key of the run (split into feature and sample keys).
    data: ``TrainData``.
    config: ``EngineConfig``.
    num_unlabeled: n_u when ``data.x_unlabeled`` is the padded layout of ``shard_unlabeled``;
      default ``len(data.x_unlabeled)``.

  Returns:
    ``State`` at step 0: the class index of the labeled points, the subproblem weights of the
    labeled slots (``risk.subproblem_weights``), zero coefficients and scores (and zero
    per-split corrections with ``config.split_corrections``).
  """
  k = config.num_classes
  x_l, y_l, x_u = data
  if x_l.ndim != 2 or x_u.ndim != 2 or x_l.shape[1] != x_u.shape[1] or y_l.shape != x_l.shape[:1]:
    raise ValueError(f"TrainData needs x_labeled [n_l, d], y_labeled [n_l], x_unlabeled [n_u, d]; "
                     f"received {x_l.shape}, {y_l.shape}, {x_u.shape}.")
  _check_concrete_data(data, k)
  if _readable(key):
    key = validation.check_key(key)
  n_u = x_u.shape[0] if num_unlabeled is None else int(num_unlabeled)
  sampling.strata(n_u, config.num_shards)      # refuses fewer points than strata
  feature_key, sample_key = jax.random.split(key)
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
  corrections.check_split_lam(config, hyper)
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
  """``num_steps`` iterations as a ``lax.scan`` of ``train_chunk`` (no checks, no jit)."""
  state, metrics = jax.lax.scan(lambda s, _: train_chunk(s, data, hyper, config), state, None,
                                length=num_steps // config.chunk_size)
  return state, jax.tree.map(lambda a: a.reshape(-1), metrics)


def _readable(x) -> bool:
  """Whether this process can read ``x``'s values: not traced, and not a global array spanning
  other processes' devices (multi-process runs check their own shards before placing them)."""
  return not validation.is_traced(x) and getattr(x, "is_fully_addressable", True)


def _check_concrete_data(data: TrainData, k: int):
  """The checks ``qsg_jax.fit`` makes, on a concrete ``TrainData`` (no-ops under jit / vmap):
  finite points, labels 0..k-1 with every class present."""
  x_l, y_l, x_u = data
  for name, x in (("data.x_labeled", x_l), ("data.x_unlabeled", x_u)):
    if _readable(x):
      validation.check_points(name, x)
  if not _readable(y_l):
    return
  validation.check_class_labels(y_l, k, name="data.y_labeled")
  missing = sorted(set(range(k)) - set(np.unique(np.asarray(y_l)).tolist()))
  if missing:
    raise ValueError(f"data.y_labeled has no point of class(es) {missing[:10]} of k = {k} "
                     "(config.num_classes); every class 0..k-1 needs a labeled point.")


def check_hyper(hyper: Hyperparams, config: EngineConfig):
  """Shapes always, values when concrete: sigma > 0, lam >= 0, gamma [k-1] in [0, 1], eta0 > 0
  (the checks ``qsg_jax.fit`` makes on its arguments)."""
  k1 = config.num_classes - 1
  if jnp.shape(hyper.gamma) != (k1,):
    raise ValueError(f"hyper.gamma must have shape [k-1] = [{k1}]; received "
                     f"{jnp.shape(hyper.gamma)} (broadcast a scalar: jnp.full({k1}, gamma)).")
  checks = (("sigma", hyper.sigma, lambda v: v > 0, "finite and > 0"),
            ("lam", hyper.lam, lambda v: v >= 0, "finite and >= 0"),
            ("gamma", hyper.gamma, lambda v: (v >= 0) & (v <= 1), "in [0, 1]"),
            ("eta0", hyper.eta0, lambda v: v > 0, "finite and > 0"))
  for name, value, ok, want in checks:
    if value is None or not _readable(value):
      continue
    v = np.asarray(value, np.float64)
    if not np.all(np.isfinite(v) & ok(v)):
      raise ValueError(f"hyper.{name} must be {want}; received {v.tolist()}.")


def check_steps(state: State, config: EngineConfig, num_steps) -> int:
  """``num_steps`` as an int after checking it fits the config (and the state, when concrete).

  Raises:
    ValueError: not a positive multiple of ``config.chunk_size``, more than ``config.num_steps``,
      or (for a concrete state) more than the blocks left after ``state.step``.
  """
  try:
    num_steps = int(num_steps)
  except TypeError:
    raise TypeError(f"num_steps must be a Python int (static); received {num_steps!r}.") from None
  if num_steps < 1 or num_steps % config.chunk_size or num_steps > config.num_steps:
    raise ValueError(
        f"num_steps={num_steps} must be a positive multiple of config.chunk_size="
        f"{config.chunk_size} and at most config.num_steps={config.num_steps} (one feature block "
        "per step); pass config.num_steps to train a whole run.")
  if not isinstance(state.step, jax.core.Tracer):
    done = int(state.step)
    if done + num_steps > config.num_steps:
      raise ValueError(f"the state has done {done} of config.num_steps={config.num_steps} steps; "
                       f"{num_steps} more would run past the last feature block. Train at most "
                       f"{config.num_steps - done} more steps, or build a config with more steps.")
  return num_steps


def train(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
          num_steps: int) -> Tuple[State, Metrics]:
  """Runs ``num_steps`` iterations on one device; pure and jitted (``config``, ``num_steps``
  static).

  ``qsg_jax.fit`` adds input checks, progress reports and divergence detection. Vmap it over
  keys (independent trials) or over ``Hyperparams`` (a grid) as needed.

  Args:
    state: ``State`` from ``init`` (or an earlier ``train``).
    data: ``TrainData`` (x_labeled [n_l, d], y_labeled [n_l], x_unlabeled [n_u, d]).
    hyper: ``Hyperparams`` (sigma, lam, gamma [k-1], eta0 or None).
    config: ``EngineConfig``, the one ``init`` got.
    num_steps: iterations to run: a multiple of ``config.chunk_size``; with the steps already
      done, at most ``config.num_steps``. A traced (vmapped) state running past the last block
      gets NaN coefficients rather than a silently wrong model.

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
  if config.axis_name is not None:
    raise ValueError(f"config.axis_name={config.axis_name!r} is for sharded training: use "
                     "qsg_jax.engine.train_sharded, or a config with axis_name=None.")
  check_hyper(hyper, config)
  return _train_jit(state, data, hyper, config, check_steps(state, config, num_steps))


@functools.partial(jax.jit, static_argnames=("config", "num_steps"))
def _train_jit(state, data, hyper, config, num_steps):
  end = state.step + num_steps
  state, metrics = train_steps(state, data, hyper, config, num_steps)
  # Past the last block the coefficient rows would be clipped silently: poison instead.
  return state._replace(head_coef=jnp.where(end > config.num_steps, jnp.nan, state.head_coef)), metrics


def use_unlabeled_cache(num_unlabeled: int, config: EngineConfig) -> bool:
  """Whether keeping f on every unlabeled point costs less than scoring batches through blocks.

  Cached: n_u new-block features per step. Chunked: on average B (T / 2 + C) per step.
  """
  per_shard = -(-num_unlabeled // config.num_shards)
  batch = config.unlabeled_batch_size // config.num_shards
  return per_shard <= batch * (config.num_steps / 2 + config.chunk_size)
