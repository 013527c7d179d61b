"""Cross-validation of the direct solver: the papers' 539-point x 5-fold grid from shared moments.

Every (lam, sigma, gamma, fold) task of ``qsg_jax.model_selection`` minimizes the same objective
on the fold's training labels; for the squared loss its solution depends on the data only
through group moments (``system.py``), so the grid shares nearly all the work:

* per sigma: the feature map, one pass over the unlabeled points (``moments.group_moments``),
  and the features of every labeled point;
* per fold: the class moments of its training points, as the totals minus the points it holds
  out (its validation fold and any point ``fold_training_sets`` leaves out to equalize sizes);
* per (fold, gamma): Q(gamma) = (1 - gamma) Q(0) + gamma Q(1) (Q is affine in a shared gamma),
  then one float64 tridiagonalization shared by every lam (``_solutions``), the held-out
  scores, and the AUC of each split on the held-out points.

Fold f's solution equals ``direct.fit(x_l[train_f], y_l[train_f], x_u, ...)`` with the same
feature map (for Nystrom pass the CV's ``landmarks``): tests compare them. An ill-posed task
(lam = 0 with a singular Q) scores NaN and is never chosen; the best point has the highest mean
over folds and splits (``folds.best_point``). Folds, grids and their checks, the AUC and the
result type are the package's shared ones (``qsg_jax.folds``, ``metrics.exact_auc``);
``qsg_jax.model_selection.cross_validate(..., solver="direct")`` runs this CV behind the same
switch as ``qsg_jax.fit``.
"""

from typing import Optional

import jax
import numpy as np
import scipy.linalg

from qsg_jax import _validation as validation
from qsg_jax import distributed
from qsg_jax import folds as folds_lib
from qsg_jax import metrics
from qsg_jax import numerics
from qsg_jax.direct import feature_maps
from qsg_jax.direct import fitting
from qsg_jax.direct import moments as moments_lib
from qsg_jax.direct import system as solve_lib

GRID_KEYS = tuple(folds_lib.GRID_AXES["direct"])   # ("lam", "sigma", "gamma")
# p of the cross-validation's models: its 2695 tasks (cubic in p) cost 8x less at p = 256
# than at the fit's 512, and at the defaults a p = 256 Nystrom model's AUC was within 0.0035 of
# p = 512's on every measured dataset but bank_marketing (module docstring of
# ``qsg_jax.direct``): enough to rank the grid. num_features=512 cross-validates the fit's own
# models (about 5x slower).
CV_NUM_FEATURES = 256


def paper_grid() -> dict:
  """lam and sigma in 2^-3..2^3, gamma in 0..1 step 0.1 (7 x 7 x 11 = 539 points):
  ``folds.paper_grid("direct")``."""
  return folds_lib.paper_grid("direct")


def _aucs(scores, positive, negative):
  """[L, s] AUC (ties 1/2) of rows of scores [L, n] for s splits: masks [s, n] (NaN: empty)."""
  return np.stack([metrics.exact_auc(scores, pos, neg) for pos, neg in zip(positive, negative)],
                  axis=-1).reshape(scores.shape[0], positive.shape[0])


def _fold_moments(totals, phi, labels, held_out, k, unlabeled):
  """``Moments`` (classes of the fold's training points, then U) by subtracting held-out sums."""
  out = moments_lib.class_sums(phi[held_out], labels[held_out], k)
  labeled = moments_lib.from_sums(*(t - o for t, o in zip(totals, out)), unlabeled.shift)
  return moments_lib.concatenate(labeled, unlabeled)


