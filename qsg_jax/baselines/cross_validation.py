"""k-fold cross-validation of the baselines' hyper-parameters (the papers' protocol, Sec. 6.1 / 5).

The papers pick lam and sigma from 2^-3..2^3 and gamma from 0..1 in steps of 0.1 (PNU-AUC: -1..1)
by 5-fold cross-validation (``folds.paper_grid(method)``; ``quick_grid`` is a small grid for smoke
runs). Folds split the labeled points, stratified by class (``qsg_jax.folds``, shared with QSG);
every fold trains on its other labeled points plus all the unlabeled points and is scored by the
AUC of each split on its held-out labeled points (``metrics.split_aucs``).

For the exact kernel methods the work is batched in JAX: for each sigma the kernel matrix of all
training points is computed once, and the (fold, lam, gamma) tasks that share it are solved in
one jitted call, vmapped (accelerators) or mapped in sequence (CPU, see ``cross_validate``).
A held-out point stays among the expansion points with zero weight in every risk term, which
leaves the solution unchanged (its coefficient is exactly 0, see ``pairwise_risk``), so every task
has the same shapes. SVOREX (a C library) is looped over in Python.

Multi-class models are k-1 independent binary models, so by default (``per_split=True``) each
split gets the grid point that is best for its own AUC, as the ordinal paper searches gamma per
subproblem; ``per_split=False`` picks one setting for all splits by the mean AUC.
"""

import functools
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import folds as folds_lib
from qsg_jax import memory
from qsg_jax import metrics
from qsg_jax.engine import kernels
from qsg_jax.folds import paper_grid  # pylint: disable=unused-import  (baselines.paper_grid)
from qsg_jax.folds import quick_grid
from qsg_jax.baselines import _spectral_cv
from qsg_jax.baselines import kernel_expansion
from qsg_jax.baselines import multiclass
from qsg_jax.baselines import pairwise_risk
from qsg_jax.baselines import pnu_auc
from qsg_jax.baselines import samult
from qsg_jax.baselines import svorex

FIT_FUNCTIONS = {
    "samult": samult.fit_samult,
    "pnu_auc": pnu_auc.fit_pnu_auc,
    "m_samult": multiclass.fit_m_samult,
    "m_pnu_auc": multiclass.fit_m_pnu_auc,
    "svorex": svorex.fit_svorex,
}


class _KernelMethod(NamedTuple):
  coefficients: object     # (gamma, prior) -> (coef [3, 3], const)
  unlabeled_unused_at: float  # gamma at which unlabeled data get no weight
  binary: bool             # labels must be {0, 1}


_KERNEL_METHODS = {
    "samult": _KernelMethod(samult.samult_coefficients, 1.0, True),
    "pnu_auc": _KernelMethod(pnu_auc.pnu_coefficients, 0.0, True),
    "m_samult": _KernelMethod(samult.samult_coefficients, 1.0, False),
    "m_pnu_auc": _KernelMethod(pnu_auc.pnu_coefficients, 0.0, False),
}


def _check_method(method):
  if not isinstance(method, str) or method not in FIT_FUNCTIONS:
    raise ValueError(f"unknown method {method!r:.60}; expected one of {sorted(FIT_FUNCTIONS)}.")


def _over_leading_axis(fn, args, mode):
  """fn applied to slices of ``args`` along axis 0: vectorized ("vmap") or in sequence ("map")."""
  if mode == "vmap":
    return jax.vmap(fn)(*args)
  return jax.lax.map(lambda a: fn(*a), args)


