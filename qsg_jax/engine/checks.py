"""Boundary checks of the pure API: concrete inputs raise a clear error, traced ones poison.

``qsg_jax.fit`` checks its inputs once before training. The pure ``init`` / ``train`` /
``train_chunk`` / ``train_sharded`` make the same checks on whatever they can read; under
``jit`` / ``vmap`` (a grid's traced hyper-parameters) ``valid`` is the same rule as a traced
bool, and ``poisoned`` turns a run with invalid values into NaN coefficients and scores
instead of finite wrong numbers.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics
from qsg_jax.engine.types import BUCKETS_PER_OCTAVE
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import State
from qsg_jax.engine.types import TrainData


def readable(x) -> bool:
  """Whether this process can read ``x``'s values: not traced, and not a global array spanning
  other processes' devices (multi-process runs check their own shards before placing them)."""
  return not validation.is_traced(x) and getattr(x, "is_fully_addressable", True)


def check_data(data: TrainData, k: int):
  """The checks ``qsg_jax.fit`` makes, on a concrete ``TrainData`` (no-ops under jit / vmap):
  shapes, finite points, labels 0..k-1 with every class present."""
  x_l, y_l, x_u = data
  if x_l.ndim != 2 or x_u.ndim != 2 or x_l.shape[1] != x_u.shape[1] or y_l.shape != x_l.shape[:1]:
    raise ValueError(f"TrainData needs x_labeled [n_l, d], y_labeled [n_l], x_unlabeled [n_u, d]; "
                     f"received {x_l.shape}, {y_l.shape}, {x_u.shape}.")
  for name, x in (("data.x_labeled", x_l), ("data.x_unlabeled", x_u)):
    if readable(x):
      validation.check_points(name, x)
  if not readable(y_l):
    return
  validation.check_class_labels(y_l, k, name="data.y_labeled")
  missing = sorted(set(range(k)) - set(np.unique(np.asarray(y_l)).tolist()))
  if missing:
    raise ValueError(f"data.y_labeled has no point of class(es) {missing[:10]} of k = {k} "
                     "(config.num_classes); every class 0..k-1 needs a labeled point.")


def check_num_rows(name: str, value, rows: int) -> int:
  """n_u (``name`` "num_unlabeled") or n_l ("num_labeled") for ``init``: ``rows`` by default,
  else an int in [1, rows] (the unlabeled layout is checked against the strata when training:
  ``check_rows``)."""
  if value is None:
    return rows
  if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
    raise TypeError(f"{name} must be an int (the real rows of a padded layout) or None; received "
                    f"{value!r:.40}.")
  if not 1 <= value <= rows:
    data = "x_unlabeled" if name == "num_unlabeled" else "x_labeled"
    raise ValueError(f"{name}={value} does not fit data.{data}'s {rows} rows: expected 1 <= "
                     f"{name} <= {rows}. Pass the count bucket_data (or shard_unlabeled) was "
                     "given, or None for every row.")
  return int(value)


