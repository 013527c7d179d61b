"""k-fold cross-validation of QS3ORAO / QSG-S2AUC, the whole grid vmapped through the engine.

The papers pick lam and sigma from 2^-3..2^3 and gamma from 0..1 in steps of 0.1 by 5-fold
cross-validation (QSG-S2AUC Sec. 6.1; QS3ORAO "Experimental Setup"). Folds split the labeled
points, stratified by class (``qsg_jax.cv.stratified_folds``, so the baselines and the QSG
methods can share folds); every fold trains on its other labeled points plus all the unlabeled
points and is scored by the AUC of each split {y <= j} vs {y > j} on its held-out labeled points.

Every (grid point, fold) pair is one task. ``Hyperparams`` are traced in ``engine.train``, so a
batch of tasks -- different lam, sigma, gamma, step size *and* different training folds -- is one
``jax.vmap`` of init + train + predict + AUC, compiled once for all batches. For the folds to
share shapes every training set has the size of the smallest one: a fold whose complement is
larger leaves out its surplus (at most one point, from the class with the most training points;
``fold_training_sets``). Every task uses the same PRNG key (common random numbers: grid points
differ only by their hyper-parameters, not by their samples or frequencies), so task t equals
``qsg_jax.fit(x_l[train_t], y_l[train_t], x_u, key=key, ...)`` scored on its held-out fold.

gamma is one value shared by all k-1 subproblems (a per-subproblem search, as the ordinal paper
describes, grows as 11^(k-1)). A task whose scores diverge (non-finite, or max |f| on the labeled
points above ``divergence_threshold``, as ``qsg_jax.fit`` checks) scores NaN and is never chosen.
"""

import functools
import itertools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import cv as cv_lib
from qsg_jax import defaults
from qsg_jax import engine
from qsg_jax import metrics
from qsg_jax import _validation as validation

# Axis order of the grid (and of ``CVResult.scores``); the keyword names of ``qsg_jax.fit``.
GRID_KEYS = ("lam", "sigma", "gamma", "step_size")
# Bytes the arrays of one vmapped batch of tasks may take (sets the default batch size).
BATCH_BYTES = 2**29
# Default tasks per batch on CPU: on 2 cores (SGEMM, n_l = 500, n_u = 1000, T = 1024) batches of
# 1, 4, 12 and 60 tasks ran 1.8, 1.5, 2.2 and 4.1 s per task; accelerators take larger batches.
CPU_TASKS_PER_BATCH = 4


def paper_grid(step_size=defaults.STEP_SIZE):
  """The papers' grid: lam and sigma in 2^-3..2^3, gamma in 0..1 (step 0.1), one step size.

  Args:
    step_size: initial step eta0 of eta_t = eta0 / (1 + eta0 lam t) (the papers do not search
      it); a number or a list of numbers.

  Returns:
    Dict of 1-D NumPy arrays keyed by ``GRID_KEYS`` (7 x 7 x 11 x 1 = 539 points).
  """
  powers = 2.0 ** np.arange(-3, 4)
  return {"lam": powers, "sigma": powers, "gamma": np.arange(11) / 10.0,
          "step_size": np.atleast_1d(np.asarray(step_size, np.float64))}


def quick_grid(step_size=defaults.STEP_SIZE):
  """A small grid (2 x 2 x 3 x 1) around the defaults that work on SGEMM, for quick runs.

  lam in {1e-3, 2^-3} (the engine's default and the papers' smallest), sigma in {2^-3, 1},
  gamma in {0, 0.5, 1}.
  """
  return {"lam": np.array([1e-3, 0.125]), "sigma": np.array([0.125, 1.0]),
          "gamma": np.array([0.0, 0.5, 1.0]),
          "step_size": np.atleast_1d(np.asarray(step_size, np.float64))}


def _checked_grid(grid):
  if not isinstance(grid, dict) or set(grid) != set(GRID_KEYS):
    got = sorted(grid) if isinstance(grid, dict) else type(grid).__name__
    raise ValueError(f"grid must be a dict with exactly the keys {sorted(GRID_KEYS)} (the "
                     f"keyword names of qsg_jax.fit); received {got}. Start from quick_grid() "
                     "or paper_grid().")
  checked = {}
  for name in GRID_KEYS:
    values = np.atleast_1d(np.asarray(grid[name], np.float64))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
      raise ValueError(f"grid[{name!r}] must be a non-empty 1-D list of finite values; received "
                       f"{grid[name]!r}.")
    if name == "gamma" and np.any((values < 0) | (values > 1)):
      raise ValueError(f"grid['gamma'] must lie in [0, 1]; received {values.tolist()}.")
    if name == "lam" and np.any(values < 0):
      raise ValueError(f"grid['lam'] must be >= 0; received {values.tolist()}.")
    if name in ("sigma", "step_size") and np.any(values <= 0):
      raise ValueError(f"grid[{name!r}] must be > 0; received {values.tolist()}.")
    checked[name] = values
  return checked


