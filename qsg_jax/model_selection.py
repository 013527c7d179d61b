"""k-fold cross-validation of QS3ORAO / QSG-S2AUC, and vmapped fits over a grid.

The papers pick lam and sigma from 2^-3..2^3 and gamma from 0..1 in steps of 0.1 by 5-fold
cross-validation (QSG-S2AUC Sec. 6.1; QS3ORAO "Experimental Setup"). Folds split the labeled
points, stratified by class (``qsg_jax.folds``, shared with the baselines); every fold trains on
its other labeled points plus all the unlabeled points and is scored by the AUC of each split
{y <= j} vs {y > j} on its held-out labeled points (``metrics.split_aucs``).

Every (grid point, fold) pair is one task. For the folds to share shapes every training set has
the size of the smallest one (``folds.fold_training_sets``). Every task uses the same PRNG key
(common random numbers), so task t equals ``qsg_jax.fit(x_l[train_t], y_l[train_t], x_u,
key=key, ...)`` scored on its held-out fold. Two runners compute the tasks, with the same results
to float32 rounding:
  * "grouped" (the default where it applies: squared loss, whole labeled set each step, no
    per-split corrections): tasks with the same sigma share every sample and feature, so
    ``qsg_jax.engine.grouped`` computes each step's features once per sigma and batches only the
    per-task part.
  * "per_task": ``Hyperparams`` are traced in ``engine.train``, so a batch of independent tasks
    is one ``jax.vmap`` of init + train + score (``_train_and_score``, which ``fit_over_grid``
    shares), compiled once for all batches.

The grid may hold step_size "auto" (each task gets the eta0 ``fit`` would use on its fold) and
split_lam (None: plain QS3ORAO; a number: per-split corrections, scored per split). gamma is one
value shared by the k-1 subproblems unless ``per_split_gamma`` (the ordinal paper's protocol)
runs a coordinate-wise search per split after the grid. A task whose scores diverge (non-finite,
or max |f| on the labeled points above ``divergence_threshold``, as ``fit`` checks) scores NaN
and is never chosen (``folds.best_point``).

The same switch as ``qsg_jax.fit`` (``FitConfig.solver``, ``config.choose_solver``) picks whose
fits the tasks are: "dsg" (the default) runs the above; "direct" (or "auto" with the squared
loss and no DSG-only setting) runs ``qsg_jax.direct.cross_validate``, every task from shared
moments (the 539 x 5 paper grid in seconds), returned in the same ``CVResult`` layout.
"""
import collections.abc
import functools
import itertools
from typing import Callable, Optional

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _fit
from qsg_jax import _validation as validation
from qsg_jax import config as config_lib
from qsg_jax import direct
from qsg_jax import engine
from qsg_jax import folds
from qsg_jax import memory
from qsg_jax import metrics
from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import CHUNK_SIZE
from qsg_jax.config import DIVERGENCE_THRESHOLD
from qsg_jax.config import FitConfig
from qsg_jax.engine import auto_step
from qsg_jax.engine import grouped
from qsg_jax.engine import losses as losses_lib
from qsg_jax.errors import DivergenceError
from qsg_jax.folds import CVResult
from qsg_jax.folds import paper_grid  # pylint: disable=unused-import  (model_selection.paper_grid)
from qsg_jax.folds import quick_grid  # pylint: disable=unused-import

# Bytes the arrays of one vmapped batch of tasks may take (sets the default batch size).
BATCH_BYTES = 2**29
# Default tasks per batch on CPU, where larger batches ran slower per task (bench_cv.py).
CPU_TASKS_PER_BATCH = 4
# Tasks of one sigma trained together by the grouped path (one feature computation per step).
GROUPED_TASKS_PER_BATCH = 512
# The fields of ``FitConfig`` a grid may vary: the traced ``engine.Hyperparams``.
TRACED = ("lam", "sigma", "gamma", "step_size", "split_lam")


def _train_and_score(key, x_labeled, y_labeled, x_unlabeled, train, x_score, hyper, config):
  """b runs vmapped: run i trains on the labeled rows ``train[i]`` and every unlabeled point with
  ``hyper[i]`` (same key), then scores ``x_score``.

  Returns:
    (scores [b, n_s] (per-split corrections: [b, n_s, k-1]), per-step metrics dict of [b, T]).
  """
  score = engine.split_scores if config.split_corrections else engine.model_scores

  def run(train_t, hyper_t):
    data = engine.TrainData(x_labeled[train_t], y_labeled[train_t], x_unlabeled)
    state, report = engine.train(engine.init(key, data, config), data, hyper_t, config,
                                 config.num_steps)
    return score(engine.model_of(state, hyper_t), x_score, config.block_group,
                 config.predict_chunk), report

  return jax.vmap(run)(train, hyper)


