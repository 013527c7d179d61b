"""``fit``: the checked entry point of QS3ORAO / QSG-S2AUC, with progress and divergence checks.

``qsg_jax.engine.train`` is the pure jittable core; this module validates user data once, picks
chunk sizes, runs the core in a few segments (reporting progress between them), detects
divergence, and fits the ordinal thresholds.
"""

import math
from typing import Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import engine
from qsg_jax import thresholds as thresholds_lib
from qsg_jax import validation


class DivergenceError(FloatingPointError):
  """Training produced non-finite or exploding scores; the message says when and what to change."""


class FitResult(NamedTuple):
  model: engine.Model        # predict with qsg_jax.decision_function(result, x).
  thresholds: jax.Array      # [k-1] ordered thresholds on f (ordinal prediction).
  state: engine.State        # final training state (f on the labeled points included).
  metrics: dict              # per-iteration NumPy arrays: "eta", "max_abs_score".
  config: engine.EngineConfig
  num_features: int          # d, checked at prediction time.


def _largest_divisor_at_most(n, cap):
  return max(c for c in range(1, min(n, max(cap, 1)) + 1) if n % c == 0)


def make_config(num_classes, num_steps, *, chunk_size=32, block_group=8, **kwargs):
  """``EngineConfig`` with chunk and group sizes adjusted to divide ``num_steps`` (same results)."""
  if int(num_steps) < 1:
    raise ValueError(f"num_steps must be >= 1; received {num_steps}.")
  chunk = _largest_divisor_at_most(num_steps, chunk_size)
  group = _largest_divisor_at_most(chunk, block_group)
  return engine.EngineConfig(num_classes=num_classes, num_steps=int(num_steps), chunk_size=chunk,
                             block_group=group, **kwargs)


def _num_shards(mesh, axis_name, num_shards):
  if mesh is None:
    return int(num_shards or 1)
  size = int(mesh.shape[axis_name])
  if num_shards not in (None, size):
    raise ValueError(f"num_shards={num_shards} differs from the size {size} of mesh axis "
                     f"{axis_name!r}; leave num_shards unset when passing a mesh.")
  return size


# Max |f| on the labeled points above which a run counts as diverged. With the squared pairwise
# loss (target margin 1) converging runs stay near 1-3 (sgemm, ijcnn1, cod-rna, skin at stable
# settings); unstable ones on skin (eta0 = 3, sigma = 1) peaked at 116-11,000 and ended at AUC
# 0.53-0.88, some still under the former bound 1e4 and so unreported.
DIVERGENCE_THRESHOLD = 50.0


def check_divergence(metrics, threshold):
  """Raises ``DivergenceError`` if scores became non-finite or exceeded ``threshold``."""
  score = np.asarray(metrics["max_abs_score"])
  bad = ~np.isfinite(score) | (score > threshold)
  if bad.any():
    t = int(np.argmax(bad))
    eta = float(np.asarray(metrics["eta"])[t])
    what = "non-finite" if not np.isfinite(score[t]) else f"{score[t]:.3g} (> {threshold:g})"
    raise DivergenceError(
        f"training diverged at iteration {t}: max |f| on the labeled points was {what} with step "
        f"size eta={eta:.3g}. Lower the step size (eta0, or your schedule) by a factor 3-10, or "
        "increase lam; scores of a converging run stay of order 1 with the squared loss.")


