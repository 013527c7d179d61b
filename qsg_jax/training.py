"""``fit``: the checked entry point of QS3ORAO / QSG-S2AUC, with progress and divergence checks.

``qsg_jax.engine`` is the pure jittable core; this module validates user data once, picks
chunk sizes, runs the core in a few segments (reporting progress between them), detects
divergence, and fits the ordinal thresholds.
"""

import math
import warnings
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax.engine import auto_step
from qsg_jax import _validation as validation
from qsg_jax import defaults
from qsg_jax import engine
from qsg_jax import thresholds as thresholds_lib
from qsg_jax.errors import DivergenceError


class FitResult(NamedTuple):
  model: engine.Model        # predict with qsg_jax.decision_function(result, x).
  thresholds: jax.Array      # [k-1] ordered thresholds on f (ordinal prediction).
  state: engine.State        # final training state (f on the labeled points included).
  metrics: dict              # per-iteration NumPy arrays: "eta", "max_abs_score".
  config: engine.EngineConfig
  num_features: int          # d, checked at prediction time.


def _num_shards(mesh, axis_name, num_shards):
  if mesh is None:
    return 1 if num_shards is None else num_shards
  if axis_name not in mesh.shape:
    raise ValueError(f"mesh has no axis {axis_name!r}; its axes are {tuple(mesh.shape)}.")
  size = int(mesh.shape[axis_name])
  if num_shards not in (None, size):
    raise ValueError(f"num_shards={num_shards} differs from the size {size} of mesh axis "
                     f"{axis_name!r}; leave num_shards unset when passing a mesh.")
  return size


def _check_counts(**counts):
  """Every count argument of ``fit`` as a Python int in its range (None where allowed)."""
  optional = {"labeled_batch_size", "num_shards", "num_classes"}
  minimum = {"num_classes": 2}
  return {name: validation.check_count(name, value, minimum.get(name, 1),
                                       allow_none=name in optional)
          for name, value in counts.items()}


def step_size_parts(step_size: engine.ScalarOrSchedule,
                    auto: Optional[Callable[[], float]] = None):
  """(schedule, eta0) of a ``ScalarOrSchedule`` or "auto": (callable, None) or (None, float > 0).

  Args:
    step_size: a number eta0, a schedule callable step -> eta, or "auto" (the default of ``fit``:
      eta0 from the curvature of the squared-loss risk, ``qsg_jax.engine.auto_step``).
    auto: zero-argument callable returning the "auto" eta0 (called only for "auto").
  """
  if isinstance(step_size, str) and step_size == "auto" and auto is not None:
    return None, validation.check_positive("step_size", auto())
  if callable(step_size):
    return check_schedule(step_size), None
  try:
    if isinstance(step_size, (bool, np.bool_, str)) or np.ndim(step_size) != 0:
      raise TypeError
    eta0 = float(step_size)
  except (TypeError, ValueError):
    raise TypeError(f"step_size must be a number (eta0 of eta0 / (1 + eta0 lam t)), a schedule "
                    f"callable step -> eta (optax schedules work) or 'auto'; received "
                    f"{step_size!r:.80}.") from None
  return None, validation.check_positive("step_size", eta0)


def check_schedule(schedule):
  """``schedule`` after a traced trial call (as the engine makes: an int32 step), so that a
  schedule that cannot take a step or returns something else than one number says so here."""
  try:
    out = jax.eval_shape(schedule, jax.ShapeDtypeStruct((), jnp.int32))
  except Exception as e:  # pylint: disable=broad-except  (any failure of user code)
    raise TypeError(f"step_size schedule {schedule!r:.60} must take the iteration t (a traced "
                    f"int32 scalar) and return the step size; calling it failed with "
                    f"{type(e).__name__}: {str(e)[:150]}") from e
  shape, dtype = getattr(out, "shape", None), getattr(out, "dtype", None)
  if shape != () or dtype is None or not (jnp.issubdtype(dtype, jnp.floating)
                                          or jnp.issubdtype(dtype, jnp.integer)):
    raise TypeError(f"step_size schedule {schedule!r:.60} must return one number per iteration; "
                    f"it returned {type(out).__name__} of shape {shape} and dtype {dtype}.")
  return schedule