def _solutions(matrix, vector, lams):
  """[L, p] solutions of (Q + lam/2 I) w = r for every lam (NaN rows where ill-posed).

  One Householder tridiagonalization Q = H T H^T (LAPACK ``dsytrd``, about six Choleskys' work
  at p = 256) serves every lam: each shifted system is then tridiagonal (``dptsv``, O(p)), and
  the L solutions return through H together (``dormqr``). A lam is solved this way where the
  shifted system's 2-norm reciprocal condition, from T's extreme eigenvalues (bisection), is at
  least ``system.STATISTICS_ROUNDING``, which implies that ``system.solve_system`` accepts it
  (its 1-norm estimate is at most p times lower); elsewhere ``solve_system`` itself decides (NaN
  where it refuses). So a task is NaN exactly where ``direct.fit`` would raise, and its
  solution is ``solve_system``'s to float64 rounding, at about half the cost of a Cholesky per
  lam (10 lams).
  """
  p = vector.shape[0]
  if p == 0:   # every feature constant on the data (identical points, a flat kernel): f = 0
    return np.zeros((lams.size, 0))
  out = np.full((lams.size, p), np.nan)
  tridiagonal = np.zeros(lams.size, bool)
  if p > 1 and np.all(np.isfinite(matrix)):   # else ``solve_system`` refuses every lam
    reduced, diag, off, tau, _ = scipy.linalg.lapack.dsytrd(matrix, lower=1)
    ends = [scipy.linalg.lapack.dstebz(diag, off, 3, 0.0, 0.0, i, i, 0.0, "E") for i in (1, p)]
    if all(end[0] == 1 and end[-1] == 0 for end in ends):    # bisection found each eigenvalue
      lowest, highest = (end[1][0] for end in ends)
      shifts = 0.5 * lams
      tridiagonal = lowest + shifts >= solve_lib.STATISTICS_ROUNDING * (highest + shifts)
  if np.any(tridiagonal):
    rotated = vector.copy()        # H^T r; H's reflectors act on rows 1..p-1 (``dormtr``'s form)
    rotated[1:] = scipy.linalg.lapack.dormqr("L", "T", reduced[1:, :-1], tau, rotated[1:, None],
                                             lwork=1)[0][:, 0]
    solved = []
    for i in np.flatnonzero(tridiagonal):
      _, _, x, info = scipy.linalg.lapack.dptsv(diag + shifts[i], off, rotated)
      tridiagonal[i] = info == 0     # not positive definite after all: ``solve_system`` decides
      solved += [x] if info == 0 else []
    if solved:
      solved = np.stack(solved, axis=1)                                        # [p, L']
      solved[1:] = scipy.linalg.lapack.dormqr("L", "N", reduced[1:, :-1], tau, solved[1:],
                                              lwork=solved.shape[1])[0]
      out[tridiagonal] = solved.T
  for i in np.flatnonzero(~tridiagonal):
    try:
      out[i] = solve_lib.solve_system(matrix, vector, lams[i])
    except solve_lib.IllPosedSystemError:
      pass
  return out