def fit(x_labeled, y_labeled, x_unlabeled=None, *, key=0, num_classes=None, sigma=1.0, lam=1e-3,
        gamma=0.5, eta0=1.0, num_steps=1024, num_frequencies=32, labeled_batch_size=None,
        unlabeled_batch_size=128, loss="squared", step_size: Optional[Callable] = None,
        chunk_size=32, block_group=8, threshold_surrogate="hinge",
        divergence_threshold=DIVERGENCE_THRESHOLD,
        progress: Optional[Callable] = None, num_segments=8, mesh=None, axis_name="data",
        num_shards=None, cache_unlabeled=None):
  """Trains QS3ORAO (k ordered classes) or QSG-S2AUC (k = 2) and fits the thresholds.

  Args:
    x_labeled: [n_l, d] labeled points (preprocessed, e.g. min-max scaled).
    y_labeled: [n_l] int classes 0..k-1, every class present (binary: 1 = positive).
    x_unlabeled: [n_u, d] unlabeled points; may be None/empty only if every gamma is 1.
    key: PRNG key or int seed.
    num_classes: k; default max(y_labeled) + 1.
    sigma: Gaussian kernel parameter, k(x, x') = exp(-sigma ||x - x'||^2).
    lam: regularization lambda.
    gamma: scalar or [k-1] trade-off: 1 = labeled pairs only (supervised), 0 = PU + NU only.
    eta0: initial step of the default schedule eta_t = eta0 / (1 + eta0 lam t).
    num_steps: T iterations (= feature blocks).
    num_frequencies: m frequencies per block.
    labeled_batch_size: per-class mini-batch size, or None for every labeled point each step.
    unlabeled_batch_size: unlabeled points per step.
    loss: pairwise loss ("squared", "hinge", "logistic").
    step_size: optional schedule callable(step) -> eta overriding eta0 (optax schedules work).
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

  Returns:
    ``FitResult``.

  Raises:
    ValueError: bad inputs (message says which and how to fix).
    DivergenceError: scores became non-finite or exploded.
  """
  x_l = validation.check_points("x_labeled", x_labeled)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  gamma = validation.check_gamma(gamma, k)
  if x_unlabeled is None or np.asarray(x_unlabeled).size == 0:
    if np.any(gamma < 1):
      raise ValueError(
          f"no unlabeled data but gamma={gamma.tolist()} < 1 gives weight to the unlabeled "
          "risks: pass x_unlabeled, or set gamma=1 for supervised training.")
    x_u = np.zeros((1, x_l.shape[1]), np.float32)   # never weighted: all (1 - gamma) are 0
  else:
    x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1])
  hyper = engine.Hyperparams(
      sigma=jnp.float32(validation.check_positive("sigma", sigma)),
      lam=jnp.float32(validation.check_positive("lam", lam, allow_zero=True)),
      gamma=jnp.asarray(gamma),
      eta0=jnp.float32(validation.check_positive("eta0", eta0)))
  validation.check_phase_range("x_labeled", x_l, float(hyper.sigma))
  validation.check_phase_range("x_unlabeled", x_u, float(hyper.sigma))
  config = make_config(k, num_steps, chunk_size=chunk_size, block_group=block_group,
                       num_frequencies=int(num_frequencies),
                       labeled_batch_size=labeled_batch_size,
                       unlabeled_batch_size=int(unlabeled_batch_size), loss=loss,
                       step_size=step_size,
                       num_shards=_num_shards(mesh, axis_name, num_shards))
  if cache_unlabeled is None:
    cache_unlabeled = engine.use_unlabeled_cache(x_u.shape[0], config)
  config = config._replace(cache_unlabeled=bool(cache_unlabeled))
  key = jax.random.key(key) if isinstance(key, (int, np.integer)) else key
  data = engine.TrainData(jnp.asarray(x_l), jnp.asarray(y_l), jnp.asarray(x_u))
  if mesh is not None:
    data = data._replace(x_unlabeled=engine.shard_unlabeled(data.x_unlabeled, config.num_shards))

  total_chunks = config.num_steps // config.chunk_size
  per_segment = _largest_divisor_at_most(total_chunks, math.ceil(total_chunks / num_segments))
  state = engine.init(key, data, config)
  if mesh is None:
    run = lambda state: engine.train(state, data, hyper, config, per_segment)
  else:
    run = lambda state: engine.train_sharded(state, data, hyper, config, per_segment, mesh,
                                             x_u.shape[0], axis_name)
  collected = []
  for _ in range(total_chunks // per_segment):
    state, metrics = run(state)
    collected.append(jax.device_get(metrics))
    if progress is not None:
      progress({"step": int(state.step), "num_steps": config.num_steps,
                "max_abs_score": float(np.max(collected[-1]["max_abs_score"]))})
  metrics = {name: np.concatenate([m[name] for m in collected]) for name in collected[0]}
  check_divergence(metrics, divergence_threshold)
  b = thresholds_lib.fit_thresholds(state.f_labeled, jnp.asarray(y_l), k, threshold_surrogate)
  return FitResult(engine.model_of(state, hyper), b, state, metrics, config, x_l.shape[1])


def decision_function(result: FitResult, x, mesh=None, axis_name="data"):
  """Ranking scores f(x) of a fitted model, checking x first.

  Args:
    result: ``FitResult`` from ``fit``.
    x: [n, d] points preprocessed like the training data.
    mesh: optional ``jax.sharding.Mesh`` to split the points over (axis ``axis_name``).
    axis_name: mesh axis to use.

  Returns:
    [n] NumPy float32 scores.
  """
  x = validation.check_points("x", x, dim=result.num_features)
  validation.check_phase_range("x", x, float(result.model.sigma))
  x = jnp.asarray(x)
  cfg = result.config
  if mesh is None:
    return np.asarray(engine.predict(result.model, x, cfg.block_group, cfg.predict_chunk))
  return np.asarray(engine.predict_sharded(result.model, x, mesh, axis_name, cfg.block_group,
                                           cfg.predict_chunk))


def predict(result: FitResult, x):
  """Predicted ordinal classes 0..k-1 (number of thresholds below f(x))."""
  scores = decision_function(result, x)
  return np.asarray(thresholds_lib.predict_classes(jnp.asarray(scores), result.thresholds))
