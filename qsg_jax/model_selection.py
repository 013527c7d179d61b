"""k-fold cross-validation of QS3ORAO / QSG-S2AUC: the papers' 539-point grid in about a minute.

The papers pick lam and sigma from 2^-3..2^3 and gamma from 0..1 in steps of 0.1 by 5-fold
cross-validation (QSG-S2AUC Sec. 6.1; QS3ORAO "Experimental Setup"). Folds split the labeled
points, stratified by class (``qsg_jax.cv.stratified_folds``, so the baselines and the QSG
methods can share folds); every fold trains on its other labeled points plus all the unlabeled
points and is scored by the AUC of each split {y <= j} vs {y > j} on its held-out labeled points.

Every (grid point, fold) pair is one task. For the folds to share shapes every training set has
the size of the smallest one: a fold whose complement is larger leaves out its surplus (at most
one point, from the class with the most training points; ``fold_training_sets``). Every task
uses the same PRNG key (common random numbers: grid points differ only by their
hyper-parameters, not by their samples or frequencies), so task t equals
``qsg_jax.fit(x_l[train_t], y_l[train_t], x_u, key=key, ...)`` scored on its held-out fold.
Two paths compute the tasks, with the same results to float32 rounding:
  * "grouped" (the default where it applies: squared loss, whole labeled set each step): tasks
    with the same sigma share every sample and feature, so ``qsg_jax.engine.grouped`` computes each
    step's features once per sigma and batches only the per-task part, whose score gradients
    collapse to O(S + B) for the squared loss. sgemm (500 labels, 1,000 unlabeled, k = 5, T =
    1024), 539 x 5 tasks: 0.7 min on 2 CPU cores, against 22 min estimated per task
    (``experiments/bench_cv.py``).
  * "per_task": ``Hyperparams`` are traced in ``engine.train``, so a batch of independent tasks
    is one ``jax.vmap`` of init + train + predict + AUC, compiled once for all batches.

The step size grid may hold "auto" (``qsg_jax.fit``'s default, ``qsg_jax.engine.auto_step``): each task
then gets the eta0 ``fit(step_size="auto")`` would use on its fold. gamma is one value shared by
all k-1 subproblems unless ``per_split_gamma`` (the ordinal paper's protocol) runs a
coordinate-wise search per split after the grid (an exhaustive one grows as 11^(k-1)). A task
whose scores diverge (non-finite, or max |f| on the training labeled points above
``divergence_threshold``, as ``qsg_jax.fit`` checks) scores NaN and is never chosen.
"""
import functools
import itertools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import cv as cv_lib
from qsg_jax import defaults
from qsg_jax.engine import auto_step
from qsg_jax.engine import grouped
from qsg_jax import engine
from qsg_jax.engine import losses as losses_lib
from qsg_jax import metrics
from qsg_jax import _validation as validation

# Axis order of the grid (and of ``CVResult.scores``); the keyword names of ``qsg_jax.fit``.
GRID_KEYS = ("lam", "sigma", "gamma", "step_size")
# Bytes the arrays of one vmapped batch of tasks may take (sets the default batch size).
BATCH_BYTES = 2**29
# Default tasks per batch on CPU: on 2 cores (SGEMM, n_l = 500, n_u = 1000, T = 1024) batches of
# 1, 4, 12 and 60 tasks ran 1.8, 1.5, 2.2 and 4.1 s per task; accelerators take larger batches.
CPU_TASKS_PER_BATCH = 4
# Tasks of one sigma trained together by the grouped path (one feature computation per step).
GROUPED_TASKS_PER_BATCH = 512


def _step_values(step_size):
  """1-D object array of the step grid: numbers (float) and/or "auto"."""
  if isinstance(step_size, str) or np.ndim(step_size) == 0:
    step_size = [step_size]
  values = np.empty(len(step_size), dtype=object)
  for i, v in enumerate(step_size):
    values[i] = v if isinstance(v, str) else float(v)
  return values


def paper_grid(step_size=defaults.STEP_SIZE):
  """The papers' grid: lam and sigma in 2^-3..2^3, gamma in 0..1 (step 0.1), one step size.

  Args:
    step_size: "auto" (the default of ``qsg_jax.fit``: eta0 from the curvature of each task's
      risk, ``qsg_jax.engine.auto_step``), or the initial step eta0 of eta_t = eta0 / (1 + eta0 lam t)
      (the papers do not search it); a value or a list of values.

  Returns:
    Dict of 1-D NumPy arrays keyed by ``GRID_KEYS`` (7 x 7 x 11 x 1 = 539 points); the step
    sizes are an object array of floats and/or "auto".
  """
  powers = 2.0 ** np.arange(-3, 4)
  return {"lam": powers, "sigma": powers, "gamma": np.arange(11) / 10.0,
          "step_size": _step_values(step_size)}