@functools.partial(jax.jit, static_argnames=("config", "divergence_threshold"))
def _task_aucs(key, x_labeled, y_labeled, x_unlabeled, train, valid, hyper, config,
               divergence_threshold):
  """[b, k-1] held-out AUCs (NaN where training diverged) and [b] bool "diverged" of b tasks
  (train [b, n_train] indices, valid [b, n_l] masks, hyper with leading axis b)."""
  scores, report = _train_and_score(key, x_labeled, y_labeled, x_unlabeled, train, x_labeled,
                                    hyper, config)
  peak = jnp.max(report["max_abs_score"], axis=1)
  finite = jnp.all(jnp.isfinite(scores.reshape(scores.shape[0], -1)), axis=1)
  ok = jnp.isfinite(peak) & (peak <= divergence_threshold) & finite
  aucs = jax.vmap(lambda s, v: metrics.split_aucs(s, y_labeled, config.num_classes, v))(
      scores, valid)
  return jnp.where(ok[:, None], aucs, jnp.nan), ~ok


def _per_task_runner(config, x_l, y_l, x_u, train, valid, key, divergence_threshold,
                     tasks_per_batch, progress):
  """run(hyper, fold_of) -> (aucs, diverged): every task trained alone, batches vmapped."""
  args = (jnp.asarray(x_l), jnp.asarray(y_l), jnp.asarray(x_u))

  def run(hyper, fold_of):
    num_tasks, k = fold_of.size, config.num_classes
    cap = CPU_TASKS_PER_BATCH if jax.default_backend() == "cpu" else num_tasks
    per_task = memory.fit_bytes(config, train.shape[1], x_u.shape[0], x_l.shape[1])
    batch = int(tasks_per_batch or max(1, min(num_tasks, cap, BATCH_BYTES // per_task)))
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
    batch = int(tasks_per_batch or max(1, min(GROUPED_TASKS_PER_BATCH, BATCH_BYTES // per_task)))
    return grouped.task_aucs(
        key, x_l, y_l, x_u, train, valid, hyper.sigma, hyper.lam, hyper.gamma, hyper.eta0,
        fold_of, num_steps=config.num_steps, num_frequencies=config.num_frequencies,
        unlabeled_batch_size=config.unlabeled_batch_size,
        divergence_threshold=divergence_threshold, tasks_per_batch=batch, progress=progress)

  return run


def _task_runner(method, config, x_l, y_l, x_u, train, valid, key, *args):
  """run(hyper, fold_of) -> (aucs [t, k-1], diverged [t]) of any tasks: "auto" step sizes (NaN)
  resolved per task, tasks with per-split corrections (finite ``hyper.split_lam``) trained
  per task, the others by ``method`` ("grouped": squared loss, whole labeled set)."""
  grouped_ok = (losses_lib.get_loss(config.loss).name == "squared"
                and config.labeled_batch_size is None)
  if method not in ("auto", "grouped", "per_task"):
    raise ValueError(f"method must be 'auto', 'grouped' or 'per_task'; received {method!r}.")
  if method == "grouped" and not grouped_ok:
    raise ValueError(f"method='grouped' needs loss='squared' and labeled_batch_size=None; "
                     f"received loss={config.loss!r}, labeled_batch_size="
                     f"{config.labeled_batch_size}. Use method='per_task' (or 'auto').")
  data = (x_l, y_l, x_u, train, valid, key, *args)
  plain_run = (_grouped_runner if method == "grouped" or (method == "auto" and grouped_ok)
               else _per_task_runner)(config, *data)
  split_run = _per_task_runner(config.replace(split_corrections=True), *data)
  pos_w, neg_w = grouped.fold_weights(train, y_l, config.num_classes)

  def run(hyper, fold_of):
    split_lam = np.full(fold_of.size, np.nan) if hyper.split_lam is None else hyper.split_lam
    eta0 = np.array(hyper.eta0)
    auto = np.isnan(eta0)
    if auto.any():   # fit's "auto", halved with learning (finite) corrections
      eta0[auto] = np.where(~np.isfinite(split_lam[auto]), 1.0, 0.5) * auto_step.task_step_sizes(
          key, x_l, x_u, pos_w, neg_w, hyper.sigma[auto], hyper.lam[auto], hyper.gamma[auto],
          fold_of[auto], config.unlabeled_batch_size)
    if method == "grouped" and not np.isnan(split_lam).all():
      raise ValueError("method='grouped' has no per-split corrections: use method='auto' or "
                       "'per_task' for a grid with split_lam values.")
    aucs = np.full((fold_of.size, config.num_classes - 1), np.nan)
    diverged = np.zeros(fold_of.size, bool)
    for corrected, runner in ((False, plain_run), (True, split_run)):
      part = np.nonzero(np.isnan(split_lam) != corrected)[0]
      if part.size:
        sub = hyper._replace(eta0=eta0, split_lam=split_lam if corrected else None)
        aucs[part], diverged[part] = runner(jax.tree.map(lambda a: a[part], sub), fold_of[part])
    return aucs, diverged

  return run


def _tasks_hyper(points, grid, num_folds, k):
  """``Hyperparams`` ([t] leaves, gamma [t, k-1]) and fold ids of the tasks of ``points``: every
  grid point (index tuples into ``grid``) repeated for each fold; "auto" and None are NaN."""
  names = list(grid)
  value = lambda name: np.repeat(np.array([
      np.nan if not isinstance(grid[name][p[names.index(name)]], float)
      else grid[name][p[names.index(name)]] for p in points], np.float32), num_folds)
  hyper = engine.Hyperparams(
      sigma=value("sigma"), lam=value("lam"),
      gamma=np.repeat(value("gamma")[:, None], k - 1, axis=1), eta0=value("step_size"),
      split_lam=value("split_lam") if "split_lam" in grid else None)
  return hyper, np.tile(np.arange(num_folds), len(points))


def _coordinate_gamma(run, best, grid, k, num_folds):
  """Per-split gamma by coordinate search: each gamma_j over the grid, the others held.

  Starts from the best shared gamma; one pass over j = 0..k-2, keeping a change only when it
  raises the mean validation AUC (every fold must converge). Returns (gamma [k-1], score).
  """
  index = {name: list(grid[name]).index(best[name]) for name in grid}
  hyper, fold_of = _tasks_hyper([tuple(index.values())], grid, num_folds, k)
  gamma, values, current = np.full(k - 1, best["gamma"]), grid["gamma"], None
  for j in range(k - 1):
    candidates = np.repeat(gamma[None, :], values.size, axis=0)
    candidates[:, j] = values
    tasks = jax.tree.map(lambda a: np.concatenate([a] * values.size), hyper)
    tasks = tasks._replace(gamma=np.repeat(candidates, num_folds, axis=0).astype(np.float32))
    aucs, diverged = run(tasks, np.tile(fold_of, values.size))
    fold_aucs = aucs.reshape(values.size, num_folds, k - 1)
    score = folds.nanmean(folds.nanmean(np.moveaxis(fold_aucs, 1, 2)))     # [n_gamma]
    score = np.where(diverged.reshape(values.size, num_folds).any(axis=1), np.nan, score)
    if np.isfinite(score).any():
      pick = int(np.nanargmax(score))
      if current is None or score[pick] > current:
        gamma, current = candidates[pick], float(score[pick])
  return gamma, current


def cross_validate(x_labeled, y_labeled, x_unlabeled=None, *, grid: Optional[dict] = None,
                   quick: bool = False, num_folds: int = 5, seed: int = 0, key=0,
                   num_classes: Optional[int] = None, config: Optional[FitConfig] = None,
                   chunk_size: int = CHUNK_SIZE, block_group: int = BLOCK_GROUP,
                   cache_unlabeled: Optional[bool] = None,
                   divergence_threshold: float = DIVERGENCE_THRESHOLD,
                   tasks_per_batch: Optional[int] = None,
                   progress: Optional[Callable[[dict], None]] = None, method: str = "auto",
                   per_split_gamma: bool = False, **hyperparams) -> CVResult:
  """Picks lam, sigma, gamma, the step size (and split_lam) of QS3ORAO / QSG-S2AUC by k-fold CV.

  Args:
    x_labeled: [n_l, d] labeled points (preprocessed like the data ``qsg_jax.fit`` will get).
    y_labeled: [n_l] int labels 0..k-1, every class with at least ``num_folds`` points.
    x_unlabeled: [n_u, d] unlabeled points shared by every fold; None only if every gamma is 1.
      Every task costs one training run over them: pass a subsample of a few thousand
      (``folds.subsample``).
    grid: dict of 1-D value lists with the keys lam, sigma, gamma and optionally step_size
      (default ["auto"]) and split_lam (None and/or numbers); default ``paper_grid()``.
    quick: use ``quick_grid()`` when ``grid`` is None.
    num_folds: F (the papers use 5); stratified, copies of a labeled row share a fold
      (``folds.stratified_folds``).
    seed: int seed of the fold assignment.
    key: PRNG key or int seed shared by every task (samples and feature blocks).
    num_classes: k; default max(y_labeled) + 1.
    config: the fixed hyper-parameters (``FitConfig``: num_steps, num_frequencies,
      unlabeled_batch_size, labeled_batch_size, loss); the grid's keys are searched.
    chunk_size, block_group, cache_unlabeled, divergence_threshold: as in ``qsg_jax.fit``.
    tasks_per_batch: tasks per vmapped call; default as many as fit in about 512 MiB (at most
      ``CPU_TASKS_PER_BATCH`` on CPU, where larger batches ran slower per task).
    progress: optional callable(dict) after each batch, with "tasks_done", "num_tasks".
    method: "grouped" (tasks of one sigma together; squared loss, whole labeled set, no
      split_lam), "per_task" (independent vmapped trainings), or "auto" (default: "grouped"
      where it applies). Both give the same scores to float32 rounding.
    per_split_gamma: after the grid, choose gamma per split j (the ordinal paper's protocol) by
      one coordinate-wise pass over the gamma grid at the chosen point; ``best`` then holds a
      [k-1] gamma array. No effect when k = 2.
    **hyperparams: ``FitConfig`` fields overriding ``config`` (not the grid's keys); solver
      "direct" (or "auto", module docstring) scores the direct solver's fits
      (``direct.cross_validate`` with p = ``config.num_landmarks`` or
      ``direct.selection.CV_NUM_FEATURES`` landmarks). DSG-only: the config's
      ``config.DSG_FIELDS``, a grid with step sizes other than "auto" or with split_lam,
      method "grouped" / "per_task", per_split_gamma with k > 2, chunk_size, block_group,
      cache_unlabeled, divergence_threshold, tasks_per_batch, split_lam (a ``ValueError`` with
      solver "direct"; "auto" then runs DSG).

  Returns:
    ``CVResult``: ``best`` holds the grid's keys for ``qsg_jax.fit(x_l, y_l, x_u, **best,
    solver=result.solver, ...)``; ``scores`` is [*grid shape, k-1] (fold means),
    ``fold_scores`` [..., F, k-1]; NaN marks diverged (DSG) or ill-posed (direct) tasks and
    held-out folds lacking one side of a split; ``solver`` is "dsg" or "direct". The best
    point maximizes the mean over splits of the fold-mean AUC among points that failed on no
    fold.

  Raises:
    ValueError, TypeError: bad inputs, or every grid point diverged.
  """
  config = (config or FitConfig()).replace(**hyperparams)
  if grid is not None and not isinstance(grid, dict):
    raise TypeError(f"grid must be a dict of value lists keyed by hyper-parameter names, e.g. "
                    f"{{'lam': [1e-3], 'sigma': [0.5], 'gamma': [0.5]}}; received "
                    f"{type(grid).__name__}.")
  grid = dict(quick_grid() if grid is None and quick else paper_grid() if grid is None else grid)
  searched = sorted(set(hyperparams) & set(grid))
  if searched or callable(config.step_size):
    raise ValueError(f"{searched or 'a schedule step_size'} cannot be fixed in a search: the "
                     "grid's keys are searched (fix one with grid[name] = [value]), and step "
                     "sizes are numbers or 'auto'.")
  dsg_options = _dsg_options(grid, method, per_split_gamma, num_classes, y_labeled,
                             chunk_size=chunk_size != CHUNK_SIZE,
                             block_group=block_group != BLOCK_GROUP,
                             cache_unlabeled=cache_unlabeled is not None,
                             divergence_threshold=divergence_threshold != DIVERGENCE_THRESHOLD,
                             tasks_per_batch=tasks_per_batch is not None,
                             **{f"split_lam {_NOT_SEARCHED}": config.split_lam is not None})
  if config_lib.choose_solver(config, dsg_options) == "direct":
    return _direct_cross_validate(x_labeled, y_labeled, x_unlabeled, grid, num_folds, seed, key,
                                  num_classes, config, progress)
  grid.setdefault("step_size", [config.step_size])          # the rest of config is fixed
  if config.split_lam is not None:
    grid.setdefault("split_lam", [config.split_lam])
  grid = folds.check_grid(grid)
  config = config.replace(step_size="auto", split_lam=None)   # the grid's values replace them
  num_folds, seed = folds.check_num_folds(num_folds), folds.check_seed(seed)
  validation.check_count("tasks_per_batch", tasks_per_batch, allow_none=True)
  validation.check_callable("progress", progress)
  divergence_threshold = validation.check_positive("divergence_threshold", divergence_threshold)
  key = validation.check_key(key)
  inputs = _fit.checked_inputs(x_labeled, y_labeled, x_unlabeled, float(grid["sigma"].max()),
                               num_classes)
  x_l, y_l, x_u, k = inputs[:4]
  if not inputs.has_unlabeled and np.any(grid["gamma"] < 1):
    raise ValueError(f"no unlabeled data but the gamma grid {grid['gamma'].tolist()} gives "
                     "weight to the unlabeled risks: pass x_unlabeled, or use gamma=[1.0].")
  fold_of = folds.stratified_folds(y_l, num_folds, seed, points=x_l)   # copies share a fold
  train, valid = folds.fold_training_sets(fold_of, y_l)
  eng = _fit.engine_config(inputs._replace(x_labeled=x_l[train[0]]), config, chunk_size,
                           block_group, 1, cache_unlabeled)
  points = list(itertools.product(*(range(values.size) for values in grid.values())))
  run = _task_runner(method, eng, x_l, y_l, x_u, train, valid, key, divergence_threshold,
                     tasks_per_batch, progress)
  aucs, diverged = run(*_tasks_hyper(points, grid, num_folds, k))

  shape = tuple(values.size for values in grid.values())
  fold_scores = aucs.reshape(*shape, num_folds, k - 1)
  scores = folds.nanmean(np.moveaxis(fold_scores, -2, -1))          # [*grid, k-1]
  # A point whose training diverged on any fold is never chosen (``fit`` would refuse it).
  unstable = diverged.reshape(*shape, num_folds).any(axis=-1)
  target = np.where(unstable, np.nan, folds.nanmean(scores))        # [*grid]
  index = folds.best_point(target, fix=(
      "every grid point diverged (non-finite or exploding scores) or held-out folds lack one "
      "side of every split: lower the step size or raise lam in the grid, or use fewer folds."))
  best = {name: values[i] if not isinstance(values[i], (float, np.floating)) else float(values[i])
          for (name, values), i in zip(grid.items(), index)}
  best_score = float(target[index])
  if per_split_gamma and k > 2:
    gamma, score = _coordinate_gamma(run, best, grid, k, num_folds)
    if score is not None and score > best_score:
      best["gamma"], best_score = gamma, score
    else:                    # the shared value won: still one gamma per split, as documented
      best["gamma"] = np.full(k - 1, float(best["gamma"]))
  return CVResult(best, best_score, scores, fold_scores, grid, solver="dsg")


# How the DSG-only options name split_lam: direct fits take it, the direct CV does not search it.
_NOT_SEARCHED = "(the direct CV does not search it; direct fits take it)"


def _dsg_options(grid, method, per_split_gamma, num_classes, y_labeled, **given):
  """The DSG-only options of a ``cross_validate`` call that are set (``choose_solver``)."""
  options = [name for name, is_given in given.items() if is_given]
  steps = grid.get("step_size", ["auto"]) if isinstance(grid, dict) else ["auto"]
  steps = [steps] if isinstance(steps, str) or np.ndim(steps) == 0 else list(steps)
  if any(not (isinstance(v, str) and v == "auto") for v in steps):
    options.append("grid['step_size']")
  if isinstance(grid, dict) and "split_lam" in grid:
    options.append(f"grid['split_lam'] {_NOT_SEARCHED}")
  if method != "auto":
    options.append("method")
  if per_split_gamma:
    k = num_classes
    if k is None:
      try:
        k = int(np.max(np.asarray(y_labeled))) + 1
      except (TypeError, ValueError):
        k = 3   # bad labels: DSG's checks report them
    if k > 2:
      options.append("per_split_gamma")
  return options


def _direct_cross_validate(x_labeled, y_labeled, x_unlabeled, grid, num_folds, seed, key,
                           num_classes, config, progress):
  """``cross_validate`` by the direct solver's CV, in DSG's ``CVResult`` layout: the grid
  checked as QSG's (step_size ["auto"], a size-1 axis of ``scores``), ``best`` with it."""
  grid = folds.check_grid(dict(grid), "qsg")
  num_folds, seed = folds.check_num_folds(num_folds), folds.check_seed(seed)
  validation.check_callable("progress", progress)
  result = direct.cross_validate(
      x_labeled, y_labeled, x_unlabeled,
      grid={name: grid[name] for name in direct.selection.GRID_KEYS},
      num_folds=num_folds, seed=seed, key=key, num_classes=num_classes,
      num_features=config.num_landmarks or direct.selection.CV_NUM_FEATURES)
  scores = result.scores[..., None, :]             # [L, S, G, 1 (step_size), k-1]
  fold_scores = result.fold_scores[..., None, :, :]
  if progress is not None:
    progress({"tasks_done": fold_scores[..., 0].size, "num_tasks": fold_scores[..., 0].size})
  return CVResult(dict(result.best, step_size="auto"), result.best_score, scores, fold_scores,
                  grid, solver="direct")


PROTOCOLS = ("paper", "quick")


def protocol_grid(protocol: str) -> dict:
  """The grid of a CV protocol: "paper" (``paper_grid()``, 539 points) or "quick" (12)."""
  if protocol not in PROTOCOLS:
    raise ValueError(f"protocol must be one of {PROTOCOLS}; received {protocol!r}. Use 'paper' "
                     "for the papers' 539-point grid, 'quick' for a 12-point one.")
  return paper_grid() if protocol == "paper" else quick_grid()


def select_hyperparams(x_labeled, y_labeled, x_unlabeled=None, *, protocol: str = "paper",
                       num_unlabeled: Optional[int] = 2000, seed: int = 0, key=0,
                       **cv_kwargs) -> dict:
  """The hyper-parameters (lam, sigma, gamma, step_size) chosen by the papers' 5-fold CV.

  Args:
    x_labeled: [n_l, d]; y_labeled: [n_l] int labels 0..k-1; x_unlabeled: [n_u, d] or None.
    protocol: "paper" (``paper_grid()``, 539 points x 5 folds) or "quick" (``quick_grid()``).
    num_unlabeled: the CV trains on ``folds.subsample(x_unlabeled, num_unlabeled, seed)``
      (None: all). Every task keeps every unlabeled score current.
    seed: int seed of the folds and of the subsample.
    key: PRNG key or int seed shared by every task.
    **cv_kwargs: further keyword arguments of ``cross_validate`` (num_steps, num_classes,
      per_split_gamma, solver, ...).

  Returns:
    Dict of keyword arguments for ``qsg_jax.fit`` (lam, sigma, gamma, step_size) plus
    "cv_auc", the chosen setting's mean validation AUC.

  Raises:
    ValueError: unknown protocol (and everything ``cross_validate`` raises).
  """
  grid = protocol_grid(protocol)
  if x_unlabeled is not None:
    x_unlabeled = folds.subsample(x_unlabeled, num_unlabeled, seed)
  result = cross_validate(x_labeled, y_labeled, x_unlabeled, grid=grid, seed=seed, key=key,
                          **cv_kwargs)
  return dict(result.best, cv_auc=result.best_score)


_fit_over_grid = jax.jit(_train_and_score, static_argnames="config")


def _value_list(name, values) -> list:
  """A grid axis as a list: one value (a number, "auto", None, a schedule) becomes [value]; an
  empty list is refused by name (``itertools.product`` would make an empty grid)."""
  if values is None or isinstance(values, str) or callable(values) or not isinstance(
      values, collections.abc.Iterable) or np.ndim(values) == 0:
    values = [values]
  values = list(values)
  if not values:
    raise ValueError(f"grid[{name!r}] is empty; give it at least one value.")
  return values


def fit_over_grid(x_labeled, y_labeled, x_unlabeled, x_eval, grid: dict, *, key=0,
                  num_classes: Optional[int] = None, config: Optional[FitConfig] = None,
                  divergence_threshold: float = DIVERGENCE_THRESHOLD,
                  cache_unlabeled: Optional[bool] = None, **hyperparams) -> dict:
  """Fits at every point of a grid in one vmapped training and scores ``x_eval``.

  Point p equals ``qsg_jax.fit(x_labeled, y_labeled, x_unlabeled, key=key, config=config,
  **params[p])`` to float32 rounding: the same engine config, initial state, samples and
  features ("auto" resolves to each point's own step, as ``fit`` does).

  Args:
    x_labeled: [n_l, d]; y_labeled: [n_l] int 0..k-1; x_unlabeled: [n_u, d] or None.
    x_eval: [n_e, d] points to score.
    grid: dict of value lists over some of lam, sigma, gamma, step_size (numbers or "auto"),
      split_lam (numbers, or None throughout); their product is the grid, in C order.
    key: PRNG key or int seed (the same for every point).
    num_classes: k; default max(y_labeled) + 1.
    config: the other hyper-parameters (``FitConfig``); **hyperparams override its fields.
    divergence_threshold, cache_unlabeled: as ``qsg_jax.fit``.

  Returns:
    Dict over the P grid points: "params" [P] dicts, "scores" [P, n_e] NumPy float32 (split_lam:
    [P, n_e, k-1]; NaN where diverged), "eta0" [P], "diverged" [P] bool, "messages" [P] (the
    ``DivergenceError`` text or None), "max_abs_score" [P] (peak max |f| on the labeled points).
  """
  config = (config or FitConfig()).replace(**hyperparams)
  if config.solver != "dsg":
    raise ValueError(f"fit_over_grid vmaps DSG trainings (the papers' Algorithm 1); received "
                     f"solver={config.solver!r}. For the direct solver call qsg_jax.fit(..., "
                     "solver='direct') per grid point (each is one solve), or pass solver='dsg'.")
  if not isinstance(grid, dict) or not grid or not set(grid) <= set(TRACED):
    raise ValueError(f"grid must be a non-empty dict of value lists over {list(TRACED)} (the "
                     f"traced hyper-parameters); received {grid!r:.100}.")
  grid = {name: _value_list(name, values) for name, values in grid.items()}
  params = [dict(zip(grid, values)) for values in itertools.product(*grid.values())]
  configs = [config.replace(**p) for p in params]
  if len({c.split_lam is None for c in configs}) > 1 or any(
      callable(v) for v in grid.get("step_size", ())):
    raise ValueError("split_lam must be None at every grid point or at none, and a schedule "
                     "callable cannot vary over the grid: run such settings separately.")
  key = validation.check_key(key)
  inputs = _fit.checked_inputs(x_labeled, y_labeled, x_unlabeled,
                               max(c.sigma for c in configs), num_classes)
  divergence_threshold = validation.check_positive("divergence_threshold", divergence_threshold)
  x_eval = validation.check_points("x_eval", x_eval, dim=inputs.x_labeled.shape[1],
                                  columns=validation.column_names(x_labeled))
  validation.check_phase_range("x_eval", x_eval, max(c.sigma for c in configs))
  hyper = jax.tree.map(lambda *a: jnp.stack(a),
                       *[_fit.hyperparams_of(inputs, c, key) for c in configs])
  eng = _fit.engine_config(inputs, configs[0], cache_unlabeled=cache_unlabeled,
                           num_runs=len(configs))
  train = np.tile(np.arange(inputs.x_labeled.shape[0], dtype=np.int32), (len(configs), 1))
  scores, metrics_ = _fit_over_grid(key, *map(jnp.asarray, inputs[:3]), train,
                                    jnp.asarray(x_eval), hyper, eng)
  scores, metrics_ = np.array(scores), jax.device_get(metrics_)
  messages = [None] * len(configs)
  for p in range(len(configs)):
    try:
      _fit.check_divergence({name: v[p] for name, v in metrics_.items()}, divergence_threshold)
      if not np.all(np.isfinite(scores[p])):
        raise DivergenceError("non-finite scores on the evaluation points.")
    except DivergenceError as e:
      messages[p], scores[p] = str(e), np.nan
  return {"params": params, "scores": scores, "eta0": np.asarray(metrics_["eta"][:, 0]),
          "diverged": np.array([m is not None for m in messages]), "messages": messages,
          "max_abs_score": np.nanmax(np.asarray(metrics_["max_abs_score"], np.float64), axis=1)}