def check_split_lam(split_lam):
  """``split_lam`` as None or a float in (0, inf] (inf: corrections frozen at 0), else an error."""
  if split_lam is None:
    return None
  if isinstance(split_lam, (bool, np.bool_, str)) or np.ndim(split_lam) != 0:
    raise TypeError(f"split_lam must be None (plain QS3ORAO) or a positive number (the penalty "
                    f"lam_g of the per-split corrections); received {split_lam!r:.60}.")
  try:
    value = float(split_lam)
  except (TypeError, ValueError):
    raise TypeError(f"split_lam must be None or a positive number; received "
                    f"{type(split_lam).__name__} {split_lam!r:.60}.") from None
  if not value > 0:   # NaN, 0 and negatives
    raise ValueError(f"split_lam must be > 0 (float('inf') freezes the corrections at 0, None "
                     f"turns them off); received {split_lam!r:.60}.")
  return value


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
    eta = float(np.asarray(metrics["eta"])[t])
    what = "non-finite" if not np.isfinite(score[t]) else f"{score[t]:.3g} (> {threshold:g})"
    raise DivergenceError(
        f"training diverged at iteration {t}: max |f| on the labeled points was {what} with step "
        f"size eta={eta:.3g}. Lower the step size (step_size, or your schedule) by a factor 3-10, "
        "or increase lam; scores of a converging run stay of order 1 with the squared loss.")


