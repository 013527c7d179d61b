"""``fit``: the checked entry point of QS3ORAO / QSG-S2AUC (re-exported as ``qsg_jax.fit``).

One switch, ``FitConfig.solver``, picks how the objective is minimized (``config.choose_solver``):
"dsg" is the papers' Algorithm 1, unchanged: checked inputs -> step size -> engine config ->
engine segments (with progress) -> divergence -> thresholds, over ``qsg_jax.engine``, the pure
jittable core; "direct" solves the squared-loss objective exactly over Nystrom features
(``qsg_jax.direct``) and fits the same thresholds; "auto" picks direct for the squared loss.
Both give a ``FitResult`` that ``decision_function``, ``predict``, ``split_scores`` and
``qsg_jax.io`` take; ``FitResult.solver`` says which ran. The hyper-parameters arrive as one
``FitConfig`` (or as its field names, as keyword arguments).
"""

import math
from typing import Callable, NamedTuple, Optional, Tuple, Union

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import config as config_lib
from qsg_jax import direct
from qsg_jax import distributed
from qsg_jax import engine
from qsg_jax import memory
from qsg_jax import numerics
from qsg_jax import thresholds as thresholds_lib
from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import CHUNK_SIZE
from qsg_jax.config import DIVERGENCE_THRESHOLD
from qsg_jax.config import FitConfig
from qsg_jax.config import NUM_SEGMENTS
from qsg_jax.engine import auto_step
from qsg_jax.errors import DivergenceError


class FitResult(NamedTuple):
  """A fitted model: score it with ``decision_function``, ``predict``, ``split_scores``."""
  model: Union[engine.Model, direct.NystromModel]  # DSG: engine.Model; direct: NystromModel.
  thresholds: jax.Array      # [k-1] ordered thresholds on f (ordinal prediction).
  state: Optional[engine.State]  # DSG's final training state (f on the labeled points
                                 # included); None for the direct solver.
  metrics: dict              # DSG: per-iteration NumPy arrays "eta", "max_abs_score"; direct:
                             # "solver", "num_features" (p), "kernel_residual".
  config: engine.EngineConfig  # num_classes, and how DSG models are scored.
  num_features: int          # d, checked at prediction time.
  solver: str = "dsg"        # the solver that ran: "dsg" or "direct".
  feature_names: Optional[Tuple[str, ...]] = None  # x_labeled's column names when it was a
                             # data frame: a frame scored must have them, in order.
  training_box: Optional[np.ndarray] = None  # DSG: [2, d] float32 column minima and maxima of
                             # the training points; rows far outside it warn when scored.


class Inputs(NamedTuple):
  """Checked training data: float32 points, int32 labels 0..k-1."""
  x_labeled: np.ndarray    # [n_l, d]
  y_labeled: np.ndarray    # [n_l]
  x_unlabeled: np.ndarray  # [n_u, d]; one zero row, never weighted, when there is none.
  num_classes: int
  has_unlabeled: bool      # False: only gamma = 1 (no weight on the unlabeled risks) may train.


