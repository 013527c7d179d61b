"""The blocked DSG engine of QS3ORAO (k ordered classes) and QSG-S2AUC (its k = 2 case).

Iteration i (0-based) of the papers' Algorithm 1 draws per-class labeled mini-batches and an
unlabeled mini-batch, regenerates feature block i from (feature_key, i), scores the sampled points
with f_i = sum_{j<i} alpha_j . phi_j, and sets

    alpha_i = -eta_i * d R / d alpha_i       (Eq. 13 with the l5/l6 typo fixed, see qsg_jax.risk)
    alpha_j <- (1 - eta_i lambda) alpha_j     for j < i                       (Eq. 14)

The engine computes exactly these coefficients with less work:
  * the decay (Eq. 14) is one running scalar ``scale``: stored ``coef_j = alpha_j / scale``;
  * every labeled point's score is kept current (one new block per step over n_l points), so
    labeled points are never predicted through old blocks;
  * samples of a chunk of C iterations are drawn up front (sampling does not depend on the
    model); the chunk's unlabeled points are scored through all blocks of earlier chunks in one
    large blocked matrix product, and only blocks created inside the chunk are added step by step.
Peak memory is O(T m + n_l + C B (d + m)) beyond the data, for any number of unlabeled points.
When the unlabeled set is small (n_u below about B T / 2, see ``use_unlabeled_cache``) it is
cheaper to keep every unlabeled score current like the labeled ones (``cache_unlabeled``):
O(n_u m) per step instead of O(B t m). Both modes give the same coefficients.
"""

import functools
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp

from qsg_jax import features
from qsg_jax import risk
from qsg_jax import sampling

# Below this magnitude the running scale is folded into the stored coefficients.
_RENORMALIZE_BELOW = 1e-20


class EngineConfig(NamedTuple):
  """Static configuration (shapes, counts, functions); hashable, passed to jit as static."""
  num_classes: int                      # k >= 2; k = 2 is QSG-S2AUC.
  num_steps: int                        # T iterations = T feature blocks.
  num_frequencies: int = 32             # m frequencies per block (2m features).
  labeled_batch_size: Optional[int] = None   # b per class, or None: all labeled points.
  unlabeled_batch_size: int = 128       # B unlabeled points per iteration.
  loss: str = "squared"                 # pairwise loss name (qsg_jax.losses).
  step_size: Optional[Callable] = None  # schedule(step) -> eta; None: eta0 / (1 + eta0 lam t).
  chunk_size: int = 32                  # C iterations whose samples are drawn up front.
  block_group: int = 8                  # feature blocks per matrix product when predicting.
  predict_chunk: int = 4096             # points per matrix product when predicting.
  num_shards: int = 1                   # strata of the unlabeled set; = devices when sharded.
  cache_unlabeled: bool = False         # keep f on every unlabeled point (small n_u), see below.


class Hyperparams(NamedTuple):
  """Numeric hyper-parameters (arrays: may be traced, vmapped over a grid)."""
  sigma: jax.Array  # scalar, Gaussian kernel k(x, x') = exp(-sigma ||x - x'||^2).
  lam: jax.Array    # scalar, regularization lambda.
  gamma: jax.Array  # [k-1], PN vs PU+NU trade-off per subproblem.
  eta0: jax.Array   # scalar, initial step of the default schedule.


class TrainData(NamedTuple):
  x_labeled: jax.Array    # [n_l, d] float32.
  y_labeled: jax.Array    # [n_l] int32 in 0..k-1.
  x_unlabeled: jax.Array  # [n_u, d] float32, n_u >= 1.


class State(NamedTuple):
  """Training state after ``step`` iterations."""
  step: jax.Array         # int32 scalar, iterations done.
  coef: jax.Array         # [T, 2m] float32, alpha_j / scale (rows >= step are zero).
  scale: jax.Array        # float32 scalar, running product of decays since last renormalization.
  f_labeled: jax.Array    # [n_l] float32, current f on every labeled point.
  u_unlabeled: jax.Array  # [n_u] float32, f / scale on every unlabeled point if cached, else [0].
  feature_key: jax.Array  # PRNG key of the feature blocks.
  sample_key: jax.Array   # PRNG key of the mini-batches.