def cross_validate(x_labeled, y_labeled, x_unlabeled=None, *, grid: Optional[dict] = None,
                   num_folds: int = 5, seed: int = 0, num_repeats: int = 1, key=0,
                   num_classes: Optional[int] = None,
                   feature_map: str = fitting.DEFAULT_FEATURE_MAP,
                   num_features: int = CV_NUM_FEATURES,
                   num_frequencies: int = fitting.NUM_FREQUENCIES,
                   landmarks=fitting.DEFAULT_LANDMARKS,
                   chunk_rows: int = moments_lib.CHUNK_ROWS, mesh=None,
                   axis_name: str = "data") -> folds_lib.CVResult:
  """Picks lam, sigma and gamma of the direct solver by stratified k-fold CV (module docstring).

  Args:
    x_labeled: [n_l, d] labeled points; y_labeled: [n_l] int labels 0..k-1, every class with at
      least ``num_folds`` points.
    x_unlabeled: as ``direct.fit`` (array, memory map, ``ShardedUnlabeled`` with ``mesh``; an
      iterator is read once per sigma, so pass a re-iterable), or None with every gamma = 1.
    grid: dict of 1-D lists keyed by ``GRID_KEYS`` (checked by ``folds.check_grid(grid,
      "direct")``); default ``paper_grid()`` (539 points).
    num_folds: F; seed: int seed of the folds (``folds.stratified_folds``; copies of a labeled
      row share a fold).
    num_repeats: R fold partitions, seeds seed, seed + 1, ..., sharing every per-sigma pass
      (the feature map, the unlabeled moments, the labeled features).
    key: PRNG key or int seed of the feature map (as ``direct.fit``).
    num_features: p of the tasks' models (default ``CV_NUM_FEATURES``, half the fit's).
    num_classes, feature_map, num_frequencies, landmarks, chunk_rows, mesh, axis_name: as
      ``direct.fit``. Nystrom landmarks are chosen once, on all labeled points
      and the unlabeled sample, and serve every fold and sigma: a held-out point can be a
      landmark. Landmarks chosen per fold among its training points (as ``direct.fit`` on the
      fold would) cost the defaults 1.4-2.7x the time for the same or lower test AUC on 36
      measured trials (``experiments/reproduction/RESULTS.md#one-se``).

  Returns:
    ``qsg_jax.folds.CVResult``: ``best`` holds floats lam, sigma, gamma for ``direct.fit``;
    ``scores`` [n_lam, n_sigma, n_gamma, k-1] (mean over every fold of every repeat),
    ``fold_scores`` [..., R * F, k-1] (repeat-major; NaN: ill-posed, or a held-out fold lacking
    one side of a split); ``grid`` the checked grid plus "landmarks" (the Nystrom landmarks, or
    None).

  Raises:
    ValueError, TypeError: bad inputs, or every task ill-posed.
  """
  with numerics.one_blas_thread():
    return _cross_validate(x_labeled, y_labeled, x_unlabeled, grid, num_folds, seed,
                           num_repeats, key, num_classes, feature_map, num_features,
                           num_frequencies, landmarks, chunk_rows, mesh, axis_name)