def fit(x_labeled, y_labeled, x_unlabeled=None, *, config: Optional[FitConfig] = None, key=0,
        num_classes: Optional[int] = None, progress: Optional[Callable[[dict], None]] = None,
        mesh: Optional[jax.sharding.Mesh] = None, axis_name: str = "data",
        num_shards: Optional[int] = None, cache_unlabeled: Optional[bool] = None,
        chunk_size: int = CHUNK_SIZE, block_group: int = BLOCK_GROUP,
        num_segments: int = NUM_SEGMENTS,
        threshold_surrogate: str = "hinge",
        divergence_threshold: float = DIVERGENCE_THRESHOLD, **hyperparams) -> FitResult:
  """Trains QS3ORAO (k ordered classes) or QSG-S2AUC (k = 2) and fits the thresholds.

  ``config.solver`` picks the solver (``qsg_jax.config.choose_solver``): "dsg" (the default) is
  exactly the papers' Algorithm 1; "direct" minimizes the squared-loss objective exactly over
  Nystrom features (``qsg_jax.direct``); "auto" runs "direct" for the squared loss unless a
  DSG-only setting is given. DSG-only: the fields ``config.DSG_FIELDS`` (step_size, num_steps,
  num_frequencies, batch sizes) and the options num_shards, cache_unlabeled, chunk_size,
  block_group, num_segments, divergence_threshold; direct-only: num_landmarks. Given to the
  other solver (different from their defaults) they raise ``ValueError``; "auto" runs DSG when
  one is given. ``result.solver`` says which ran.

  Args:
    x_labeled: [n_l, d] labeled points (preprocessed, e.g. min-max scaled). A data frame's
      string column names are kept (``result.feature_names``): frames scored later, and
      ``x_unlabeled``, must have them in this order.
    y_labeled: [n_l] int classes 0..k-1, every class present (binary: 1 = positive, 0 = negative).
    x_unlabeled: [n_u, d] unlabeled points; may be None/empty only if every gamma is 1.
    config: the hyper-parameters (``FitConfig``; default ``FitConfig()``).
    key: PRNG key or int seed (0..2**63-1; distinct seeds give distinct streams).
    num_classes: k; default max(y_labeled) + 1.
    progress: optional callable(dict) called after each segment with "step", "num_steps",
      "max_abs_score" (direct: once, step 1 of 1).
    mesh: optional ``jax.sharding.Mesh``: split the unlabeled data over its ``axis_name`` axis
      (DSG: one stratum per device, see ``engine.train_sharded``; direct: the pass over the
      unlabeled points, ``direct.moments``); None runs on one device.
    axis_name: mesh axis to use.
    num_shards: strata of the unlabeled sampling (default: the mesh axis size, or 1). A
      one-device run with num_shards=D draws the same samples as a run on a D-device mesh.
    cache_unlabeled: keep f on every unlabeled point (``EngineConfig.cache_unlabeled``); default
      chooses whichever costs less. Same results either way.
    chunk_size, block_group: iterations whose samples are drawn up front, feature blocks per
      matrix product (speed only).
    num_segments: how many jitted calls training is split into for progress reports.
    threshold_surrogate: "hinge" or "squared_hinge" for ``qsg_jax.fit_thresholds``.
    divergence_threshold: max |f| on labeled points above which training counts as diverged.
    **hyperparams: ``FitConfig`` fields overriding ``config`` (e.g. ``num_steps=256``; help
      texts in ``dataclasses.fields(FitConfig)``). step_size "auto" is eta0 = min(3, 1 /
      (lambda_max(K H) + lam)), half the stability limit of the squared-loss scores (it is
      ``result.metrics["eta"][0]``); split_lam (DSG: one device only) is scored by
      ``split_scores``.

  Returns:
    ``FitResult``.

  Raises:
    ValueError, TypeError: bad inputs (the message says which and how to fix it).
    DivergenceError: scores became non-finite or exploded (DSG).
    qsg_jax.direct.IllPosedSystemError: a singular direct system (lam = 0).
    InsufficientMemoryError: the run would not fit in the device's free memory.

  Warns:
    UnscaledFeaturesWarning: features far outside [0, 1] (unscaled).
    SlowConfigWarning: a num_steps with no divisor near chunk_size (slow).
  """
  if config is not None and not isinstance(config, FitConfig):
    raise TypeError(f"config must be a qsg_jax.FitConfig or None; received "
                    f"{type(config).__name__}. Pass hyper-parameters as FitConfig(...) or as "
                    "keyword arguments.")
  config = (config or FitConfig()).replace(**hyperparams)
  names = validation.column_names(x_labeled)
  given = {"num_shards": num_shards is not None, "cache_unlabeled": cache_unlabeled is not None,
           "chunk_size": chunk_size != CHUNK_SIZE, "block_group": block_group != BLOCK_GROUP,
           "num_segments": num_segments != NUM_SEGMENTS,
           "divergence_threshold": divergence_threshold != DIVERGENCE_THRESHOLD}
  if config_lib.choose_solver(config, [name for name, g in given.items() if g]) == "direct":
    return _fit_direct(x_labeled, y_labeled, x_unlabeled, config, key, num_classes=num_classes,
                       progress=progress, mesh=mesh, axis_name=axis_name,
                       threshold_surrogate=threshold_surrogate)._replace(feature_names=names)
  if isinstance(x_unlabeled, distributed.ShardedUnlabeled):
    raise TypeError("x_unlabeled is a distributed.ShardedUnlabeled, which the direct solver reads "
                    f"(one pass over its strata); this fit runs DSG (solver={config.solver!r}), "
                    "which samples the unlabeled array itself. Pass solver='direct', or for DSG "
                    "the array with mesh=... (engine.train_sharded's strata).")
  return _fit_dsg(x_labeled, y_labeled, x_unlabeled, config, key, num_classes=num_classes,
                  progress=progress, mesh=mesh, axis_name=axis_name, num_shards=num_shards,
                  cache_unlabeled=cache_unlabeled, chunk_size=chunk_size,
                  block_group=block_group, num_segments=num_segments,
                  threshold_surrogate=threshold_surrogate,
                  divergence_threshold=divergence_threshold)._replace(feature_names=names)