class Model(NamedTuple):
  """What prediction needs: f(x) = scale * sum_j coef_j . phi_j(x)."""
  feature_key: jax.Array  # PRNG key of the feature blocks.
  coef: jax.Array         # [T, 2m] float32.
  scale: jax.Array        # float32 scalar.
  sigma: jax.Array        # float32 scalar.


def inverse_time_schedule(eta0, lam):
  """eta_t = eta0 / (1 + eta0 lam t): starts at eta0, decays like 1 / (lam t) (theta = 1/lam)."""
  return lambda step: eta0 / (1.0 + eta0 * lam * step)


def step_size(config: EngineConfig, hyper: Hyperparams, step):
  """eta of iteration ``step`` (0-based) from the configured schedule."""
  if config.step_size is not None:
    return jnp.asarray(config.step_size(step), jnp.float32)
  return inverse_time_schedule(hyper.eta0, hyper.lam)(step.astype(jnp.float32))


def model_of(state: State, hyper: Hyperparams) -> Model:
  return Model(state.feature_key, state.coef, state.scale, jnp.asarray(hyper.sigma, jnp.float32))


def init(key, data: TrainData, config: EngineConfig) -> State:
  """Initial state: no blocks yet, f = 0."""
  feature_key, sample_key = jax.random.split(key)
  return State(
      step=jnp.zeros((), jnp.int32),
      coef=jnp.zeros((config.num_steps, 2 * config.num_frequencies), jnp.float32),
      scale=jnp.ones((), jnp.float32),
      f_labeled=jnp.zeros(data.x_labeled.shape[0], jnp.float32),
      u_unlabeled=jnp.zeros(data.x_unlabeled.shape[0] if config.cache_unlabeled else 0,
                            jnp.float32),
      feature_key=feature_key,
      sample_key=sample_key)