def _batch_size(num_tasks, config, num_labeled, num_unlabeled, dim, batch_bytes):
  """Tasks per vmapped call: the largest count whose big arrays stay under ``batch_bytes``."""
  two_m = 2 * config.num_frequencies
  pool = num_unlabeled if config.cache_unlabeled else config.chunk_size * (
      config.unlabeled_batch_size + 1) * (1 + config.block_group)
  per_task = 4 * (config.num_steps * two_m + 3 * num_labeled * two_m + 2 * pool * two_m
                  + config.chunk_size * config.unlabeled_batch_size * dim)
  cap = CPU_TASKS_PER_BATCH if jax.default_backend() == "cpu" else num_tasks
  return int(max(1, min(num_tasks, cap, batch_bytes // per_task)))


@functools.partial(jax.jit, static_argnames=("config", "divergence_threshold"))
def _task_aucs(key, x_labeled, y_labeled, x_unlabeled, train, valid, hyper, config,
               divergence_threshold):
  """[b, k-1] held-out AUCs (NaN where training diverged) and [b] bool "diverged" of b tasks.

  Args:
    key: PRNG key shared by every task.
    x_labeled: [n_l, d] all labeled points.
    y_labeled: [n_l] int32 labels.
    x_unlabeled: [n_u, d].
    train: [b, n_train] int32 training indices of each task.
    valid: [b, n_l] bool held-out masks.
    hyper: ``Hyperparams`` with leading axis b (gamma [b, k-1]).
    config: static ``EngineConfig``.
    divergence_threshold: static, max |f| on the labeled points that counts as diverged.
  """
  k = config.num_classes

  def task(train_t, valid_t, hyper_t):
    data = engine.TrainData(x_labeled[train_t], y_labeled[train_t], x_unlabeled)
    state = engine.init(key, data, config)
    state, report = engine.train(state, data, hyper_t, config, config.num_steps)
    scores = engine.model_scores(engine.model_of(state, hyper_t), x_labeled,
                            block_group=config.block_group, predict_chunk=config.predict_chunk)
    peak = jnp.max(report["max_abs_score"])
    ok = jnp.isfinite(peak) & (peak <= divergence_threshold) & jnp.all(jnp.isfinite(scores))
    aucs = jax.vmap(lambda j: metrics.masked_auc(scores, valid_t & (y_labeled > j),
                                                 valid_t & (y_labeled <= j)))(jnp.arange(k - 1))
    return jnp.where(ok, aucs, jnp.nan), ~ok

  return jax.vmap(task)(train, valid, hyper)


def cross_validate(x_labeled, y_labeled, x_unlabeled=None, *, grid: Optional[dict] = None,
                   quick: bool = False, num_folds: int = 5, seed: int = 0, key=0,
                   num_classes: Optional[int] = None, num_steps: int = defaults.NUM_STEPS,
                   num_frequencies: int = defaults.NUM_FREQUENCIES,
                   labeled_batch_size: Optional[int] = defaults.LABELED_BATCH_SIZE,
                   unlabeled_batch_size: int = defaults.UNLABELED_BATCH_SIZE,
                   loss=defaults.LOSS, chunk_size: int = defaults.CHUNK_SIZE,
                   block_group: int = defaults.BLOCK_GROUP,
                   cache_unlabeled: Optional[bool] = None,
                   divergence_threshold: float = defaults.DIVERGENCE_THRESHOLD,
                   tasks_per_batch: Optional[int] = None,
                   progress: Optional[Callable[[dict], None]] = None) -> cv_lib.CVResult:
  """Picks lam, sigma, gamma and the step size of QS3ORAO / QSG-S2AUC by stratified k-fold CV.

  Args:
    x_labeled: [n_l, d] labeled points (preprocessed like the data ``qsg_jax.fit`` will get).
    y_labeled: [n_l] int labels 0..k-1, every class with at least ``num_folds`` points.
    x_unlabeled: [n_u, d] unlabeled points shared by every fold; None only if every gamma is 1.
      Every task costs one training run over them: pass a subsample of a few thousand.
    grid: dict of 1-D value lists keyed by ``GRID_KEYS``; default ``paper_grid()``.
    quick: use ``quick_grid()`` when ``grid`` is None.
    num_folds: F (the papers use 5).
    seed: int seed of the fold assignment.
    key: PRNG key or int seed shared by every task (samples and feature blocks).
    num_classes: k; default max(y_labeled) + 1.
    num_steps, num_frequencies, labeled_batch_size, unlabeled_batch_size, loss,
      chunk_size, block_group, cache_unlabeled, divergence_threshold: as in ``qsg_jax.fit``.
    tasks_per_batch: tasks per vmapped call; default as many as fit in about 512 MiB (at most
      ``CPU_TASKS_PER_BATCH`` on CPU, where larger batches ran slower per task).
    progress: optional callable(dict) after each batch, with "tasks_done", "num_tasks".

  Returns:
    ``qsg_jax.cv.CVResult``: ``best`` holds floats lam, sigma, gamma, step_size for
    ``qsg_jax.fit(x_l, y_l, x_u, **best, ...)``; ``scores`` is [n_lam, n_sigma, n_gamma, n_step,
    k-1] (fold means), ``fold_scores`` [..., F, k-1]; NaN marks diverged tasks (every split) and
    held-out folds lacking one side of a split. The best point maximizes the mean over splits of
    the fold-mean AUC among points that diverged on no fold.

  Raises:
    ValueError, TypeError: bad inputs, or every grid point diverged.
  """
  for name, value, minimum in (("num_folds", num_folds, 2), ("seed", seed, 0),
                               ("num_steps", num_steps, 1),
                               ("num_frequencies", num_frequencies, 1),
                               ("unlabeled_batch_size", unlabeled_batch_size, 1),
                               ("chunk_size", chunk_size, 1), ("block_group", block_group, 1)):
    validation.check_count(name, value, minimum)
  validation.check_count("labeled_batch_size", labeled_batch_size, 1, allow_none=True)
  validation.check_count("tasks_per_batch", tasks_per_batch, 1, allow_none=True)
  validation.check_count("num_classes", num_classes, 2, allow_none=True)
  validation.check_callable("progress", progress)
  validation.check_bool("cache_unlabeled", cache_unlabeled)
  validation.check_positive("divergence_threshold", divergence_threshold)
  validation.check_key(key)
  x_l = validation.check_points("x_labeled", x_labeled)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  grid = _checked_grid(quick_grid() if grid is None and quick else
                       paper_grid() if grid is None else grid)
  if x_unlabeled is None or np.asarray(x_unlabeled).size == 0:
    if np.any(grid["gamma"] < 1):
      raise ValueError(f"no unlabeled data but the gamma grid {grid['gamma'].tolist()} gives "
                       "weight to the unlabeled risks: pass x_unlabeled, or use gamma=[1.0].")
    x_u = np.zeros((1, x_l.shape[1]), np.float32)   # never weighted: every (1 - gamma) is 0
  else:
    x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1])
  folds = cv_lib.stratified_folds(y_l, num_folds, seed)
  train, valid = cv_lib.fold_training_sets(folds, y_l)
  config = engine.make_config(k, num_steps, chunk_size=chunk_size, block_group=block_group,
                              num_frequencies=num_frequencies,
                              labeled_batch_size=labeled_batch_size,
                              unlabeled_batch_size=unlabeled_batch_size, loss=loss)
  if cache_unlabeled is None:
    cache_unlabeled = engine.use_unlabeled_cache(x_u.shape[0], config)
  config = config.replace(cache_unlabeled=cache_unlabeled)

  points = list(itertools.product(*(range(grid[name].size) for name in GRID_KEYS)))
  tasks = [(p, f) for p in points for f in range(num_folds)]
  batch = int(tasks_per_batch) if tasks_per_batch else _batch_size(
      len(tasks), config, x_l.shape[0], x_u.shape[0], x_l.shape[1], BATCH_BYTES)
  if batch < 1:
    raise ValueError(f"tasks_per_batch must be >= 1; received {tasks_per_batch}.")
  padded = tasks + [tasks[-1]] * (-len(tasks) % batch)
  value = lambda name, i: np.array([grid[name][p[i]] for p, _ in padded], np.float32)
  hyper = engine.Hyperparams(
      sigma=value("sigma", 1), lam=value("lam", 0),
      gamma=np.repeat(value("gamma", 2)[:, None], k - 1, axis=1), eta0=value("step_size", 3))
  fold_of = np.array([f for _, f in padded])
  key = validation.check_key(key)
  args = (jnp.asarray(x_l), jnp.asarray(y_l), jnp.asarray(x_u))
  aucs = np.empty((len(padded), k - 1))
  diverged = np.empty(len(padded), bool)
  for start in range(0, len(padded), batch):
    part = slice(start, start + batch)
    out, bad = _task_aucs(key, *args, jnp.asarray(train[fold_of[part]]),
                        jnp.asarray(valid[fold_of[part]]),
                        jax.tree.map(lambda a: jnp.asarray(a[part]), hyper), config,
                        float(divergence_threshold))
    aucs[part], diverged[part] = np.asarray(out), np.asarray(bad)
    if progress is not None:
      progress({"tasks_done": min(start + batch, len(tasks)), "num_tasks": len(tasks)})

  shape = tuple(grid[name].size for name in GRID_KEYS)
  fold_scores = aucs[:len(tasks)].reshape(*shape, num_folds, k - 1)
  scores = cv_lib.nanmean(np.moveaxis(fold_scores, -2, -1))        # [*grid, k-1]
  # A point whose training diverged on any fold is never chosen (``fit`` would refuse it).
  unstable = diverged[:len(tasks)].reshape(*shape, num_folds).any(axis=-1)
  target = np.where(unstable, np.nan, cv_lib.nanmean(scores))       # [*grid]
  if not np.isfinite(target).any():
    raise ValueError(
        "every grid point diverged (non-finite or exploding scores) or held-out folds lack one "
        "side of every split: lower the step size or raise lam in the grid, or use fewer folds.")
  index = np.unravel_index(np.argmax(np.where(np.isfinite(target), target, -np.inf)),
                           target.shape)
  best = {name: float(grid[name][i]) for name, i in zip(GRID_KEYS, index)}
  return cv_lib.CVResult(best, float(target[index]), scores, fold_scores, grid)