@functools.partial(jax.jit, static_argnames=("coefficient_fn", "num_classes", "mode"))
def _validation_aucs(kernel, labels, train, valid, lam, gamma, coefficient_fn, num_classes,
                     mode):
  """[T, k-1] held-out AUCs of T (fold, lam, gamma) tasks sharing one kernel matrix.

  Args:
    kernel: [n, n] kernel of the labeled (first n_l) and unlabeled points.
    labels: [n_l] int labels.
    train: [T, n_l] bool training-fold masks.
    valid: [T, n_l] bool held-out masks.
    lam: [T] lambdas.
    gamma: [T] trade-offs.
    coefficient_fn: the method's (gamma, prior) -> (coef, const), static.
    num_classes: k, static.
    mode: "vmap" (batched LU, for accelerators) or "map" (one LU after the other), static.
  """
  n, n_l = kernel.shape[0], labels.shape[0]
  unlabeled = jnp.arange(n) >= n_l
  pad = jnp.zeros(n - n_l, bool)

  def task(train_t, valid_t, lam_t, gamma_t):
    def split(j):   # f of split j on the labeled points, NaN where the solve failed
      pos, neg = train_t & (labels > j), train_t & (labels <= j)
      group_w = pairwise_risk.group_weights(jnp.concatenate([pos, pad]),
                                            jnp.concatenate([neg, pad]), unlabeled, kernel.dtype)
      prior = jnp.sum(pos) / jnp.sum(train_t)
      coef, _ = coefficient_fn(gamma_t, prior.astype(kernel.dtype))
      alpha = pairwise_risk.solve_coefficients(kernel, group_w, coef, lam_t)
      return jnp.where(jnp.all(jnp.isfinite(alpha)), kernel[:n_l] @ alpha, jnp.nan)
    f_l = _over_leading_axis(split, (jnp.arange(num_classes - 1),), mode)    # [k-1, n_l]
    return metrics.split_aucs(f_l.T, labels, num_classes, valid_t)

  return _over_leading_axis(task, (train, valid, lam, gamma), mode)


_kernel_matrix = jax.jit(kernels.gaussian_kernel)


def _host_device():
  """JAX's CPU device, or None (the default device) when JAX_PLATFORMS leaves the CPU out."""
  try:
    return jax.devices("cpu")[0]
  except RuntimeError:
    return None


