"""Fast cross-validation of the squared loss: tasks grouped by sigma share every feature.

``qsg_jax.model_selection`` runs one training per (grid point, fold) task. All tasks use the same
PRNG key, so tasks with the same sigma draw the same unlabeled mini-batches and regenerate the
same frequencies Omega_i (they depend on sigma, not on lam, gamma, the step or the fold); with
the whole labeled set used every step (``labeled_batch_size=None``) a fold only changes which
labeled points carry weight. So per step this module computes the features of every labeled and
unlabeled point once per sigma and batches only the per-task part over the tasks of the group.

The per-task part is cheap for the squared loss l(u, v) = (1 - u + v)^2, whose derivatives are
affine in the scores. With pos/neg weights P, N of a subproblem (each summing to 1), Pf = P . f_l,
Nf = N . f_l and mu = mean of f_u over the unlabeled mini-batch, ``risk.subproblem_score_grads``
collapses from O(S^2 + S B) to O(S + B):

    dR/df_a = -2 P_a (1 - f_a + gamma Nf + (1 - gamma) mu)
              + 2 N_a (1 + f_a - gamma Pf - (1 - gamma) mu)
    dR/df_u = (1 - gamma) (4 f_u - 2 Pf - 2 Nf) / B

(sum_b N_b l1'(f_a, f_b) = -2 (1 - f_a + Nf) since sum_b N_b = 1; likewise for l2'..l6').
Every labeled point's score is carried (held-out ones have zero weight), so a fold's held-out
scores are read off the state at the end, and every unlabeled score is carried (as the engine's
``cache_unlabeled`` mode does): no prediction pass. Results equal ``qsg_jax.fit`` on the fold
with the same key to float32 rounding (tests/test_model_selection_grouped.py).
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import metrics
from qsg_jax.engine import features
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine.step import inverse_time_schedule


def squared_score_grads(f_l, f_u, pos_w, neg_w, gamma):
  """``risk.score_grads`` of the squared loss in O((k-1)(S + B)) (module docstring).

  Args:
    f_l: [S] labeled slot scores.
    f_u: [B] unlabeled mini-batch scores.
    pos_w: [k-1, S] weights P_j (rows sum to 1; zero on slots outside the training set).
    neg_w: [k-1, S] weights N_j.
    gamma: [k-1].

  Returns:
    (g_l [S], g_u [B]), equal to ``risk.score_grads("squared", ...)``.

  Example:
    >>> f_l, f_u = jnp.array([0.3, -0.2, 0.5]), jnp.array([0.1, 0.4])
    >>> p, n, g = jnp.array([[0., 0., 1.]]), jnp.array([[.5, .5, 0.]]), jnp.array([.3])
    >>> fast = squared_score_grads(f_l, f_u, p, n, g)
    >>> slow = risk.score_grads("squared", f_l, f_u, p, n, g)
    >>> bool(jnp.allclose(fast[0], slow[0]) & jnp.allclose(fast[1], slow[1]))
    True
  """
  pf, nf = pos_w @ f_l, neg_w @ f_l                                    # [k-1]
  mu = jnp.mean(f_u)
  seen_by_pos = gamma * nf + (1.0 - gamma) * mu                        # [k-1]
  seen_by_neg = gamma * pf + (1.0 - gamma) * mu
  g_l = jnp.mean(-2.0 * pos_w * (1.0 - f_l[None, :] + seen_by_pos[:, None])
                 + 2.0 * neg_w * (1.0 + f_l[None, :] - seen_by_neg[:, None]), axis=0)
  g_u = jnp.mean((1.0 - gamma)[:, None] * (4.0 * f_u[None, :] - 2.0 * (pf + nf)[:, None]),
                 axis=0) / f_u.shape[0]
  return g_l, g_u


class Tasks(NamedTuple):
  """A batch of CV tasks of one sigma (leading axis t; NumPy or jax arrays)."""
  lam: np.ndarray       # [t] float32.
  gamma: np.ndarray     # [t, k-1] float32.
  eta0: np.ndarray      # [t] float32, initial step of eta0 / (1 + eta0 lam t).
  pos_w: np.ndarray     # [t, k-1, n_l] float32, P_j of the task's training fold (0 elsewhere).
  neg_w: np.ndarray     # [t, k-1, n_l] float32.
  train: np.ndarray     # [t, n_l] bool, the fold's training points.
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


@functools.partial(jax.jit, static_argnames=("num_steps", "num_frequencies",
                                             "unlabeled_batch_size", "divergence_threshold"))
def group_aucs(key, x_labeled, y_labeled, x_unlabeled, sigma, tasks: Tasks, *, num_steps,
               num_frequencies, unlabeled_batch_size, divergence_threshold):
  """Held-out AUCs of a batch of tasks sharing sigma, trained together step by step.

  Args:
    key: PRNG key shared by every task (as ``qsg_jax.fit(key=key)``).
    x_labeled: [n_l, d] all labeled points.
    y_labeled: [n_l] int32 labels.
    x_unlabeled: [n_u, d].
    sigma: scalar kernel parameter of the group.
    tasks: ``Tasks`` with leading axis t.
    num_steps, num_frequencies, unlabeled_batch_size: T, m, B (static).
    divergence_threshold: max |f| on the training points that counts as diverged (static).

  Returns:
    (aucs [t, k-1] with NaN where training diverged, diverged [t] bool).
  """
  k = tasks.gamma.shape[1] + 1
  n_l, d = x_labeled.shape
  n_u = x_unlabeled.shape[0]
  feature_key, sample_key = jax.random.split(key)
  index = sampling.class_index(y_labeled, k)        # unused by the draw with labeled_batch=None

  def task_step(f_l, f_u, peak, task, phi_l, phi_u, rows, i):
    g_l, g_u = squared_score_grads(f_l, f_u[rows], task.pos_w, task.neg_w, task.gamma)
    grad = g_l @ phi_l + g_u @ phi_u[rows]                        # Eq. (13) without -eta
    eta = inverse_time_schedule(task.eta0, task.lam)(i.astype(jnp.float32))
    alpha, decay = -eta * grad, 1.0 - eta * task.lam              # Eqs. (13)-(14)
    f_l = decay * f_l + phi_l @ alpha
    f_u = decay * f_u + phi_u @ alpha
    peak = jnp.maximum(peak, jnp.max(jnp.where(task.train, jnp.abs(f_l), 0.0)))
    return f_l, f_u, jnp.where(jnp.isfinite(f_l).all(), peak, jnp.inf)

  def step(carry, i):
    omega = features.sample_frequencies(feature_key, i, num_frequencies, d, sigma)
    phi_l = features.fourier_features(x_labeled, omega)             # [n_l, 2m], once per group
    phi_u = features.fourier_features(x_unlabeled, omega)           # [n_u, 2m]
    rows = sampling.sample_step(sample_key, i, index, None, unlabeled_batch_size, n_u).unlabeled
    carry = jax.vmap(task_step, in_axes=(0, 0, 0, 0, None, None, None, None))(
        *carry, tasks, phi_l, phi_u, rows, i)
    return carry, None

  t = tasks.lam.shape[0]
  carry = (jnp.zeros((t, n_l), jnp.float32), jnp.zeros((t, n_u), jnp.float32),
           jnp.zeros(t, jnp.float32))
  (f_l, _, peak), _ = jax.lax.scan(step, carry, jnp.arange(num_steps, dtype=jnp.int32))
  ok = (peak <= divergence_threshold) & jnp.isfinite(f_l).all(axis=1)

  def split_aucs(scores, valid):
    return jax.vmap(lambda j: metrics.masked_auc(scores, valid & (y_labeled > j),
                                                 valid & (y_labeled <= j)))(jnp.arange(k - 1))

  aucs = jax.vmap(split_aucs)(f_l, tasks.valid)
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
  is_train = np.zeros(valid.shape, bool)
  for f, idx in enumerate(train):
    is_train[f, idx] = True
  arrays = tuple(map(jnp.asarray, (x_labeled, y_labeled.astype(np.int32), x_unlabeled)))
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
                    eta0[padded].astype(np.float32), pos_w[f], neg_w[f], is_train[f], valid[f])
      out, bad = group_aucs(key, *arrays, jnp.float32(s), jax.tree.map(jnp.asarray, batch),
                            num_steps=num_steps, num_frequencies=num_frequencies,
                            unlabeled_batch_size=unlabeled_batch_size,
                            divergence_threshold=float(divergence_threshold))
      aucs[part], diverged[part] = np.asarray(out)[:part.size], np.asarray(bad)[:part.size]
      done += part.size
      if progress is not None:
        progress({"tasks_done": done, "num_tasks": sigma.shape[0]})
  return aucs, diverged