def _fit_direct(x_labeled, y_labeled, x_unlabeled, config, key, *, num_classes, progress, mesh,
                axis_name, threshold_surrogate):
  """``fit`` by the direct solver (``qsg_jax.direct.solver``); its boundary checks first."""
  validation.check_callable("progress", progress)
  thresholds_lib.check_surrogate(threshold_surrogate)
  num_classes = validation.check_count("num_classes", num_classes, minimum=2, allow_none=True)
  key = validation.check_key(key)
  if mesh is not None:
    _check_mesh(mesh, axis_name)
  with validation.warnings_at():   # unscaled features, a poor Nystrom map: the caller's line
    out = direct.solver.fit_result(x_labeled, y_labeled, x_unlabeled, config=config, key=key,
                                   num_classes=num_classes, progress=progress, mesh=mesh,
                                   axis_name=axis_name, threshold_surrogate=threshold_surrogate)
  return FitResult(out.model, out.thresholds, None, out.metrics, out.config, out.num_features,
                   solver="direct")


def _fit_dsg(x_labeled, y_labeled, x_unlabeled, config, key, *, num_classes, progress, mesh,
             axis_name, num_shards, cache_unlabeled, chunk_size, block_group, num_segments,
             threshold_surrogate, divergence_threshold):
  """``fit`` by Algorithm 1: the named steps."""
  validation.check_callable("progress", progress)
  thresholds_lib.check_surrogate(threshold_surrogate)
  num_segments = validation.check_count("num_segments", num_segments)
  key = validation.check_key(key)
  inputs = checked_inputs(x_labeled, y_labeled, x_unlabeled, config.sigma, num_classes)
  direct.fitting.warn_if_narrow(inputs.x_labeled, config.sigma, solver="dsg")
  # Rows padded to size buckets (``engine.bucket_data``): a new data size reuses a compilation.
  data, n_l, n_u = engine.bucket_data(engine.TrainData(*inputs[:3]), unlabeled=mesh is None)
  data = engine.TrainData(*map(jnp.asarray, data))   # on the device once, not per segment
  eng = engine_config(inputs._replace(x_labeled=data.x_labeled, x_unlabeled=data.x_unlabeled),
                      config, chunk_size, block_group,
                      _num_shards(mesh, axis_name, num_shards, config), cache_unlabeled)
  divergence_threshold = validation.check_positive("divergence_threshold", divergence_threshold)
  hyper = hyperparams_of(inputs, config, key)
  if mesh is not None:
    distributed.check_same_on_every_process(mesh, **dict(zip(
        ("x_labeled", "y_labeled", "x_unlabeled"), inputs[:3])))
    data = data._replace(x_unlabeled=engine.shard_unlabeled(data.x_unlabeled, eng.num_shards))
    # Once, not per segment: placing host data on several processes gathers it to check it.
    data = engine.sharding.place_train_data(data, mesh, axis_name)
  state = engine.init(key, data, eng, num_unlabeled=n_u, num_labeled=n_l)
  state, metrics = _train_in_segments(state, data, hyper, eng, num_segments, progress, mesh,
                                      axis_name)
  state = engine.trim_state(state, eng, unlabeled=mesh is None)
  check_divergence(metrics, divergence_threshold)
  b = thresholds_lib.fit_thresholds(state.f_labeled, jnp.asarray(inputs.y_labeled),
                                    inputs.num_classes, threshold_surrogate)
  return FitResult(engine.model_of(state, hyper), b, state, metrics, eng,
                   inputs.x_labeled.shape[1], training_box=validation.box_of(
                       inputs.x_labeled, inputs.x_unlabeled if inputs.has_unlabeled else None))