def _cross_validate(x_labeled, y_labeled, x_unlabeled, grid, num_folds, seed, num_repeats, key,
                    num_classes, feature_map, num_features, num_frequencies, landmarks,
                    chunk_rows, mesh, axis_name):
  """``cross_validate``'s body (its arguments in order)."""
  grid = folds_lib.check_grid(paper_grid() if grid is None else grid, "direct")
  key = validation.check_key(key)
  x_l = validation.check_points("x_labeled", x_labeled, kernel=True)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  validation.refuse_one_point("x_labeled", x_l)
  num_features, num_frequencies, chunk_rows, landmarks = fitting.check_options(
      feature_map, num_features, num_frequencies, chunk_rows, landmarks, x_l.shape[1],
      default_num_features=CV_NUM_FEATURES)
  x_unlabeled = fitting.check_unlabeled(x_unlabeled, x_l.shape[1], mesh, axis_name,
                                        columns=validation.column_names(x_labeled))
  # Per sigma: the unlabeled moments, the class totals and a fold's moments (2 k + 2 groups).
  fitting.check_memory(feature_map, num_features, landmarks, 2 * k + 2, x_l.shape[0],
                       x_unlabeled)
  if x_unlabeled is None and np.any(grid["gamma"] < 1):
    raise ValueError(f"no unlabeled data but the gamma grid {grid['gamma'].tolist()} weights the "
                     "unlabeled risks: pass x_unlabeled, or use gamma=[1.0].")
  seed = validation.check_count("seed", seed, minimum=0, fix="Pass e.g. seed=0.", maximum=None)
  num_repeats = validation.check_count("num_repeats", num_repeats)
  tasks = []                                     # (held-out mask, training indices) per fold
  for repeat in range(num_repeats):
    folds = folds_lib.stratified_folds(y_l, num_folds, seed + repeat, points=x_l)
    train, _ = folds_lib.fold_training_sets(folds, y_l)
    tasks += [(folds == f, train[f]) for f in range(train.shape[0])]
  feature_key, _ = jax.random.split(key)
  if feature_map == "nystrom" and isinstance(landmarks, str):   # once: sigma-independent
    points, x_unlabeled = fitting.landmark_points(feature_key, x_l, x_unlabeled, mesh,
                                                  axis_name)
    landmarks = feature_maps.select_landmarks(
        jax.random.fold_in(feature_key, 1), points,
        validation.check_count("num_features", num_features), landmarks, fitting.KMEANS_ITERS)
  if x_unlabeled is not None and not hasattr(x_unlabeled, "shape") and not isinstance(
      x_unlabeled, distributed.ShardedUnlabeled):
    x_unlabeled = list(x_unlabeled)       # an iterator is read once per sigma
  lams, sigmas, gammas = grid["lam"], grid["sigma"], grid["gamma"]
  s = k - 1
  splits = np.arange(s)[:, None]
  fold_scores = np.full((lams.size, sigmas.size, gammas.size, len(tasks), s), np.nan)
  for si, sigma in enumerate(sigmas):
    psi = fitting.make_feature_map(feature_map, feature_key, sigma, num_features, x_l.shape[1],
                                   landmarks=landmarks, num_frequencies=num_frequencies)
    shift = moments_lib.feature_shift(psi, x_l)
    unlabeled = fitting.unlabeled_moments(psi, x_unlabeled, shift, chunk_rows=chunk_rows,
                                          mesh=mesh, axis_name=axis_name)
    phi = moments_lib.point_features(psi, x_l).astype(np.float64) - shift.astype(np.float64)
    active = np.any(phi != 0, axis=0) | (np.einsum("gpp->p", unlabeled.second) > 0)
    phi, unlabeled = phi[:, active], unlabeled._replace(      # a Nystrom map's dropped columns
        means=unlabeled.means[:, active], second=unlabeled.second[:, active][:, :, active],
        shift=unlabeled.shift[active])
    totals = moments_lib.class_sums(phi, y_l, k)
    for f, (valid, training) in enumerate(tasks):
      held_out = np.ones(y_l.shape[0], bool)
      held_out[training] = False
      stats = _fold_moments(totals, phi, y_l, held_out, k, unlabeled)
      positive = valid[None, :] & (y_l[None, :] > splits)
      negative = valid[None, :] & (y_l[None, :] <= splits)
      q1, r = solve_lib.mean_system(stats, np.ones(s))        # Q is affine in a shared gamma
      q0 = solve_lib.mean_system(stats, np.zeros(s))[0] if unlabeled.counts[0] else q1
      for gi, gamma in enumerate(gammas):
        w = _solutions((1.0 - gamma) * q0 + gamma * q1, r, lams)          # [L, p]
        scores = w @ phi[valid].T                                          # [L, n_valid]
        ok = np.all(np.isfinite(w), axis=1)
        aucs = _aucs(np.where(ok[:, None], scores, 0.0), positive[:, valid], negative[:, valid])
        fold_scores[:, si, gi, f] = np.where(ok[:, None], aucs, np.nan)
  scores = folds_lib.nanmean(np.moveaxis(fold_scores, -2, -1))             # [L, S, G, s]
  ill_posed = np.isnan(fold_scores).all(axis=-1).any(axis=-1)              # any fold failed
  target = np.where(ill_posed, np.nan, folds_lib.nanmean(scores))
  index = folds_lib.best_point(target, "every grid point is ill-posed (lam = 0 with a singular "
                               "system) or held-out folds lack a side of every split: use lam > 0 "
                               "or fewer folds.")
  best = {name: float(grid[name][i]) for name, i in zip(GRID_KEYS, index)}
  return folds_lib.CVResult(best, float(target[index]), scores, fold_scores,
                            dict(grid, landmarks=landmarks), solver="direct")
