"""Cross-validation tasks of one sigma trained together: each step's features computed once.

``qsg_jax.model_selection`` runs one training per (grid point, fold) task. All tasks use the same
PRNG key, so tasks with the same sigma draw the same unlabeled mini-batches and regenerate the
same frequencies Omega_i (they depend on sigma, not on lam, gamma, the step or the fold); with
the whole labeled set used every step (``labeled_batch_size=None``) a fold only changes which
labeled points carry weight. So a group is ``jax.vmap`` of the engine's own training
(``loop.train_steps``, the one DSG step of ``engine.step``) over the tasks' lam, gamma, eta0 and
fold weights: the features and samples depend only on unbatched arguments (key, step, sigma,
points), so they are computed once per group, and only the per-task part (score gradients, the
update, the score caches) is batched. For the squared loss that part is O((n_l + n_u) m) per
step, with the closed-form score gradients of ``risk.squared_subproblem_score_grads``.

Every labeled point's score is carried (a fold's held-out points have weight 0: they do not
enter the risk, but their scores stay current), so a fold's held-out scores are read off the
state at the end; every unlabeled score is carried (``cache_unlabeled``): no prediction pass.
Results equal ``qsg_jax.fit`` on the fold with the same key to float rounding
(tests/test_model_selection_grouped.py). Rows are padded to size buckets as ``fit`` pads them
(``loop.bucket_data``), so a data set of another size in the same bucket compiles nothing new.
"""

import functools
from typing import NamedTuple
import warnings

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import errors
from qsg_jax import metrics
from qsg_jax.engine import loop
from qsg_jax.engine import risk
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import TrainData
from qsg_jax.engine.types import make_config


class Tasks(NamedTuple):
  """A batch of CV tasks of one sigma (leading axis t; NumPy or jax arrays)."""
  lam: np.ndarray       # [t] float32.
  gamma: np.ndarray     # [t, k-1] float32.
  eta0: np.ndarray      # [t] float32, initial step of eta0 / (1 + eta0 lam t).
  pos_w: np.ndarray     # [t, k-1, n_l] float32, P_j of the task's training fold (0 elsewhere).
  neg_w: np.ndarray     # [t, k-1, n_l] float32.
  valid: np.ndarray     # [t, n_l] bool, its held-out points.


def fold_weights(train, y_labeled, num_classes):
  """P_j, N_j of each fold's training set scattered onto all labeled points.

  Args:
    train: [F, n_train] int training indices (``cv.fold_training_sets``).
    y_labeled: [n_l] int labels.
    num_classes: k.

  Returns:
    (pos_w, neg_w), each [F, k-1, n_l] float32 (``risk.subproblem_weights`` of the training
    slots, zero on the held-out points).
  """
  n_l = y_labeled.shape[0]
  pos = np.zeros((train.shape[0], num_classes - 1, n_l), np.float32)
  neg = np.zeros_like(pos)
  for f, idx in enumerate(train):
    y = jnp.asarray(y_labeled[idx], jnp.int32)
    p, n = risk.subproblem_weights(y, jnp.bincount(y, length=num_classes))
    pos[f][:, idx], neg[f][:, idx] = np.asarray(p), np.asarray(n)
  return pos, neg


@functools.partial(jax.jit, static_argnames=("config", "divergence_threshold"))
def group_aucs(key, data: TrainData, num_unlabeled, sigma, tasks: Tasks, *, config,
               divergence_threshold):
  """Held-out AUCs of a batch of tasks sharing sigma, trained together step by step.

  Args:
    key: PRNG key shared by every task (as ``qsg_jax.fit(key=key)``).
    data: ``TrainData`` with every labeled point (each task weighs its fold's training points),
      rows padded as ``loop.bucket_data`` pads them (padded labeled rows: weight 0 and never
      held out in every task; unlabeled rows past ``num_unlabeled``: never sampled).
    num_unlabeled: int32 scalar n_u (traced: one compilation per bucket).
    sigma: scalar kernel parameter of the group.
    tasks: ``Tasks`` with leading axis t.
    config: static ``EngineConfig`` (``labeled_batch_size=None``, ``cache_unlabeled``).
    divergence_threshold: max |f| on the training points that counts as diverged (static).

  Returns:
    (aucs [t, k-1] with NaN where training diverged, diverged [t] bool).
  """
  base = loop.init(key, data, config)._replace(num_unlabeled=num_unlabeled)

  def train(hyper, pos_w, neg_w):
    state, report = loop.train_steps(base._replace(pos_w=pos_w, neg_w=neg_w), data, hyper,
                                     config, config.num_steps)
    return state.f_labeled, jnp.max(report["max_abs_score"])   # |f| of weighted points only

  hyper = Hyperparams(sigma, tasks.lam, tasks.gamma, tasks.eta0)
  f_l, peak = jax.vmap(train, in_axes=(Hyperparams(None, 0, 0, 0), 0, 0))(
      hyper, tasks.pos_w, tasks.neg_w)
  ok = (peak <= divergence_threshold) & jnp.isfinite(f_l).all(axis=1)
  aucs = jax.vmap(lambda f, v: metrics.split_aucs(f, data.y_labeled, config.num_classes, v))(
      f_l, tasks.valid)
  return jnp.where(ok[:, None], aucs, jnp.nan), ~ok