def checked_inputs(x_labeled, y_labeled, x_unlabeled, sigma: float,
                   num_classes: Optional[int] = None) -> Inputs:
  """The training data checked once (types, shapes, finiteness, labels, the phase range at the
  largest ``sigma``), warning about unscaled features."""
  num_classes = validation.check_count("num_classes", num_classes, minimum=2, allow_none=True)
  x_l = validation.check_points("x_labeled", x_labeled, training=True)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  validation.refuse_one_point("x_labeled", x_l)
  has_unlabeled = x_unlabeled is not None and np.asarray(x_unlabeled).size > 0
  x_u = (validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1], training=True,
                                 columns=validation.column_names(x_labeled)) if has_unlabeled
         else np.zeros((1, x_l.shape[1]), np.float32))
  for name, x in (("x_labeled", x_l), ("x_unlabeled", x_u)):
    validation.check_phase_range(name, x, sigma)
    validation.warn_if_unscaled(name, x)
  validation.warn_if_squeezed(x_l, x_u if has_unlabeled else None)
  return Inputs(x_l, y_l, x_u, k, has_unlabeled)


def hyperparams_of(inputs: Inputs, config: FitConfig, key) -> engine.Hyperparams:
  """The traced ``Hyperparams`` of a run; "auto" resolves to the curvature rule's eta0, halved
  with per-split corrections (the per-split scores move by f's step plus g_j's)."""
  gamma = validation.check_gamma(config.gamma, inputs.num_classes)
  if not inputs.has_unlabeled and np.any(gamma < 1):
    raise ValueError(
        f"no unlabeled data but gamma={gamma.tolist()} < 1 gives weight to the unlabeled "
        "risks: pass x_unlabeled, or set gamma=1 for supervised training.")
  eta0 = None if callable(config.step_size) else config.step_size
  if eta0 == "auto":
    # The rule's kernel covers at most MAX_KERNEL_POINTS points (labeled and unlabeled batch).
    n = min(inputs.x_labeled.shape[0] + config.unlabeled_batch_size,
            auto_step.MAX_KERNEL_POINTS)
    memory.check_allocation(3 * 4 * n * n, what=f"the default step's {n} x {n} kernel matrix",
                            fix="Pass a number as step_size (e.g. step_size=1.0).")
    # Corrections that learn share the step with f (half each); frozen ones (inf) do not.
    share = 1.0 if config.split_lam is None or math.isinf(config.split_lam) else 0.5
    eta0 = validation.check_positive("step_size", share * auto_step.auto_step_size(
        *inputs[:4], config.sigma, config.lam, gamma, key, config.unlabeled_batch_size))
  return engine.Hyperparams(
      sigma=jnp.float32(config.sigma), lam=jnp.float32(config.lam), gamma=jnp.asarray(gamma),
      eta0=None if eta0 is None else jnp.float32(eta0),
      split_lam=None if config.split_lam is None else jnp.float32(config.split_lam))


def _check_mesh(mesh, axis_name):
  if not isinstance(mesh, jax.sharding.Mesh):
    raise TypeError(f"mesh must be a jax.sharding.Mesh or None; received {type(mesh).__name__}. "
                    "Build one with jax.make_mesh((num_devices,), ('data',)).")
  if axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r}; its axes are {tuple(mesh.shape)}.")


def _num_shards(mesh, axis_name, num_shards, config):
  num_shards = validation.check_count("num_shards", num_shards, allow_none=True)
  if num_shards and config.unlabeled_batch_size % num_shards:
    raise ValueError(f"num_shards={num_shards} must divide unlabeled_batch_size="
                     f"{config.unlabeled_batch_size} (each stratum gives the same number of "
                     "points per step): pass an unlabeled_batch_size that is a multiple of it.")
  if mesh is None:
    return 1 if num_shards is None else num_shards
  _check_mesh(mesh, axis_name)
  if config.split_lam is not None:
    raise ValueError("split_lam (per-split corrections) runs on one device only with DSG: pass "
                     "mesh=None, split_lam=None for sharded training, or solver='direct'.")
  size = int(mesh.shape[axis_name])
  if num_shards not in (None, size):
    raise ValueError(f"num_shards={num_shards} differs from the size {size} of mesh axis "
                     f"{axis_name!r}; leave num_shards unset when passing a mesh.")
  if config.unlabeled_batch_size % size:   # (each device's stratum: the same share per step)
    raise ValueError(f"mesh axis {axis_name!r} has {size} devices, which must divide "
                     f"unlabeled_batch_size={config.unlabeled_batch_size} (each device samples "
                     "the same share per step): use a mesh of a divisor of it (1, 2, 4, ... "
                     f"devices), an unlabeled_batch_size that is a multiple of {size}, or "
                     "solver='direct' (any number of devices).")
  return size