def check_rows(state: State, data: TrainData, config: EngineConfig, sharded: bool):
  """One device samples the rows as they are (n_u rows, or ``loop.bucket_data``'s padded
  bucket); with D > 1 strata ``train_sharded`` takes the padded layout of ``shard_unlabeled``
  (the other layout would train on shifted rows). Other row counts are other data: refused."""
  if not readable(state.num_unlabeled):
    return
  n_u, rows = int(state.num_unlabeled), data.x_unlabeled.shape[0]
  bucket = numerics.bucket_rows(n_u, per_octave=BUCKETS_PER_OCTAVE)   # ``loop.bucket_data``
  if config.num_shards == 1 and rows not in (n_u, bucket):
    raise ValueError(f"data.x_unlabeled has {rows} rows but the state was built by init for "
                     f"n_u = {n_u}: train continues on the TrainData init got. Pass that data, "
                     "or init a new state for this one.")
  want = config.num_shards * -(-n_u // config.num_shards) if sharded else n_u   # padded
  if rows != want and (sharded or rows != bucket):
    raise ValueError(
        f"data.x_unlabeled has {rows} rows; {'train_sharded' if sharded else 'one-device train'} "
        f"with num_shards={config.num_shards} and n_u={n_u} expects {want}: "
        + ("pass shard_unlabeled(x_u, num_shards)." if sharded else
           "pass the unlabeled points themselves (shard_unlabeled's layout is for "
           "train_sharded)."))


def check_labeled(state: State, data: TrainData):
  """Refuses labeled points other than those ``init`` built the state for: their scores and
  class weights live in the state, so other labels would be ignored (concrete inputs)."""
  n_l, want = data.x_labeled.shape[0], state.head_labeled.shape[-1]
  if n_l != want:
    raise ValueError(f"data.x_labeled has {n_l} rows but the state was built by init for "
                     f"{want}: train continues on the TrainData init got. Pass that data, or "
                     "init a new state for this one.")
  if readable(data.y_labeled) and readable(state.class_order):
    y = np.asarray(data.y_labeled)
    counts = np.asarray(state.class_counts)
    if not np.array_equal(y[np.asarray(state.class_order)[:counts.sum()]],
                          np.repeat(np.arange(counts.size), counts)):
      raise ValueError("data.y_labeled differs from the labels the state was built with (init "
                       "sorted the points by class and weighted them; other labels would be "
                       "ignored). Pass the TrainData init got, or init a new state.")


def _hyper_rules(hyper: Hyperparams, xp):
  """(name, value, ok(value) elementwise, wanted) of every hyper-parameter that is set."""
  rules = (("sigma", hyper.sigma, lambda v: xp.isfinite(v) & (v > 0), "finite and > 0"),
           ("lam", hyper.lam, lambda v: xp.isfinite(v) & (v >= 0), "finite and >= 0"),
           ("gamma", hyper.gamma, lambda v: (v >= 0) & (v <= 1), "in [0, 1]"),
           ("eta0", hyper.eta0, lambda v: xp.isfinite(v) & (v > 0), "finite and > 0"),
           ("split_lam", hyper.split_lam, lambda v: v > 0, "> 0 (inf freezes the corrections)"))
  return [rule for rule in rules if rule[1] is not None]


def check_split_lam(config: EngineConfig, hyper: Hyperparams) -> None:
  """Raises (at trace time) when ``hyper.split_lam`` and ``config.split_corrections`` disagree."""
  if config.split_corrections and hyper.split_lam is None:
    raise ValueError("EngineConfig.split_corrections=True needs Hyperparams.split_lam (lam_g > 0, "
                     "or inf to freeze the corrections at 0); received split_lam=None.")
  if not config.split_corrections and hyper.split_lam is not None:
    raise ValueError("Hyperparams.split_lam is set but EngineConfig.split_corrections=False, so it "
                     "would be ignored: build the config with split_corrections=True, or pass "
                     "split_lam=None.")


def _schedule_values(schedule, num_steps: int) -> np.ndarray:
  """[num_steps - 1] float64 eta_1.. of a schedule callable, one compilation per (schedule,
  num_steps): a fit trains in segments, each checked (a jit made per call compiled per segment)."""
  try:
    hash(schedule)
  except TypeError:   # an unhashable callable: computed every time
    return _cached_schedule_values.__wrapped__(schedule, num_steps)
  return _cached_schedule_values(schedule, num_steps)


@functools.lru_cache(maxsize=32)
def _cached_schedule_values(schedule, num_steps: int) -> np.ndarray:
  values = np.asarray(jax.jit(jax.vmap(schedule))(jnp.arange(1, num_steps)), np.float64)
  values.flags.writeable = False
  return values


def check_hyper(hyper: Hyperparams, config: EngineConfig):
  """Shapes always, values when concrete (the checks ``qsg_jax.fit`` makes on its arguments),
  and a schedule callable whose eta_t lam reaches 1 after step 0 (``step.decay``)."""
  k1 = config.num_classes - 1
  for name, value in hyper._asdict().items():
    if isinstance(value, (list, tuple)):   # a pytree of leaves, not one array: refused early
      raise TypeError(f"hyper.{name} is a {type(value).__name__}; pass an array, e.g. "
                      f"jnp.asarray({value!r:.40}).")
  for name in ("sigma", "lam", "eta0"):   # a grid given without jax.vmap
    value = getattr(hyper, name)
    if value is not None and not callable(value) and jnp.ndim(value):
      raise ValueError(f"hyper.{name} must be a scalar; received shape {jnp.shape(value)}. Train "
                       "over a grid with jax.vmap (one Hyperparams per grid point).")
  if jnp.shape(hyper.gamma) != (k1,):
    raise ValueError(f"hyper.gamma must have shape [k-1] = [{k1}]; received "
                     f"{jnp.shape(hyper.gamma)} (broadcast a scalar: jnp.full({k1}, gamma)).")
  for name, value, ok, want in _hyper_rules(hyper, np):
    if readable(value):
      v = np.asarray(value, np.float64)
      if not np.all(ok(v)):
        raise ValueError(f"hyper.{name} must be {want}; received {v.tolist()}.")
  if config.schedule is not None and hyper.eta0 is None and readable(hyper.lam):
    eta = _schedule_values(config.schedule, config.num_steps)
    rate = eta * float(hyper.lam)
    if np.any(rate >= 1):
      t = int(np.argmax(rate >= 1)) + 1
      raise ValueError(
          f"EngineConfig.schedule gives eta = {eta[t - 1]:.3g} at iteration {t} with lam = "
          f"{float(hyper.lam):.3g}: eta lam = {rate[t - 1]:.3g} >= 1 makes Eq. (14)'s decay "
          "1 - eta lam <= 0, which erases or flips the sign of every earlier block (the papers' "
          "analysis needs eta lam < 1). Use a smaller step or lam, or the default schedule "
          "eta0 / (1 + eta0 lam t) (Hyperparams.eta0), whose decays stay in (0, 1].")


def check_phases(data: TrainData, sigma):
  """``validation.check_phase_range`` of every concrete point set: a point of norm 1e30 would
  give NaN features, so a NaN model."""
  if readable(sigma):
    for name, x in (("data.x_labeled", data.x_labeled), ("data.x_unlabeled", data.x_unlabeled)):
      if readable(x):
        validation.check_phase_range(name, np.asarray(x), float(sigma))


def check_sigma(state: State, hyper: Hyperparams):
  """Refuses (when both are concrete) a sigma other than the one the state's blocks have."""
  if readable(state.sigma) and readable(hyper.sigma):
    trained = np.float32(state.sigma)
    if trained > 0 and trained != np.float32(hyper.sigma):
      raise ValueError(f"the state's blocks were trained with sigma={trained:g}; received "
                       f"hyper.sigma={float(hyper.sigma):g}. Continue (or score) with the same "
                       "sigma, or start a new run with init.")


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
  if readable(state.step):
    done = int(state.step)
    if done + num_steps > config.num_steps:
      raise ValueError(f"the state has done {done} of config.num_steps={config.num_steps} steps; "
                       f"{num_steps} more would run past the last feature block. Train at most "
                       f"{config.num_steps - done} more steps, or build a config with more steps.")
  return num_steps


def check_training(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
                   num_steps, sharded: bool = False) -> int:
  """Every check of a training call; returns ``num_steps`` as an int."""
  check_rows(state, data, config, sharded)
  check_labeled(state, data)
  check_split_lam(config, hyper)
  check_hyper(hyper, config)
  check_sigma(state, hyper)
  check_phases(data, hyper.sigma)
  return check_steps(state, config, num_steps)


def valid(state: State, hyper: Hyperparams, config: EngineConfig, num_steps: int) -> jax.Array:
  """The traced form of the checks: bool scalar, False for an invalid hyper-parameter, a sigma
  other than the state's, or steps past the last feature block."""
  ok = state.step + num_steps <= config.num_steps
  for _, value, rule, _ in _hyper_rules(hyper, jnp):
    ok = ok & jnp.all(rule(jnp.asarray(value)))
  return ok & ((state.sigma == 0) | (state.sigma == hyper.sigma))


def poisoned(state: State, ok: jax.Array) -> State:
  """``state`` with NaN coefficients and scores of every head where ``ok`` is False."""
  nan = lambda a: jnp.where(ok, a, jnp.nan)
  return state._replace(head_coef=nan(state.head_coef), head_scale=nan(state.head_scale),
                        head_labeled=nan(state.head_labeled),
                        head_unlabeled=nan(state.head_unlabeled))