def quick_grid(step_size=defaults.STEP_SIZE):
  """A small grid (2 x 2 x 3 x 1) around the defaults that work on SGEMM, for quick runs.

  lam in {1e-3, 2^-3} (the engine's default and the papers' smallest), sigma in {2^-3, 1},
  gamma in {0, 0.5, 1}.
  """
  return {"lam": np.array([1e-3, 0.125]), "sigma": np.array([0.125, 1.0]),
          "gamma": np.array([0.0, 0.5, 1.0]), "step_size": _step_values(step_size)}


def _checked_grid(grid):
  if isinstance(grid, dict) and set(grid) == set(GRID_KEYS) - {"step_size"}:
    grid = dict(grid, step_size=[defaults.STEP_SIZE])   # the step is not searched by default
  if not isinstance(grid, dict) or set(grid) != set(GRID_KEYS):
    got = sorted(grid) if isinstance(grid, dict) else type(grid).__name__
    raise ValueError(f"grid must be a dict with exactly the keys {sorted(GRID_KEYS)} (the "
                     f"keyword names of qsg_jax.fit; step_size may be left out: "
                     f"[{defaults.STEP_SIZE!r}]); received {got}. Start from quick_grid() or "
                     "paper_grid().")
  checked = {}
  for name in GRID_KEYS:
    if name == "step_size":
      values = _step_values(grid[name])
      if any(isinstance(v, str) and v != "auto" for v in values):
        raise ValueError(f"grid['step_size'] holds numbers and/or 'auto'; received "
                         f"{grid[name]!r}.")
      numbers = np.array([v for v in values if not isinstance(v, str)], np.float64)
      if values.size == 0 or not np.all(np.isfinite(numbers)) or np.any(numbers <= 0):
        raise ValueError(f"grid['step_size'] must be a non-empty list of numbers > 0 and/or "
                         f"'auto'; received {grid[name]!r}.")
      checked[name] = values
      continue
    values = np.atleast_1d(np.asarray(grid[name], np.float64))
    if values.ndim != 1 or values.size == 0 or not np.all(np.isfinite(values)):
      raise ValueError(f"grid[{name!r}] must be a non-empty 1-D list of finite values; received "
                       f"{grid[name]!r}.")
    if name == "gamma" and np.any((values < 0) | (values > 1)):
      raise ValueError(f"grid['gamma'] must lie in [0, 1]; received {values.tolist()}.")
    if name == "lam" and np.any(values < 0):
      raise ValueError(f"grid['lam'] must be >= 0; received {values.tolist()}.")
    if name == "sigma" and np.any(values <= 0):
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


def _per_task_runner(config, x_l, y_l, x_u, train, valid, key, divergence_threshold,
                     tasks_per_batch, progress):
  """run(hyper, fold_of) -> (aucs, diverged): every task trained alone, batches vmapped."""
  args = (jnp.asarray(x_l), jnp.asarray(y_l), jnp.asarray(x_u))

  def run(hyper, fold_of):
    num_tasks, k = fold_of.size, config.num_classes
    batch = int(tasks_per_batch) if tasks_per_batch else _batch_size(
        num_tasks, config, x_l.shape[0], x_u.shape[0], x_l.shape[1], BATCH_BYTES)
    pad = lambda a: np.concatenate([a, np.repeat(a[-1:], -num_tasks % batch, axis=0)])
    hyper, fold_of = jax.tree.map(pad, hyper), pad(fold_of)
    aucs = np.empty((fold_of.size, k - 1))
    diverged = np.empty(fold_of.size, bool)
    for start in range(0, fold_of.size, batch):
      part = slice(start, start + batch)
      out, bad = _task_aucs(key, *args, jnp.asarray(train[fold_of[part]]),
                            jnp.asarray(valid[fold_of[part]]),
                            jax.tree.map(lambda a: jnp.asarray(a[part]), hyper), config,
                            float(divergence_threshold))
      aucs[part], diverged[part] = np.asarray(out), np.asarray(bad)
      if progress is not None:
        progress({"tasks_done": min(start + batch, num_tasks), "num_tasks": num_tasks})
    return aucs[:num_tasks], diverged[:num_tasks]

  return run