def fit(x_labeled, y_labeled, x_unlabeled=None, *, key=0, num_classes: Optional[int] = None,
        sigma: float = defaults.SIGMA, lam: float = defaults.LAM, gamma=defaults.GAMMA,
        step_size: engine.ScalarOrSchedule = defaults.STEP_SIZE,
        num_steps: int = defaults.NUM_STEPS, num_frequencies: int = defaults.NUM_FREQUENCIES,
        labeled_batch_size: Optional[int] = defaults.LABELED_BATCH_SIZE,
        unlabeled_batch_size: int = defaults.UNLABELED_BATCH_SIZE, loss=defaults.LOSS,
        chunk_size: int = defaults.CHUNK_SIZE, block_group: int = defaults.BLOCK_GROUP,
        threshold_surrogate: str = "hinge",
        divergence_threshold: float = defaults.DIVERGENCE_THRESHOLD,
        progress: Optional[Callable[[dict], None]] = None, num_segments: int = 8,
        mesh: Optional[jax.sharding.Mesh] = None, axis_name: str = "data",
        num_shards: Optional[int] = None, cache_unlabeled: Optional[bool] = None,
        split_lam: Optional[float] = None) -> FitResult:
  """Trains QS3ORAO (k ordered classes) or QSG-S2AUC (k = 2) and fits the thresholds.

  Args:
    x_labeled: [n_l, d] labeled points (preprocessed, e.g. min-max scaled).
    y_labeled: [n_l] int classes 0..k-1, every class present (binary: 1 = positive, 0 = negative).
    x_unlabeled: [n_u, d] unlabeled points; may be None/empty only if every gamma is 1.
    key: PRNG key or int seed.
    num_classes: k; default max(y_labeled) + 1.
    sigma: Gaussian kernel parameter, k(x, x') = exp(-sigma ||x - x'||^2).
    lam: regularization lambda.
    gamma: scalar or [k-1] trade-off: 1 = labeled pairs only (supervised), 0 = PU + NU only.
    step_size: "auto" (default): eta0 = min(3, 1 / (lambda_max(K H) + lam)), half the stability
      limit of the squared-loss scores (``qsg_jax.engine.auto_step``, deterministic; the chosen eta0 is
      ``result.metrics["eta"][0]``); a number eta0 of eta_t = eta0 / (1 + eta0 lam t); or a
      schedule callable step -> eta (optax schedules work), as optax's ``ScalarOrSchedule``.
      A number or a schedule runs exactly the papers' Algorithm 1 with that step.
    num_steps: T iterations (= feature blocks).
    num_frequencies: m frequencies per block.
    labeled_batch_size: per-class mini-batch size, or None for every labeled point each step.
    unlabeled_batch_size: unlabeled points per step.
    loss: pairwise loss ("squared", "hinge", "logistic").
    chunk_size: iterations whose samples are drawn up front (speed only).
    block_group: feature blocks per matrix product (speed only).
    threshold_surrogate: "hinge" or "squared_hinge" for ``qsg_jax.fit_thresholds``.
    divergence_threshold: max |f| on labeled points above which training counts as diverged.
    progress: optional callable(dict) called after each segment with "step", "num_steps",
      "max_abs_score".
    num_segments: how many jitted calls training is split into for progress reports.
    mesh: optional ``jax.sharding.Mesh``: split the unlabeled data over its ``axis_name`` axis
      (one stratum per device, see ``engine.train_sharded``); None runs on one device.
    axis_name: mesh axis to use.
    num_shards: strata of the unlabeled sampling (default: the mesh axis size, or 1). A
      one-device run with num_shards=D draws the same samples as a run on a D-device mesh.
    cache_unlabeled: keep f on every unlabeled point (``EngineConfig.cache_unlabeled``); default
      chooses whichever costs less (``engine.use_unlabeled_cache``). Same results either way.
    split_lam: None (default): plain QS3ORAO, one ranking function f for every split. A number
      lam_g > 0 adds a per-split correction g_j over the same random features, so split j ranks
      with f + g_j, each g_j penalized by lam_g/2 ||g_j||^2 (``qsg_jax.engine.corrections``);
      float('inf') freezes them at 0. Prediction and thresholds still use f; per-split scores
      come from ``split_scores``. One device only (no mesh); "auto" halves its eta0 (the
      per-split scores move by f's step plus g_j's).

  Returns:
    ``FitResult``.

  Raises:
    ValueError, TypeError: bad inputs (the message says which and how to fix it): every count is
      an int >= 1, x is dense, finite and within float32, labels are 0..k-1 (binary: 0 =
      negative, 1 = positive).
    DivergenceError: scores became non-finite or exploded.

  Warns:
    UnscaledFeaturesWarning: features far outside [0, 1] (unscaled).
    SlowConfigWarning: a num_steps with no divisor near chunk_size (slow).
  """
  counts = _check_counts(num_steps=num_steps, num_frequencies=num_frequencies,
                         labeled_batch_size=labeled_batch_size,
                         unlabeled_batch_size=unlabeled_batch_size, chunk_size=chunk_size,
                         block_group=block_group, num_segments=num_segments,
                         num_shards=num_shards, num_classes=num_classes)
  validation.check_callable("progress", progress)
  cache_unlabeled = validation.check_bool("cache_unlabeled", cache_unlabeled)
  thresholds_lib.check_surrogate(threshold_surrogate)
  if mesh is not None and not isinstance(mesh, jax.sharding.Mesh):
    raise TypeError(f"mesh must be a jax.sharding.Mesh or None; received {type(mesh).__name__}. "
                    "Build one with jax.make_mesh((num_devices,), ('data',)).")
  split_lam = check_split_lam(split_lam)
  if split_lam is not None and mesh is not None:
    raise ValueError("split_lam (per-split corrections) runs on one device only: pass mesh=None, "
                     "or split_lam=None for sharded training.")
  key = validation.check_key(key)
  x_l = validation.check_points("x_labeled", x_labeled)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], counts["num_classes"])
  gamma = validation.check_gamma(gamma, k)
  if x_unlabeled is None or np.asarray(x_unlabeled).size == 0:
    if np.any(gamma < 1):
      raise ValueError(
          f"no unlabeled data but gamma={gamma.tolist()} < 1 gives weight to the unlabeled "
          "risks: pass x_unlabeled, or set gamma=1 for supervised training.")
    x_u = np.zeros((1, x_l.shape[1]), np.float32)   # never weighted: all (1 - gamma) are 0
  else:
    x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1])
  sigma = validation.check_positive("sigma", sigma)
  lam = validation.check_positive("lam", lam, allow_zero=True)
  auto_share = 1.0 if split_lam is None else 0.5
  schedule, eta0 = step_size_parts(step_size, auto=lambda: auto_share * auto_step.auto_step_size(
      x_l, y_l, x_u, k, sigma, lam, gamma, key, counts["unlabeled_batch_size"]))
  hyper = engine.Hyperparams(
      sigma=jnp.float32(sigma),
      lam=jnp.float32(lam),
      gamma=jnp.asarray(gamma),
      eta0=None if eta0 is None else jnp.float32(eta0),
      split_lam=None if split_lam is None else jnp.float32(split_lam))
  validation.check_phase_range("x_labeled", x_l, float(hyper.sigma))
  validation.check_phase_range("x_unlabeled", x_u, float(hyper.sigma))
  validation.warn_if_unscaled("x_labeled", x_l)
  validation.warn_if_unscaled("x_unlabeled", x_u)
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    config = engine.make_config(k, counts["num_steps"], chunk_size=counts["chunk_size"],
                                block_group=counts["block_group"],
                                num_frequencies=counts["num_frequencies"],
                                labeled_batch_size=counts["labeled_batch_size"],
                                unlabeled_batch_size=counts["unlabeled_batch_size"], loss=loss,
                                schedule=schedule, split_corrections=split_lam is not None,
                                num_shards=_num_shards(mesh, axis_name, counts["num_shards"]))
  for warning in caught:   # e.g. a prime num_steps: reported at the caller's line
    warnings.warn(warning.message, warning.category, stacklevel=2)
  if cache_unlabeled is None:
    cache_unlabeled = engine.use_unlabeled_cache(x_u.shape[0], config)
  config = config.replace(cache_unlabeled=cache_unlabeled)
  divergence_threshold = validation.check_positive("divergence_threshold", divergence_threshold)
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y_l), jnp.asarray(x_u))
  if mesh is not None:
    data = data._replace(x_unlabeled=engine.shard_unlabeled(data.x_unlabeled, config.num_shards))
    # Once, not per segment: placing host data on several processes gathers it to check it.
    data = engine.sharding.place_train_data(data, mesh, axis_name)

  chunks = config.num_steps // config.chunk_size
  segments = counts["num_segments"]
  per_segment = config.chunk_size * max(
      c for c in range(1, chunks + 1) if chunks % c == 0 and c <= math.ceil(chunks / segments))
  state = engine.init(key, data, config, num_unlabeled=x_u.shape[0])
  if mesh is None:
    run = lambda state: engine.train(state, data, hyper, config, per_segment)
  else:
    run = lambda state: engine.train_sharded(state, data, hyper, config, per_segment, mesh,
                                             axis_name)
  collected = []
  for _ in range(config.num_steps // per_segment):
    state, metrics = run(state)
    collected.append(jax.device_get(metrics))
    if progress is not None:
      progress({"step": int(state.step), "num_steps": config.num_steps,
                "max_abs_score": float(np.max(collected[-1]["max_abs_score"]))})
  metrics = {name: np.concatenate([m[name] for m in collected]) for name in collected[0]}
  check_divergence(metrics, divergence_threshold)
  b = thresholds_lib.fit_thresholds(state.f_labeled, jnp.asarray(y_l), k, threshold_surrogate)
  return FitResult(engine.model_of(state, hyper), b, state, metrics, config, x_l.shape[1])


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
  if not isinstance(result, FitResult):
    raise TypeError(f"result must be the FitResult of qsg_jax.fit; received "
                    f"{type(result).__name__}. For a bare engine.Model use "
                    "qsg_jax.engine.model_scores(model, x).")
  x = validation.check_points("x", x, dim=result.num_features)
  validation.check_phase_range("x", x, float(result.model.sigma))
  x = jnp.asarray(x)
  cfg = result.config
  if mesh is None:
    return np.asarray(engine.model_scores(result.model, x, cfg.block_group, cfg.predict_chunk))
  return np.asarray(engine.model_scores_sharded(result.model, x, mesh, axis_name,
                                                cfg.block_group, cfg.predict_chunk))


def split_scores(result: FitResult, x) -> np.ndarray:
  """Per-split ranking scores of a fitted model: column j = f(x) + g_j(x), checking x first.

  The ordinal AUC of split j (classes <= j against > j) is computed with column j. For a fit
  without corrections (split_lam=None) every column is f(x).

  Args:
    result: ``FitResult`` from ``fit`` (with or without ``split_lam``).
    x: [n, d] points preprocessed like the training data.

  Returns:
    [n, k-1] NumPy float32 scores.
  """
  if not isinstance(result, FitResult):
    raise TypeError(f"result must be the FitResult of qsg_jax.fit; received "
                    f"{type(result).__name__}. For a bare engine.Model use "
                    "qsg_jax.engine.split_scores(model, x).")
  splits = result.config.num_classes - 1
  if result.model.split_coef is None:
    return np.repeat(decision_function(result, x)[:, None], splits, axis=1)
  x = validation.check_points("x", x, dim=result.num_features)
  validation.check_phase_range("x", x, float(result.model.sigma))
  cfg = result.config
  return np.asarray(engine.split_scores(result.model, jnp.asarray(x), cfg.block_group,
                                        cfg.predict_chunk))


def predict(result: FitResult, x) -> np.ndarray:
  """Predicted ordinal classes 0..k-1 (number of thresholds below f(x)): [n] int32."""
  scores = decision_function(result, x)
  return np.asarray(thresholds_lib.predict_classes(jnp.asarray(scores), result.thresholds))