def task_aucs(key, x_labeled, y_labeled, x_unlabeled, train, valid, sigma, lam, gamma, eta0,
              fold, *, num_steps, num_frequencies, unlabeled_batch_size, divergence_threshold,
              tasks_per_batch, progress=None):
  """Held-out AUCs of arbitrary tasks: grouped by sigma, each group in batches of equal size.

  Args:
    key: PRNG key shared by every task.
    x_labeled, y_labeled, x_unlabeled: NumPy arrays [n_l, d], [n_l], [n_u, d].
    train: [F, n_train] int training indices per fold; valid: [F, n_l] bool held-out masks.
    sigma, lam, eta0: [t] per task; gamma: [t, k-1]; fold: [t] int fold of each task.
    num_steps, num_frequencies, unlabeled_batch_size, divergence_threshold: as ``group_aucs``.
    tasks_per_batch: tasks trained together (a batch is padded to this size: one compilation).
    progress: optional callable(dict) after each batch, with "tasks_done", "num_tasks".

  Returns:
    (aucs [t, k-1] NumPy, NaN where diverged; diverged [t] bool).
  """
  k = gamma.shape[1] + 1
  pos_w, neg_w = fold_weights(train, y_labeled, k)
  # Rows padded to size buckets (``loop.bucket_data``): a new data size reuses a compilation.
  data, n_l, n_u = loop.bucket_data(TrainData(x_labeled, y_labeled.astype(np.int32),
                                              x_unlabeled))
  data = TrainData(*map(jnp.asarray, data))
  grow = lambda a: np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, data.x_labeled.shape[0] - n_l)])
  pos_w, neg_w, valid = grow(pos_w), grow(neg_w), grow(valid)
  with warnings.catch_warnings():   # chunks only batch the sampling here: any size is fast
    warnings.simplefilter("ignore", errors.SlowConfigWarning)
    config = make_config(k, num_steps, num_frequencies=num_frequencies, labeled_batch_size=None,
                         unlabeled_batch_size=unlabeled_batch_size, loss="squared",
                         cache_unlabeled=True)
  aucs = np.full((sigma.shape[0], k - 1), np.nan)
  diverged = np.zeros(sigma.shape[0], bool)
  done = 0
  # Batches are padded to one size (one compilation), no larger than the largest group.
  tasks_per_batch = min(tasks_per_batch, int(np.unique(sigma, return_counts=True)[1].max()))
  for s in np.unique(sigma):
    members = np.nonzero(sigma == s)[0]
    for start in range(0, members.size, tasks_per_batch):
      part = members[start:start + tasks_per_batch]
      padded = np.concatenate([part, np.repeat(part[-1:], tasks_per_batch - part.size)])
      f = fold[padded]
      batch = Tasks(lam[padded].astype(np.float32), gamma[padded].astype(np.float32),
                    eta0[padded].astype(np.float32), pos_w[f], neg_w[f], valid[f])
      out, bad = group_aucs(key, data, jnp.int32(n_u), jnp.float32(s),
                            jax.tree.map(jnp.asarray, batch),
                            config=config, divergence_threshold=float(divergence_threshold))
      aucs[part], diverged[part] = np.asarray(out)[:part.size], np.asarray(bad)[:part.size]
      done += part.size
      if progress is not None:
        progress({"tasks_done": done, "num_tasks": sigma.shape[0]})
  return aucs, diverged