def _kernel_fold_scores(method, grid, x_l, y_l, x_u, folds, num_folds, k, dtype, batch_bytes,
                        memory_fraction, mode):
  """[n_lam, n_sigma, n_gamma, F, k-1] validation AUCs of a kernel method."""
  spec = _KERNEL_METHODS[method]
  centers = jnp.asarray(np.concatenate([x_l, x_u]), dtype)
  n, itemsize = centers.shape[0], jnp.dtype(dtype).itemsize
  tasks = list(itertools.product(range(num_folds), range(grid["lam"].size),
                                 range(grid["gamma"].size)))
  # n x n arrays of one solve: system, LU factors, layout copy.
  per_solve = (kernel_expansion.MATRICES_PER_SOLVE - 1) * n * n * itemsize
  if mode == "vmap":   # every split of every task of a batch at once
    batch = int(max(1, min(len(tasks), batch_bytes // (per_solve * (k - 1)))))
    working = batch * (k - 1) * per_solve
  else:                # one solve at a time: a batch is all the tasks of one sigma
    batch, working = len(tasks), per_solve
  memory.check_allocation(
      2 * n * n * itemsize + working,
      what=(f"cross-validating {method} with n = {n} training points ({x_l.shape[0]} labeled + "
            f"{x_u.shape[0]} unlabeled), mode {mode!r}, batches of {batch} tasks,"),
      fix=("Cross-validate on a random subset of the unlabeled points (memory grows as n^2), "
           "or use mode='map' or a lower batch_bytes."),
      fraction=memory_fraction)
  padded = tasks + [tasks[-1]] * (-len(tasks) % batch)
  fold_of = np.array([t[0] for t in padded])
  train = jnp.asarray(folds[None, :] != fold_of[:, None])
  valid = jnp.asarray(folds[None, :] == fold_of[:, None])
  lam = jnp.asarray(grid["lam"][[t[1] for t in padded]], dtype)
  gamma = jnp.asarray(grid["gamma"][[t[2] for t in padded]], dtype)
  labels = jnp.asarray(y_l)
  out = np.empty((grid["sigma"].size, len(padded), k - 1))
  for s, sigma in enumerate(grid["sigma"]):
    kernel = _kernel_matrix(centers, centers, jnp.asarray(sigma, dtype))
    for start in range(0, len(padded), batch):
      part = slice(start, start + batch)
      out[s, part] = np.asarray(_validation_aucs(kernel, labels, train[part], valid[part],
                                                 lam[part], gamma[part], spec.coefficients, k,
                                                 mode))
    del kernel
  out = out[:, :len(tasks)].reshape(grid["sigma"].size, num_folds, grid["lam"].size,
                                    grid["gamma"].size, k - 1)
  return out.transpose(2, 0, 3, 1, 4)


def _svorex_fold_scores(grid, x_l, y_l, folds, num_folds, k):
  """[n_c, n_sigma, F, k-1] validation AUCs of SVOREX (one shared ranking per model)."""
  out = np.empty((grid["c"].size, grid["sigma"].size, num_folds, k - 1))
  for (i, c), (s, sigma), f in itertools.product(enumerate(grid["c"]),
                                                 enumerate(grid["sigma"]), range(num_folds)):
    model = svorex.fit_svorex(x_l[folds != f], y_l[folds != f], c=c, sigma=sigma, num_classes=k)
    scores = svorex.decision_function(model, x_l[folds == f])
    out[i, s, f] = metrics.split_aucs(scores, y_l[folds == f], k)
  return out


def cross_validate(method, x_labeled, y_labeled, x_unlabeled=None, *, grid=None, quick=False,
                   num_folds=5, seed=0, num_classes=None, per_split=True, dtype=jnp.float32,
                   mode=None, batch_bytes=2**30, memory_fraction=0.8):
  """Picks a baseline's hyper-parameters by stratified k-fold cross-validation.

  Args:
    method: "samult", "pnu_auc", "m_samult", "m_pnu_auc" or "svorex".
    x_labeled: [n_l, d] labeled points.
    y_labeled: [n_l] int labels 0..k-1 ({0, 1} for the binary methods).
    x_unlabeled: [n_u, d] unlabeled points used by every fold (None: only the supervised end
      of the gamma range is allowed). Exact methods cost O(n^3) per grid point and fold: pass a
      subsample of a few hundred to a few thousand points.
    grid: dict of 1-D value lists, keys as in ``paper_grid(method)``; default the paper grid.
    quick: use ``quick_grid(method)`` when ``grid`` is None.
    num_folds: F, a whole number >= 2 (the papers use 5); copies of a labeled row share a fold.
    seed: whole number >= 0 seeding the fold assignment; the same seed gives the same folds and
      scores (None is refused: the result must repeat).
    num_classes: k; default max(y_labeled) + 1.
    per_split: multi-class kernel methods only: choose each split's setting by its own AUC.
    dtype: float32 (default) or float64 (needs jax_enable_x64) for the kernel methods' LU
      paths; SVOREX and mode "spectral" compute in float64 whatever ``dtype``.
    mode: how the (fold, lam, gamma) tasks sharing a kernel matrix are solved: "vmap" (batched
      LU in one jitted call; default on accelerators), "map" (one LU after the other, memory of
      one solve; default on CPU, where XLA's batched LU ran 2-10x slower per matrix than its
      unbatched LAPACK call at n = 700), or "spectral" (``_spectral_cv``: one float64
      eigendecomposition of the kernel per sigma, then an (n_l + 3) solve per task; the same
      scores, 10-50x faster per sigma on the papers' grid on 2 CPU cores; ``dtype`` is then
      ignored).
    batch_bytes: memory budget of one vmapped batch of tasks (mode "vmap").
    memory_fraction: share of free memory the kernel and a batch may take, in (0, 1].

  Returns:
    ``CVResult``; ``FIT_FUNCTIONS[method](x_l, y_l, x_u, **result.best)`` fits the chosen model.

  Raises:
    TypeError, ValueError: a bad argument (num_folds or batch_bytes not a whole number, seed
      None or negative, ...) or bad data, named in the message, before any kernel is computed.
  """
  _check_method(method)
  spec = _KERNEL_METHODS.get(method)
  # Arguments first (before any data work): whole numbers, never truncated; a fixed seed.
  num_folds = folds_lib.check_num_folds(num_folds)
  seed = folds_lib.check_seed(seed)
  quick = validation.check_bool("quick", quick, allow_none=False)
  per_split = validation.check_bool("per_split", per_split, allow_none=False)
  batch_bytes = validation.check_count("batch_bytes", batch_bytes, maximum=None)
  memory_fraction = kernel_expansion.check_memory_fraction(memory_fraction)
  if spec is not None:
    dtype = kernel_expansion.check_dtype(dtype)
    mode = mode or ("map" if jax.default_backend() == "cpu" else "vmap")
    if mode not in ("map", "vmap", "spectral"):
      raise ValueError(f"mode must be 'map', 'vmap', 'spectral' or None (automatic); received "
                       f"{mode!r:.60}.")
  # SVOREX and the spectral path compute in float64 NumPy: the points keep their precision.
  points_dtype = dtype if spec is not None and mode != "spectral" else np.float64
  x_l = validation.check_points("x_labeled", x_labeled, dtype=points_dtype)
  binary = spec is not None and spec.binary
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], 2 if binary else num_classes)
  validation.refuse_one_point("x_labeled", x_l)   # before the folds, which count distinct rows
  grid = folds_lib.check_grid(quick_grid(method) if grid is None and quick else
                              paper_grid(method) if grid is None else grid, method)
  folds = folds_lib.stratified_folds(y_l, num_folds, seed, points=x_l)
  if spec is None:
    fold_scores = _svorex_fold_scores(grid, x_l, y_l, folds, num_folds, k)
  else:
    if x_unlabeled is None or np.asarray(x_unlabeled).size == 0:
      if np.any(grid["gamma"] != spec.unlabeled_unused_at):
        raise ValueError(f"no unlabeled data but the gamma grid {grid['gamma'].tolist()} gives "
                         f"weight to unlabeled pairs: pass x_unlabeled or use gamma="
                         f"[{spec.unlabeled_unused_at}].")
      x_u = np.zeros((0, x_l.shape[1]), points_dtype)
    else:
      x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1],
                                    dtype=points_dtype, columns=validation.column_names(x_labeled))
    # Every grid sigma must give a kernel the working precision resolves (as the fits check).
    validation.check_kernel_scale("x_labeled and x_unlabeled", np.concatenate([x_l, x_u]),
                                  grid["sigma"], points_dtype)
    if mode == "spectral":
      n = x_l.shape[0] + x_u.shape[0]
      memory.check_allocation(   # float64 kernel, eigenvectors and eigh's workspace
          3 * 8 * n * n, what=f"cross-validating {method} (mode 'spectral') with n = {n} points",
          fix="Cross-validate on a random subset of the unlabeled points.",
          fraction=memory_fraction, device=_host_device())   # NumPy works on the host
      fold_scores = _spectral_cv.fold_scores(spec.coefficients, grid, x_l, y_l, x_u, folds,
                                             num_folds, k)
    else:
      fold_scores = _kernel_fold_scores(method, grid, x_l, y_l, x_u, folds, num_folds, k,
                                        dtype, batch_bytes, memory_fraction, mode)
  scores = folds_lib.nanmean(fold_scores, axis=-2)                       # [*grid, k-1]
  choose_per_split = per_split and spec is not None and not spec.binary
  targets = [scores[..., j] for j in range(k - 1)] if choose_per_split else [
      folds_lib.nanmean(scores, axis=-1)]
  chosen = [folds_lib.best_point(target, fix=(
      f"every grid point gave a NaN validation AUC for {method}: the linear systems were "
      "singular (increase the lam values) or held-out folds lack one side of a split (use "
      "fewer folds or more labeled points per class).")) for target in targets]
  best_score = float(np.mean([target[index] for target, index in zip(targets, chosen)]))
  best = {}
  for axis, name in enumerate(grid):
    values = [float(grid[name][index[axis]]) for index in chosen]
    best[name] = np.array(values) if choose_per_split else values[0]
  return folds_lib.CVResult(best, best_score, scores, fold_scores, grid)