def _grouped_runner(config, x_l, y_l, x_u, train, valid, key, divergence_threshold,
                    tasks_per_batch, progress):
  """run(hyper, fold_of) -> (aucs, diverged): tasks of one sigma trained together."""

  def run(hyper, fold_of):
    per_task = 4 * 3 * (x_l.shape[0] + x_u.shape[0]) * max(config.num_classes - 1, 1)
    batch = int(tasks_per_batch) if tasks_per_batch else int(
        max(1, min(GROUPED_TASKS_PER_BATCH, BATCH_BYTES // per_task)))
    return grouped.task_aucs(
        key, x_l, y_l, x_u, train, valid, hyper.sigma, hyper.lam, hyper.gamma, hyper.eta0,
        fold_of, num_steps=config.num_steps, num_frequencies=config.num_frequencies,
        unlabeled_batch_size=config.unlabeled_batch_size,
        divergence_threshold=divergence_threshold, tasks_per_batch=batch, progress=progress)

  return run


def _resolving_auto(run, key, x_l, y_l, x_u, train, k, config):
  """``run`` with NaN step sizes (grid value "auto") replaced by each task's auto eta0."""
  pos_w, neg_w = grouped.fold_weights(train, y_l, k)

  def resolved(hyper, fold_of):
    auto = np.isnan(hyper.eta0)
    if auto.any():
      eta0 = np.array(hyper.eta0)
      eta0[auto] = auto_step.task_step_sizes(
          key, x_l, x_u, pos_w, neg_w, hyper.sigma[auto], hyper.lam[auto], hyper.gamma[auto],
          fold_of[auto], config.unlabeled_batch_size)
      hyper = hyper._replace(eta0=eta0)
    return run(hyper, fold_of)

  return resolved


def _run_tasks_fn(method, config, *args):
  """The task runner of ``method``: "grouped" (squared loss, whole labeled set) or "per_task"."""
  grouped_ok = (losses_lib.get_loss(config.loss).name == "squared"
                and config.labeled_batch_size is None)
  if method not in ("auto", "grouped", "per_task"):
    raise ValueError(f"method must be 'auto', 'grouped' or 'per_task'; received {method!r}.")
  if method == "grouped" and not grouped_ok:
    raise ValueError(f"method='grouped' needs loss='squared' and labeled_batch_size=None; "
                     f"received loss={config.loss!r}, labeled_batch_size="
                     f"{config.labeled_batch_size}. Use method='per_task' (or 'auto').")
  if method == "grouped" or (method == "auto" and grouped_ok):
    return _grouped_runner(config, *args)
  return _per_task_runner(config, *args)


def _coordinate_gamma(run, best, grid, k, num_folds):
  """Per-split gamma by coordinate search: each gamma_j over the grid, the others held.

  Starts from the best shared gamma; one pass over j = 0..k-2, keeping a change only when it
  raises the mean validation AUC (every fold must converge). Returns (gamma [k-1], score).
  """
  gamma = np.full(k - 1, best["gamma"])
  values = grid["gamma"]
  current = None
  for j in range(k - 1):
    candidates = np.repeat(gamma[None, :], values.size, axis=0)
    candidates[:, j] = values
    num = values.size * num_folds
    hyper = engine.Hyperparams(
        sigma=np.full(num, best["sigma"], np.float32), lam=np.full(num, best["lam"], np.float32),
        gamma=np.repeat(candidates, num_folds, axis=0).astype(np.float32),
        eta0=np.full(num, np.nan if best["step_size"] == "auto" else best["step_size"],
                     np.float32))
    aucs, diverged = run(hyper, np.tile(np.arange(num_folds), values.size))
    fold_aucs = aucs.reshape(values.size, num_folds, k - 1)
    score = cv_lib.nanmean(cv_lib.nanmean(np.moveaxis(fold_aucs, 1, 2)))     # [n_gamma]
    score = np.where(diverged.reshape(values.size, num_folds).any(axis=1), np.nan, score)
    if np.isfinite(score).any():
      pick = int(np.nanargmax(score))
      if current is None or score[pick] > current:
        gamma, current = candidates[pick], float(score[pick])
  return gamma, current


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
                   progress: Optional[Callable[[dict], None]] = None, method: str = "auto",
                   per_split_gamma: bool = False) -> cv_lib.CVResult:
  """Picks lam, sigma, gamma and the step size of QS3ORAO / QSG-S2AUC by stratified k-fold CV.

  Args:
    x_labeled: [n_l, d] labeled points (preprocessed like the data ``qsg_jax.fit`` will get).
    y_labeled: [n_l] int labels 0..k-1, every class with at least ``num_folds`` points.
    x_unlabeled: [n_u, d] unlabeled points shared by every fold; None only if every gamma is 1.
      Every task costs one training run over them: pass a subsample of a few thousand.
    grid: dict of 1-D value lists keyed by ``GRID_KEYS`` (without "step_size": the default
      step alone); default ``paper_grid()``.
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
    method: "grouped" trains the tasks of one sigma together, computing each step's features
      once for all of them (``qsg_jax.engine.grouped``; squared loss with the whole labeled set
      only); "per_task" vmaps independent trainings; "auto" (default) is "grouped" when it
      applies. Both give the same scores to float32 rounding.
    per_split_gamma: after the grid, choose gamma per split j (the ordinal paper's protocol) by
      one coordinate-wise pass over the gamma grid at the chosen lam, sigma and step; ``best``
      then holds a [k-1] gamma array. No effect when k = 2.

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
    validation.warn_if_unscaled("x_unlabeled", x_u)
  validation.warn_if_unscaled("x_labeled", x_l)
  folds = cv_lib.stratified_folds(y_l, num_folds, seed)
  train, valid = cv_lib.fold_training_sets(folds, y_l)
  config = engine.make_config(k, num_steps, chunk_size=chunk_size, block_group=block_group,
                              num_frequencies=num_frequencies,
                              labeled_batch_size=labeled_batch_size,
                              unlabeled_batch_size=unlabeled_batch_size, loss=loss)
  if cache_unlabeled is None:
    cache_unlabeled = engine.use_unlabeled_cache(x_u.shape[0], config)
  config = config.replace(cache_unlabeled=cache_unlabeled)

  if tasks_per_batch and int(tasks_per_batch) < 1:
    raise ValueError(f"tasks_per_batch must be >= 1; received {tasks_per_batch}.")
  points = list(itertools.product(*(range(grid[name].size) for name in GRID_KEYS)))
  tasks = [(p, f) for p in points for f in range(num_folds)]
  value = lambda name, i: np.array([np.nan if isinstance(grid[name][p[i]], str) else
                                    grid[name][p[i]] for p, _ in tasks], np.float32)
  hyper = engine.Hyperparams(
      sigma=value("sigma", 1), lam=value("lam", 0),
      gamma=np.repeat(value("gamma", 2)[:, None], k - 1, axis=1), eta0=value("step_size", 3))
  fold_of = np.array([f for _, f in tasks])
  key = validation.check_key(key)
  run = _resolving_auto(
      _run_tasks_fn(method, config, x_l, y_l, x_u, train, valid, key, divergence_threshold,
                    tasks_per_batch, progress), key, x_l, y_l, x_u, train, k, config)
  aucs, diverged = run(hyper, fold_of)

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
  best = {name: grid[name][i] if isinstance(grid[name][i], str) else float(grid[name][i])
          for name, i in zip(GRID_KEYS, index)}
  best_score = float(target[index])
  if per_split_gamma and k > 2:
    gamma, score = _coordinate_gamma(run, best, grid, k, num_folds)
    if score is not None and score > best_score:
      best["gamma"], best_score = gamma, score
  return cv_lib.CVResult(best, best_score, scores, fold_scores, grid)


PROTOCOLS = ("paper", "quick")


def select_hyperparams(x_labeled, y_labeled, x_unlabeled=None, *, protocol: str = "paper",
                       num_unlabeled: Optional[int] = 2000, seed: int = 0, key=0,
                       **cv_kwargs) -> dict:
  """The hyper-parameters (lam, sigma, gamma, step_size) chosen by the papers' 5-fold CV.

  Args:
    x_labeled: [n_l, d]; y_labeled: [n_l] int labels 0..k-1; x_unlabeled: [n_u, d] or None.
    protocol: "paper" (``paper_grid()``, 539 points x 5 folds) or "quick" (``quick_grid()``).
    num_unlabeled: the CV trains on a uniform subsample of this many unlabeled points (drawn
      with ``seed``; None: all). Every task keeps every unlabeled score current.
    seed: int seed of the folds and of the subsample.
    key: PRNG key or int seed shared by every task.
    **cv_kwargs: further keyword arguments of ``cross_validate`` (num_steps, num_classes,
      per_split_gamma, ...).

  Returns:
    Dict of keyword arguments for ``qsg_jax.fit`` (lam, sigma, gamma, step_size) plus
    "cv_auc", the chosen setting's mean validation AUC.

  Raises:
    ValueError: unknown protocol (and everything ``cross_validate`` raises).
  """
  if protocol not in PROTOCOLS:
    raise ValueError(f"protocol must be one of {PROTOCOLS}; received {protocol!r}. Use 'paper' "
                     "for the papers' 539-point grid, 'quick' for a 12-point one.")
  if x_unlabeled is not None and num_unlabeled is not None:
    x_unlabeled = np.asarray(x_unlabeled)
    if x_unlabeled.shape[0] > num_unlabeled:
      pick = np.random.default_rng(seed).choice(x_unlabeled.shape[0], num_unlabeled,
                                                replace=False)
      x_unlabeled = x_unlabeled[np.sort(pick)]
  grid = paper_grid() if protocol == "paper" else quick_grid()
  result = cross_validate(x_labeled, y_labeled, x_unlabeled, grid=grid, seed=seed, key=key,
                          **cv_kwargs)
  return dict(result.best, cv_auc=result.best_score)