def engine_config(inputs: Inputs, config: FitConfig, chunk_size=CHUNK_SIZE,
                  block_group=BLOCK_GROUP, num_shards=1, cache_unlabeled=None,
                  num_runs=1) -> engine.EngineConfig:
  """The static ``EngineConfig`` of a run (of ``num_runs`` vmapped runs), refused up front when
  it would not fit in the device's free memory."""
  with validation.warnings_at():   # e.g. a prime num_steps: at the caller's line
    eng = engine.make_config(
        inputs.num_classes, config.num_steps,
        chunk_size=validation.check_count("chunk_size", chunk_size),
        block_group=validation.check_count("block_group", block_group),
        num_frequencies=config.num_frequencies, labeled_batch_size=config.labeled_batch_size,
        unlabeled_batch_size=config.unlabeled_batch_size, loss=config.loss,
        schedule=config.step_size if callable(config.step_size) else None,
        split_corrections=config.split_lam is not None, num_shards=num_shards)
  n_l, d = inputs.x_labeled.shape
  n_u = -(-inputs.x_unlabeled.shape[0] // eng.num_shards)   # per device
  cache_unlabeled = validation.check_bool("cache_unlabeled", cache_unlabeled)
  eng = eng.replace(cache_unlabeled=engine.use_unlabeled_cache(inputs.x_unlabeled.shape[0], eng)
                    if cache_unlabeled is None else cache_unlabeled)
  memory.check_allocation(
      num_runs * memory.fit_bytes(eng, n_l, n_u, d),
      what=f"training {num_runs} run(s) (T = {eng.num_steps} steps of 2m = "
      f"{2 * eng.num_frequencies} features, {n_l} labeled and {n_u} unlabeled points per device)",
      fix="Lower num_steps, num_frequencies, labeled_batch_size or unlabeled_batch_size, or "
      "train on fewer points.")
  return eng


def segment_steps(config: engine.EngineConfig, num_segments: int) -> int:
  """Steps per jitted segment: a multiple of ``chunk_size`` dividing ``num_steps``, giving about
  ``num_segments`` segments (at least that many steps per segment)."""
  chunks = config.num_steps // config.chunk_size
  return config.chunk_size * max(c for c in range(1, chunks + 1)
                                 if chunks % c == 0 and c <= math.ceil(chunks / num_segments))


def _train_in_segments(state, data, hyper, config, num_segments, progress, mesh, axis_name):
  """Trains ``config.num_steps`` steps in jitted segments; returns (state, NumPy metrics)."""
  per_segment = segment_steps(config, num_segments)
  collected = []
  for _ in range(config.num_steps // per_segment):
    if mesh is None:
      state, metrics = engine.train(state, data, hyper, config, per_segment)
    else:
      state, metrics = engine.train_sharded(state, data, hyper, config, per_segment, mesh,
                                            axis_name)
    collected.append(jax.device_get(metrics))
    if progress is not None:
      progress({"step": int(state.step), "num_steps": config.num_steps,
                "max_abs_score": float(np.max(collected[-1]["max_abs_score"]))})
  return state, {name: np.concatenate([m[name] for m in collected]) for name in collected[0]}


def check_divergence(metrics, threshold):
  """Raises ``DivergenceError`` if scores became non-finite or exceeded ``threshold``.

  Raises ``ValueError`` first if a step size was not finite and > 0 (a user's schedule: numbers
  and "auto" are checked before training).
  """
  eta = np.asarray(metrics["eta"])
  bad_eta = ~np.isfinite(eta) | (eta <= 0)
  if bad_eta.any():
    t = int(np.argmax(bad_eta))
    raise ValueError(f"the step_size schedule returned {float(eta[t]):.3g} at iteration {t}; a "
                     "schedule must return finite step sizes > 0 at every iteration.")
  score = np.asarray(metrics["max_abs_score"])
  bad = ~np.isfinite(score) | (score > threshold)
  if bad.any():
    t = int(np.argmax(bad))
    what = "non-finite" if not np.isfinite(score[t]) else f"{score[t]:.3g} (> {threshold:g})"
    raise DivergenceError(
        f"training diverged at iteration {t}: max |f| on the labeled points was {what} with step "
        f"size eta={float(eta[t]):.3g}. Lower the step size (step_size, or your schedule) by a "
        "factor 3-10, or increase lam; scores of a converging run stay of order 1 with the "
        "squared loss.")


def _checked_result(result, x, name="x"):
  """``x`` checked against a ``FitResult`` (type, features, phase range) as a float32 NumPy
  array (jitted programs take it as it is; ``jnp.asarray`` would compile a copy per shape)."""
  if not isinstance(result, FitResult):
    kind = type(result).__name__
    if isinstance(result, direct.DirectFit):
      raise TypeError("result must be the FitResult of qsg_jax.fit; received a DirectFit (of "
                      "qsg_jax.direct.fit), which scores with qsg_jax.direct.decision_function("
                      "fit, x).")
    if callable(getattr(result, "decision_function", None)):   # io.load's models, estimators
      raise TypeError(f"result must be the FitResult of qsg_jax.fit; received a {kind}, which "
                      "scores itself: model.decision_function(x) (and model.predict(x)); "
                      "qsg_jax.io.load returns such a model for a saved FitResult.")
    raise TypeError(f"result must be the FitResult of qsg_jax.fit; received {kind}. For a bare "
                    f"engine.Model use qsg_jax.engine.{name}(model, x).")
  nystrom = isinstance(result.model, direct.NystromModel)
  x = validation.check_points("x", x, dim=result.num_features, kernel=nystrom,
                              columns=result.feature_names)
  if nystrom:   # no Fourier phases; kernel: squared norms must fit in float32
    validation.warn_if_out_of_reach(result.model.landmarks, result.model.sigma, x,
                                    of="the landmarks")
    return x
  validation.check_phase_range("x", x, float(result.model.sigma))
  if result.training_box is not None:
    validation.warn_if_out_of_reach(result.training_box, result.model.sigma, x, fourier=True)
  return x


def decision_function(result: FitResult, x, mesh: Optional[jax.sharding.Mesh] = None,
                      axis_name: str = "data") -> np.ndarray:
  """Ranking scores f(x) of a fitted model, checking x first.

  Args:
    result: ``FitResult`` from ``fit``.
    x: [n, d] points preprocessed like the training data.
    mesh: optional ``jax.sharding.Mesh`` to split the points over (axis ``axis_name``).
    axis_name: mesh axis to use.

  Returns:
    [n] NumPy float32 scores.
  """
  x = _checked_result(result, x, "model_scores")
  cfg = result.config
  if isinstance(result.model, direct.NystromModel):
    if mesh is None:
      return direct.solver.scores(result.model, x)
    _check_mesh(mesh, axis_name)
    return direct.solver.scores_sharded(result.model, x, mesh, axis_name)
  if mesh is None:
    return _dsg_scores(result, x)
  return np.asarray(engine.model_scores_sharded(result.model, x, mesh, axis_name,
                                                cfg.block_group, cfg.predict_chunk))


def split_scores(result: FitResult, x) -> np.ndarray:
  """Per-split ranking scores of a fitted model: column j = f(x) + g_j(x), checking x first.

  The ordinal AUC of split j (classes <= j against > j) is computed with column j
  (``qsg_jax.metrics.split_aucs``). For a fit without corrections every column is f(x).

  Args:
    result: ``FitResult`` from ``fit`` (with or without ``split_lam``).
    x: [n, d] points preprocessed like the training data.

  Returns:
    [n, k-1] NumPy float32 scores.
  """
  x = _checked_result(result, x, "split_scores")
  cfg = result.config
  nystrom = isinstance(result.model, direct.NystromModel)
  if result.model.split_coef is None:
    scores = direct.solver.scores(result.model, x) if nystrom else _dsg_scores(result, x)
    return np.repeat(np.asarray(scores)[:, None], cfg.num_classes - 1, axis=1)
  if nystrom:
    return direct.solver.scores(result.model, x, split=True)
  return _dsg_scores(result, x, split=True)


def _dsg_scores(result: FitResult, x, split: bool = False) -> np.ndarray:
  """[n] f(x) (or [n, k-1] per-split scores) of a Fourier model, in padded row buckets
  (``numerics.in_row_buckets``: a new number of points compiles nothing new)."""
  cfg = result.config
  score = engine.split_scores if split else engine.model_scores
  return numerics.in_row_buckets(
      lambda part: score(result.model, part, cfg.block_group, cfg.predict_chunk), x,
      cfg.predict_chunk)


def predict(result: FitResult, x) -> np.ndarray:
  """Predicted ordinal classes 0..k-1 (number of thresholds below f(x)): [n] int32."""
  scores = decision_function(result, x)
  return np.asarray(thresholds_lib.predict_classes(jnp.asarray(scores), result.thresholds))