def scores_through_blocks(feature_key, coef, num_blocks, x, sigma, block_group):
  """Unscaled sum_{j < num_blocks} coef_j . phi_j(x), block_group blocks per matrix product.

  Args:
    feature_key: PRNG key of the feature blocks.
    coef: [T, 2m] stored coefficients.
    num_blocks: int32 scalar (may be traced), a multiple of ``block_group``.
    x: [n, d] points.
    sigma: kernel parameter.
    block_group: static group size g (must divide T).

  Returns:
    [n] unscaled scores.
  """
  m = coef.shape[1] // 2

  def body(group, acc):
    blocks = group * block_group + jnp.arange(block_group)
    omega = features.sample_frequency_blocks(feature_key, blocks, m, x.shape[1], sigma)
    return acc + features.grouped_scores(x, omega, coef[blocks])

  return jax.lax.fori_loop(0, num_blocks // block_group, body, jnp.zeros(x.shape[0], x.dtype))


def _predict_unscaled(model: Model, x, block_group, predict_chunk):
  num_blocks = model.coef.shape[0]
  n = x.shape[0]
  chunk = min(predict_chunk, n)
  pad = (-n) % chunk
  xs = jnp.pad(x, ((0, pad), (0, 0))).reshape(-1, chunk, x.shape[1])
  out = jax.lax.map(
      lambda xc: scores_through_blocks(model.feature_key, model.coef, num_blocks, xc,
                                       model.sigma, block_group), xs)
  return out.reshape(-1)[:n]


@functools.partial(jax.jit, static_argnames=("block_group", "predict_chunk"))
def predict(model: Model, x, block_group=8, predict_chunk=4096):
  """Ranking scores f(x) through every feature block (Algorithm 2), chunked over points.

  Args:
    model: trained ``Model``.
    x: [n, d] points, preprocessed like the training data.
    block_group: blocks per matrix product (must divide T).
    predict_chunk: points per matrix product.

  Returns:
    [n] float32 scores.
  """
  return model.scale * _predict_unscaled(model, x, block_group, predict_chunk)


def predict_sharded(model: Model, x, mesh, axis_name="data", block_group=8, predict_chunk=4096):
  """``predict`` with the points split over the devices of ``mesh`` axis ``axis_name``.

  Args:
    model: trained ``Model`` (replicated to every device).
    x: [n, d] points.
    mesh: ``jax.sharding.Mesh``.
    axis_name: mesh axis to split the points over.
    block_group: blocks per matrix product.
    predict_chunk: points per matrix product on each device.

  Returns:
    [n] scores.
  """
  devices = mesh.shape[axis_name]
  n = x.shape[0]
  per_device = -(-n // devices)
  x = jnp.pad(x, ((0, per_device * devices - n), (0, 0)))
  spec = jax.sharding.PartitionSpec(axis_name)
  x = jax.device_put(x, jax.sharding.NamedSharding(mesh, spec))
  model = jax.device_put(model, jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec()))
  scores = _predict_sharded_jit(model, x, mesh, axis_name, block_group, predict_chunk)
  replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  return jax.reshard(scores, replicated)[:n]


@functools.partial(jax.jit, static_argnames=("mesh", "axis_name", "block_group", "predict_chunk"))
def _predict_sharded_jit(model, x, mesh, axis_name, block_group, predict_chunk):
  spec = jax.sharding.PartitionSpec(axis_name)
  fn = jax.shard_map(lambda m, xs: m.scale * _predict_unscaled(m, xs, block_group, predict_chunk),
                     mesh=mesh, in_specs=(jax.sharding.PartitionSpec(), spec), out_specs=spec,
                     check_vma=False)
  return fn(model, x)


def _renormalize(coef, u_pool, scale):
  """Folds ``scale`` into the stored coefficients and partial scores (rare, exact)."""
  return coef * scale, u_pool * scale, jnp.ones_like(scale)


def use_unlabeled_cache(num_unlabeled, config: EngineConfig):
  """Whether keeping f on every unlabeled point costs less than scoring batches through blocks.

  Cached: n_u new-block features per step. Chunked: on average B (T / 2 + C) per step.
  """
  per_shard = -(-num_unlabeled // config.num_shards)
  batch = config.unlabeled_batch_size // config.num_shards
  return per_shard <= batch * (config.num_steps / 2 + config.chunk_size)


def train_chunk(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
                pos_w, neg_w, num_unlabeled=None, axis_name=None):
  """Runs ``config.chunk_size`` iterations from ``state``.

  The unlabeled points whose features each step computes (the "pool") are the chunk's sampled
  points, scored through earlier chunks' blocks up front, or with ``config.cache_unlabeled``
  every unlabeled point, whose scores the state carries. Either way the pool keeps unscaled
  partial scores u (f = scale * u) and each new block is added to them.

  Args:
    state: current ``State`` (its step is a multiple of the chunk size).
    data: ``TrainData``. Under ``shard_map`` its ``x_unlabeled`` is this device's stratum.
    hyper: ``Hyperparams``.
    config: static ``EngineConfig``.
    pos_w: [k-1, S] subproblem weights of the labeled slots (``risk.subproblem_weights``).
    neg_w: [k-1, S].
    num_unlabeled: n_u of the whole unlabeled set (static); default ``len(x_unlabeled)``.
    axis_name: mesh axis the unlabeled strata are split over (inside ``shard_map``), or None.

  Returns:
    (new state, per-iteration metrics dict of [C] arrays: "eta", "max_abs_score").
  """
  c, m = config.chunk_size, config.num_frequencies
  num_unlabeled = num_unlabeled or data.x_unlabeled.shape[0]
  shard = None if axis_name is None else jax.lax.axis_index(axis_name)
  b = config.unlabeled_batch_size // (1 if axis_name is None else config.num_shards)
  num_l = data.x_labeled.shape[0]
  index = sampling.class_index(data.y_labeled, config.num_classes)
  steps = state.step + jnp.arange(c, dtype=jnp.int32)
  samples = jax.vmap(
      lambda t: sampling.sample_step(state.sample_key, t, index, config.labeled_batch_size,
                                     config.unlabeled_batch_size, num_unlabeled,
                                     config.num_shards, shard))(steps)
  if config.cache_unlabeled:
    x_pool, u_pool = data.x_unlabeled, state.u_unlabeled              # [n_u, d], [n_u]
    batch_rows = samples.unlabeled                                     # [C, B] pool rows
  else:
    x_pool = data.x_unlabeled[samples.unlabeled.reshape(-1)]           # [C*B, d]
    # The chunk's points through all blocks of earlier chunks: one large blocked product.
    u_pool = scores_through_blocks(state.feature_key, state.coef, state.step, x_pool,
                                   hyper.sigma, config.block_group)
    batch_rows = jnp.arange(c * b, dtype=jnp.int32).reshape(c, b)

  def step(carry, r):
    coef, scale, f_labeled, u_pool = carry
    i = state.step + r
    omega = features.sample_frequencies(state.feature_key, i, m, data.x_labeled.shape[1],
                                        hyper.sigma)
    phi_labeled = features.fourier_features(data.x_labeled, omega)     # [n_l, 2m]
    phi_pool = features.fourier_features(x_pool, omega)                # [pool, 2m]
    slots, rows = samples.labeled[r], batch_rows[r]
    g_slots, g_u = risk.score_grads(config.loss, f_labeled[slots], scale * u_pool[rows],
                                    pos_w, neg_w, hyper.gamma, axis_name)
    g_labeled = jnp.zeros(num_l, g_slots.dtype).at[slots].add(g_slots)
    grad_u = g_u @ phi_pool[rows]
    if axis_name is not None:
      grad_u = jax.lax.psum(grad_u, axis_name)
    eta = step_size(config, hyper, i)
    alpha = -eta * (g_labeled @ phi_labeled + grad_u)                  # Eq. (13), [2m]
    decay = 1.0 - eta * hyper.lam                                      # Eq. (14)
    new_scale = scale * decay
    coef, u_pool, new_scale = jax.lax.cond(
        jnp.abs(new_scale) < _RENORMALIZE_BELOW, _renormalize,
        lambda *a: a, coef, u_pool, new_scale)
    stored = alpha / new_scale
    coef = coef.at[i].set(stored)
    f_labeled = decay * f_labeled + phi_labeled @ alpha
    u_pool = u_pool + phi_pool @ stored
    metrics = {"eta": eta, "max_abs_score": jnp.max(jnp.abs(f_labeled))}
    return (coef, new_scale, f_labeled, u_pool), metrics

  carry = (state.coef, state.scale, state.f_labeled, u_pool)
  (coef, scale, f_labeled, u_pool), metrics = jax.lax.scan(step, carry, jnp.arange(c))
  state = state._replace(step=state.step + c, coef=coef, scale=scale, f_labeled=f_labeled)
  if config.cache_unlabeled:
    state = state._replace(u_unlabeled=u_pool)
  return state, metrics


def _train_chunks(state, data, hyper, config, num_chunks, num_unlabeled=None, axis_name=None):
  slot_classes = sampling.slot_classes(data.y_labeled, config.num_classes,
                                       config.labeled_batch_size)
  class_counts = jnp.bincount(data.y_labeled, length=config.num_classes)
  pos_w, neg_w = risk.subproblem_weights(slot_classes, class_counts)

  def body(state, _):
    return train_chunk(state, data, hyper, config, pos_w, neg_w, num_unlabeled, axis_name)

  state, metrics = jax.lax.scan(body, state, None, length=num_chunks)
  return state, jax.tree.map(lambda a: a.reshape(-1), metrics)


@functools.partial(jax.jit, static_argnames=("config", "num_chunks"))
def train(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig, num_chunks):
  """Runs ``num_chunks`` chunks of iterations on one device: a ``lax.scan`` of ``train_chunk``.

  Pure and jittable; ``fit`` adds input checks, progress and divergence detection. Vmap it over
  keys (independent trials) or over ``Hyperparams`` (a grid) as needed.

  Returns:
    (new state, metrics dict of [num_chunks * C] arrays).
  """
  return _train_chunks(state, data, hyper, config, num_chunks)


def shard_unlabeled(x_unlabeled, num_shards):
  """Lays the unlabeled rows out as ``num_shards`` equal blocks, one stratum each (zero padded).

  Args:
    x_unlabeled: [n_u, d].
    num_shards: D.

  Returns:
    [D * L, d] with L = ceil(n_u / D); stratum s (``sampling.strata``) starts at row s * L.
    Padding rows are never sampled.
  """
  sizes, offsets = sampling.strata(x_unlabeled.shape[0], num_shards)
  rows = int(sizes.max())
  parts = [jnp.pad(x_unlabeled[o:o + n], ((0, rows - n), (0, 0))) for o, n in zip(offsets, sizes)]
  return jnp.concatenate(parts)


def train_sharded(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
                  num_chunks, mesh, num_unlabeled, axis_name="data"):
  """``train`` with the unlabeled set split over the devices of ``mesh`` axis ``axis_name``.

  Each device holds one stratum of the unlabeled points (``config.num_shards`` must equal the
  axis size), scores its share of every chunk through all blocks, and the per-step gradient is
  combined with one ``psum`` of a [2m] vector and two of [S] vectors; labeled points and
  coefficients are replicated. Equals ``train`` with the same ``num_shards`` on one device.

  Args:
    state: ``State`` (replicated).
    data: ``TrainData`` whose ``x_unlabeled`` is ``shard_unlabeled(x_u, num_shards)``.
    hyper: ``Hyperparams``.
    config: ``EngineConfig`` with ``num_shards`` = mesh.shape[axis_name].
    num_chunks: chunks to run.
    mesh: ``jax.sharding.Mesh`` (may span several hosts after ``jax.distributed.initialize``).
    num_unlabeled: n_u before padding (static int).
    axis_name: the mesh axis to split the unlabeled data over.

  Returns:
    (new state, metrics), replicated.
  """
  if mesh.shape[axis_name] != config.num_shards:
    raise ValueError(f"config.num_shards={config.num_shards} must equal the size "
                     f"{mesh.shape[axis_name]} of mesh axis {axis_name!r}.")
  if config.unlabeled_batch_size % config.num_shards:
    raise ValueError(f"unlabeled_batch_size={config.unlabeled_batch_size} must be a multiple of "
                     f"num_shards={config.num_shards}.")
  replicated = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(axis_name))
  state, hyper = jax.device_put((state, hyper), replicated)
  state = state._replace(u_unlabeled=jax.device_put(state.u_unlabeled, split))
  data = TrainData(*jax.device_put((data.x_labeled, data.y_labeled), replicated),
                   jax.device_put(data.x_unlabeled, split))
  return _train_sharded_jit(state, data, hyper, config, num_chunks, mesh, int(num_unlabeled),
                            axis_name)


@functools.partial(jax.jit,
                   static_argnames=("config", "num_chunks", "mesh", "num_unlabeled", "axis_name"))
def _train_sharded_jit(state, data, hyper, config, num_chunks, mesh, num_unlabeled, axis_name):
  replicated = jax.sharding.PartitionSpec()
  split = jax.sharding.PartitionSpec(axis_name)
  data_specs = TrainData(replicated, replicated, split)
  state_specs = jax.tree.map(lambda _: replicated, state)._replace(u_unlabeled=split)
  fn = jax.shard_map(
      functools.partial(_train_chunks, config=config, num_chunks=num_chunks,
                        num_unlabeled=num_unlabeled, axis_name=axis_name),
      mesh=mesh, in_specs=(state_specs, data_specs, replicated),
      out_specs=(state_specs, replicated), check_vma=False)
  return fn(state, data, hyper)
