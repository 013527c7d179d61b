"""Per-feature length scales (ARD) learned through a differentiable direct solve.

A Gaussian kernel with one length scale s_d per feature, exp(-sum_d (x_d - z_d)^2 / (2 s_d^2)),
is the isotropic kernel of the estimators (sigma = 1/2) on x / s. ``learn_length_scales`` picks
log s by gradient descent (``optax.adam``) on a cross-validated AUC surrogate:

    L(log s) = mean_folds mean_splits  [ (1 - m_P + m_N)^2 + v_P + v_N ]      (held-out pairs)
               + a * mean_d (delta_d - mean(delta))^2 + b * mean(delta)^2,  delta = log s - log s0,

where f_fold minimizes the squared-loss objective (ordinal paper Eqs. 7-9; ``direct.system``)
on the other folds' labeled points and an unlabeled subsample, and m, v are the mean and
variance of f on a validation fold's positives (P: classes > j) and negatives (N: <= j): the
first term is exactly the mean over validation pairs of the squared pairwise loss
(1 - f(x+) + f(x-))^2, the objective's own risk on held-out pairs (``surrogate="logistic"``:
log(1 + exp(-margin / spread)) instead). Every fold's f comes from one linear solve, written in
JAX, so jax.grad differentiates through it:

* features c(x) = k_s(x, Z) on p landmarks Z (a key-drawn uniform sample of the labeled points
  and the unlabeled subsample; they move with s), f = c . beta, ||f||^2 = beta^T K_ZZ beta: the
  Nystrom solution of ``direct.fit`` with those landmarks, written in the kernel-expansion
  coefficients beta so that no eigendecomposition is differentiated;
* the system (Q + lam/2 (K_ZZ + jitter I)) beta = r, Q and r from class-wise and unlabeled
  feature moments exactly as ``system.mean_system`` forms them (``fold_system``), in float64
  (``jax.enable_x64`` locally), Cholesky-solved; the moments and solves of every fold carry a
  hand-written gradient of rank 2 per fold (``fold_solutions``; tested against jax.vjp), 2.7x
  faster per step than automatic differentiation's dense products.

Every iterate's held-out AUC of the folds (Mann-Whitney, ``pair_auc``) is tracked, and the
iterate with the highest is returned (ties to the earliest: s0 itself unless something beats
it; ``select="surrogate"``: the lowest objective). s stays within [s0 / ``MAX_SHRINK``,
s0 * ``MAX_GROWTH``].

Too few labels: d scales over-fit the folds. On development splits (trials 10-12 of the
papers' protocol, not the reported ones), with 4-24 positives among 200 labels the folds'
held-out AUC rose while the test AUC fell, and sgemm (>= 82 rows per class, d = 14) gained on
every trial. So with fewer than ``min_per_scale`` (2) points of the smallest class per feature
(``learns_per_feature``) the scales are tied (``scale_groups``; ``LengthScaleWarning``): where
the columns are of two kinds, two-valued indicators (one-hot codes) and the others, and the
labels allow two scales, one factor of s0 per kind (on ijcnn1, 19 positives, whose ten one-hot
columns drowned the one lag feature that alone ranks at 0.88: test AUC +0.042 over six trials;
``RESULTS.md#kinds``), then refined per feature by a second descent from them, pulled toward
them with weight ``REFINE_PENALTY`` (3, chosen on development trials; ijcnn1 +0.0125 more over
six trials, all up, bank_marketing -0.0010, all down by 0.0003-0.0033; ``RESULTS.md#refine``),
else one common factor. The defaults (p = 256 landmarks, 2 repeats of
3 folds) were chosen on the same trials. Those figures and the reported trials':
``experiments/reproduction/RESULTS.md#ard``. Rows are padded
to power-of-two buckets (``pad``): one compilation per data width and bucket, then about
num_folds * num_repeats * n_l p^2 + n_u p^2 flops per step, 60 steps.

    scales = direct.learn_length_scales(x_l, y_l, x_u, key=0)          # [d]
    fit = direct.fit(x_l / scales, y_l, x_u / scales, sigma=0.5)      # sigma = 1 / (2 * 1^2)

The estimators take ``scales`` as their ``length_scale`` (scaled-input units: min-max scaled
features).
"""

import functools
import itertools
import warnings
from typing import NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax

from qsg_jax import _validation as validation
from qsg_jax import folds as folds_lib
from qsg_jax import numerics
from qsg_jax.config import FitConfig
from qsg_jax.direct import system

DEFAULT_LENGTH_SCALE = float(np.sqrt(0.5 / FitConfig.sigma))  # sigma = 0.1: the estimators' default
NUM_FEATURES = 256       # landmarks p of the differentiable solve (module docstring).
NUM_UNLABELED = 2000     # unlabeled points in the solves (a uniform subsample, drawn by key).
NUM_LABELED = 1000       # labeled points beyond which a stratified subsample (by key) is used.
NUM_FOLDS = 3            # stratified folds of the labeled points.
NUM_REPEATS = 2          # fold partitions averaged (module docstring).
NUM_STEPS = 60           # Adam steps on log s.
LEARNING_RATE = 0.1      # Adam's step on log s.
PENALTY = 1e-2           # weight of the anisotropy (``objective``).
SCALE_PENALTY = 1e-2     # weight of the overall scale change (``objective``).
SURROGATE = "squared"    # held-out pair loss (``cv_loss``).
SELECT = "auc"           # the iterate returned: highest held-out AUC.
SELECTIONS = ("auc", "surrogate")
MIN_PER_SCALE = 2.0      # smallest-class points per feature needed to learn one scale each.
REFINE_PENALTY = 3.0     # pull of the per-feature refinement toward the per-kind factors.
JITTER = 1e-8            # added to K_ZZ's diagonal (its diagonal is 1).
AUC_TIE = 1e-9           # held-out AUCs closer than this are one (``_keep_better``); one held-
                         # out pair moves it by 1 / (|P| |N| F s), above 1e-7 at 1,000 labels.
MAX_SHRINK = 20.0        # s_d >= s0_d / MAX_SHRINK.
MAX_GROWTH = 1000.0      # s_d <= s0_d * MAX_GROWTH (a feature that far is switched off).


def learns_per_feature(y_labeled, num_classes: int, num_features: int,
                       min_per_scale: float = MIN_PER_SCALE) -> bool:
  """Whether the labels can tell ``num_features`` scales apart: the smallest class has at least
  ``min_per_scale`` points per scale."""
  smallest = int(np.bincount(np.asarray(y_labeled), minlength=num_classes).min())
  return smallest >= min_per_scale * num_features


def live_features(x_labeled, x_unlabeled=None) -> np.ndarray:
  """[d] bool: the columns that vary over the rows; a constant column does not enter the kernel,
  so its length scale is neither learned nor counted (a column of 3.0 added to the data had
  moved the learned scales and the automatic choice: test AUC 0.9777 against 0.9758)."""
  x = np.asarray(x_labeled if x_unlabeled is None else np.concatenate([x_labeled, x_unlabeled]))
  return np.ptp(x, axis=0) > 0


def indicator_features(x_labeled, x_unlabeled=None) -> np.ndarray:
  """[d] bool: the columns with at most two distinct values over the rows (indicators, such as
  one-hot codes of a category)."""
  x = x_labeled if x_unlabeled is None else np.concatenate([x_labeled, x_unlabeled])
  x = np.asarray(x)
  return np.all((x == x.min(axis=0)) | (x == x.max(axis=0)), axis=0)


def scale_groups(y_labeled, num_classes: int, indicators, min_per_scale: float = MIN_PER_SCALE
                 ) -> np.ndarray:
  """[d] int group of each feature's length scale (features of a group share one learned factor):

  one group per feature where the labels can tell them apart (``learns_per_feature``); else,
  where the columns are of two kinds (``indicators``: two-valued columns, and the others) and the
  labels can tell two scales apart, one group per kind; else one group (a common factor).
  """
  indicators = np.asarray(indicators, bool)
  d = indicators.size
  if learns_per_feature(y_labeled, num_classes, d, min_per_scale):
    return np.arange(d)
  if 0 < indicators.sum() < d and learns_per_feature(y_labeled, num_classes, 2, min_per_scale):
    return indicators.astype(int)
  return np.zeros(d, int)


def tying_matrix(groups, still=None) -> np.ndarray:
  """[d, d] matrix whose product with a gradient puts in each entry its group's mean.

  ``still`` ([d] bool, optional): features constant over the rows the descent sees; those alone
  in their group get a zero row and keep their start. Their only gradient is the penalty's, which
  Adam's normalized steps turned into a walk set by rounding (sweep Z9: one bank_marketing scale
  6.8 % apart between two builds whose gradients differed by 1e-19).
  """
  groups = np.asarray(groups)
  same = (groups[:, None] == groups[None, :]).astype(np.float64)
  tie = same / same.sum(axis=1, keepdims=True)
  if still is not None:
    tie[np.asarray(still, bool) & (same.sum(axis=1) == 1)] = 0.0
  return tie


class LengthScaleWarning(UserWarning):
  """Length scales were not learned per feature: too few labels (``learn_length_scales``)."""


class Problem(NamedTuple):
  """The data of the CV surrogate (float64; F folds, G = k + 1 groups, s = k - 1 splits)."""
  x_labeled: jax.Array     # [n_l, d] labeled points.
  x_unlabeled: jax.Array   # [n_u, d] unlabeled subsample (n_u >= 1; its weight is 0 if gamma = 1).
  landmarks: jax.Array     # [p, d] landmarks Z.
  point_weight: jax.Array  # [F, n_l] a_{class} / n_{class} on fold f's training points, else 0.
  unlabeled_weight: jax.Array  # [F] a_U, the weight of S_U in Q.
  class_mean: jax.Array    # [F, k, n_l] 1 / n_c on fold f's training points of class c.
  low: jax.Array           # [F, G, G] the rank-G form of Q in the group means.
  target: jax.Array        # [F, G] r = target @ M (M: the group means [G, p]).
  valid_pos: jax.Array     # [F, s, n_l] 1 / |P| on fold f's held-out points of classes > j.
  valid_neg: jax.Array     # [F, s, n_l] 1 / |N| on its held-out points of classes <= j.
  labeled_rows: jax.Array    # [n_l] 1 / n on the real rows, 0 on padding rows (``pad``).
  unlabeled_rows: jax.Array  # [n_u] likewise.


FOLD_FIELDS = ("point_weight", "unlabeled_weight", "class_mean", "low", "target", "valid_pos",
               "valid_neg")   # the per-fold arrays ([F, ...])
PER_ROW_FIELDS = ("point_weight", "class_mean", "valid_pos", "valid_neg")   # [F, ..., n_l]


class Trace(NamedTuple):
  """What the descent saw at every iterate (s0 first, then each step's result)."""
  objective: np.ndarray    # [num_steps + 1] surrogate plus penalty ([2 (num_steps + 1)] with
                           # the per-feature refinement: its iterates follow).
  auc: np.ndarray          # likewise, held-out AUC of the folds (mean over folds, splits).


class State(NamedTuple):
  """The descent's state (float64 unless said)."""
  step: jax.Array          # int32 scalar, steps taken.
  log_scales: jax.Array    # [d] current log s.
  opt_state: optax.OptState
  best_log_scales: jax.Array  # [d] the iterate with the lowest objective so far.
  best_loss: jax.Array     # scalar, its objective (inf before the first evaluation).
  best_auc: jax.Array      # scalar, its held-out AUC (-inf before the first evaluation).


def split_coefficients(counts: np.ndarray, gamma: np.ndarray):
  """(diag [G], low [G, G], target [G]) of ``system.mean_system`` for class counts [k].

  Q = sum_G diag_G S_G - M^T low M and r = target @ M for group moments S_G, means M ([G, p],
  the k classes then the unlabeled set): the coefficients ``system.mean_system`` uses.
  """
  w = system.split_weights(counts)
  gamma = np.asarray(gamma, np.float64)
  s = gamma.shape[0]
  pos, neg, unl = w.positive, w.negative, w.unlabeled
  diag = (np.sum(pos + neg, axis=0) + 2.0 * np.sum(1.0 - gamma) * unl) / s
  low = np.zeros((unl.size, unl.size))
  for j in range(s):
    low += gamma[j] * system._sym(pos[j], neg[j]) + (1.0 - gamma[j]) * (
        system._sym(pos[j], unl) + system._sym(unl, neg[j]))
  return diag, low / s, np.mean(pos - neg, axis=0)


def kernel(x: jax.Array, z: jax.Array) -> jax.Array:
  """[n, m] exp(-||x_i - z_j||^2 / 2) of already scaled points x [n, d], z [m, d]."""
  sq = (jnp.sum(x * x, axis=1)[:, None] + jnp.sum(z * z, axis=1)[None, :]
        - 2.0 * jnp.matmul(x, z.T, precision=jax.lax.Precision.HIGHEST))
  return jnp.exp(-0.5 * jnp.maximum(sq, 0.0))


def fold_system(c_labeled, mu_unlabeled, second_unlabeled, point_weight, unlabeled_weight,
                class_mean, low, target):
  """(Q [p, p], r [p]) of one fold from centered features (``split_coefficients``' form).

  Args:
    c_labeled: [n_l, p] features of the labeled points (minus a shift).
    mu_unlabeled: [p] mean feature of the unlabeled points (same shift).
    second_unlabeled: [p, p] their second moment.
    point_weight: [n_l] diag_class / n_class on the fold's training points (0 elsewhere).
    unlabeled_weight: scalar diag_U.
    class_mean: [k, n_l] 1 / n_c on the fold's training points of class c.
    low: [G, G]; target: [G].
  """
  hp = jax.lax.Precision.HIGHEST
  means = jnp.concatenate([jnp.matmul(class_mean, c_labeled, precision=hp),
                           mu_unlabeled[None, :]], axis=0)                       # [G, p]
  q = (jnp.matmul(c_labeled.T, point_weight[:, None] * c_labeled, precision=hp)
       + unlabeled_weight * second_unlabeled
       - jnp.matmul(means.T, jnp.matmul(low, means, precision=hp), precision=hp))
  return 0.5 * (q + q.T), jnp.matmul(target, means, precision=hp)


@jax.custom_vjp
def fold_solutions(c_labeled, c_unlabeled, gram, lam, jitter, unlabeled_rows, point_weight,
                   unlabeled_weight, class_mean, low, target):
  """[F, p] beta solving (Q + lam/2 (K_ZZ + jitter I)) beta = r for every fold (Q and r:
  ``fold_system``), by Cholesky, from the features.

  Args:
    c_labeled: [n_l, p], c_unlabeled: [n_u, p] features (shift-centered); gram: [p, p] K_ZZ.
    lam, jitter: scalars; unlabeled_rows: [n_u] the unlabeled points' weights (mean and second
      moment); point_weight .. target: the ``Problem``'s per-fold arrays ([F, ...]).

  Differentiated by hand (``_fold_solutions_bwd``): a fold's system receives the cotangent
  H = -(u beta^T + beta u^T) / 2 of rank 2 (u = A^-1 g), so each moment's
  cotangent, c^T diag(w) c -> 2 diag(w) c H, costs O(n p) instead of automatic
  differentiation's dense [n, p] x [p, p] products: at p = 256 and 2,048 unlabeled points
  these were over half of a descent step's time.
  """
  return _fold_solutions_fwd(c_labeled, c_unlabeled, gram, lam, jitter, unlabeled_rows,
                             point_weight, unlabeled_weight, class_mean, low, target)[0]


def _fold_solutions_fwd(c_labeled, c_unlabeled, gram, lam, jitter, unlabeled_rows,
                        point_weight, unlabeled_weight, class_mean, low, target):
  """``fold_solutions``' value and residuals."""
  hp = jax.lax.Precision.HIGHEST
  mu_u = jnp.matmul(unlabeled_rows, c_unlabeled, precision=hp)
  second_u = jnp.matmul(c_unlabeled.T, unlabeled_rows[:, None] * c_unlabeled, precision=hp)

  def one_fold(point_weight, unlabeled_weight, class_mean, low, target):
    q, r = fold_system(c_labeled, mu_u, second_u, point_weight, unlabeled_weight, class_mean,
                       low, target)
    a = q + 0.5 * lam * (gram + jitter * jnp.eye(q.shape[0], dtype=q.dtype))
    factor = jax.scipy.linalg.cho_factor(a, lower=True)[0]
    return jax.scipy.linalg.cho_solve((factor, True), r), factor

  beta, factor = jax.vmap(one_fold)(point_weight, unlabeled_weight, class_mean, low, target)
  return beta, (c_labeled, c_unlabeled, gram, lam, jitter, unlabeled_rows, point_weight,
                unlabeled_weight, class_mean, low, target, mu_u, second_u, factor, beta)


def _fold_solutions_bwd(residuals, g):
  """``fold_solutions``' cotangents for g [F, p], in low-rank form (its docstring).

  Fold f's system A = c_l^T D c_l + a_U S_U - M^T L M + lam/2 (K + jitter I) (L symmetrized,
  M = [class means of c_l; mu_U]) and r = t M receive dA = H = -(u beta^T + beta u^T) / 2 and
  dr = u; every input's cotangent follows from H without forming a [p, p] product with data.
  """
  (c_l, c_u, gram, lam, jitter, rows_u, point_weight, unlabeled_weight, class_mean, low, target,
   mu_u, second_u, factor, beta) = residuals
  hp = jax.lax.Precision.HIGHEST
  mm = functools.partial(jnp.matmul, precision=hp)
  ein = functools.partial(jnp.einsum, precision=hp)
  k = class_mean.shape[1]
  u = jax.vmap(lambda factor, g: jax.scipy.linalg.cho_solve((factor, True), g))(factor, g)
  means = jnp.concatenate([ein("fkn,np->fkp", class_mean, c_l),
                           jnp.broadcast_to(mu_u, (u.shape[0], 1, mu_u.shape[0]))], axis=1)
  m_u, m_b = ein("fgp,fp->fg", means, u), ein("fgp,fp->fg", means, beta)        # [F, G]
  sym_low = 0.5 * (low + jnp.swapaxes(low, 1, 2))
  d_means = (ein("fgh,fh,fp->fgp", sym_low, m_u, beta) + ein("fgh,fh,fp->fgp", sym_low, m_b, u)
             + target[:, :, None] * u[:, None, :])                              # [F, G, p]
  a_l, b_l = mm(u, c_l.T), mm(beta, c_l.T)                                     # [F, n_l]
  a_u, b_u = mm(u, c_u.T), mm(beta, c_u.T)                                     # [F, n_u]
  d_mu = jnp.sum(d_means[:, k], axis=0)
  d_c_l = (ein("fkn,fkp->np", class_mean, d_means[:, :k])
           - mm((point_weight * a_l).T, beta) - mm((point_weight * b_l).T, u))
  weighted = unlabeled_weight[:, None]
  d_c_u = rows_u[:, None] * (d_mu[None, :] - mm((weighted * a_u).T, beta)
                             - mm((weighted * b_u).T, u))
  d_rows_u = mm(c_u, d_mu) - jnp.sum(weighted * a_u * b_u, axis=0)
  shifted = gram + jitter * jnp.eye(gram.shape[0], dtype=gram.dtype)
  d_gram = -0.25 * lam * (mm(u.T, beta) + mm(beta.T, u))
  d_lam = -0.25 * (ein("fp,pq,fq->", u, shifted, beta) + ein("fp,pq,fq->", beta, shifted, u))
  d_jitter = -0.5 * lam * jnp.sum(u * beta)
  d_point_weight = -a_l * b_l
  d_unlabeled_weight = -ein("fp,pq,fq->f", u, second_u, beta)
  d_class_mean = ein("fkp,np->fkn", d_means[:, :k], c_l)
  d_low = 0.5 * (m_u[:, :, None] * m_b[:, None, :] + m_b[:, :, None] * m_u[:, None, :])
  return (d_c_l, d_c_u, d_gram, d_lam, d_jitter, d_rows_u, d_point_weight, d_unlabeled_weight,
          d_class_mean, d_low, m_u)


fold_solutions.defvjp(_fold_solutions_fwd, _fold_solutions_bwd)


def pair_loss(f, pos, neg):
  """Mean over (a in P, b in N) of (1 - f_a + f_b)^2 = (1 - m_P + m_N)^2 + v_P + v_N.

  Args:
    f: [n] scores; pos, neg: [n] weights summing to 1 over each group (0 outside).
  """
  dot = functools.partial(jnp.dot, precision=jax.lax.Precision.HIGHEST)
  m_p, m_n = dot(pos, f), dot(neg, f)
  v_p = dot(pos, (f - m_p) ** 2)
  v_n = dot(neg, (f - m_n) ** 2)
  return (1.0 - m_p + m_n) ** 2 + v_p + v_n


def fold_scores(log_scales, problem: Problem, lam, jitter=JITTER):
  """[F, n_l] f of every fold's solution on all labeled points (features shift-centered)."""
  inv = jnp.exp(-log_scales)[None, :]
  x_l, x_u, z = problem.x_labeled * inv, problem.x_unlabeled * inv, problem.landmarks * inv
  c_l, c_u, gram = kernel(x_l, z), kernel(x_u, z), kernel(z, z)
  hp = jax.lax.Precision.HIGHEST
  shift = jnp.matmul(problem.labeled_rows, c_l, precision=hp)   # padded rows (``pad``): weight 0
  c_l, c_u = c_l - shift[None, :], c_u - shift[None, :]
  beta = fold_solutions(c_l, c_u, gram, lam, jitter, problem.unlabeled_rows,
                        problem.point_weight, problem.unlabeled_weight, problem.class_mean,
                        problem.low, problem.target)                             # [F, p]
  return jax.vmap(lambda b: jnp.matmul(c_l, b, precision=hp))(beta)


def logistic_pair_loss(f, pos, neg, scale):
  """Mean over (a in P, b in N) of log(1 + exp(-(f_a - f_b) / scale)) (weights as ``pair_loss``).

  With ``scale`` the spread of the held-out scores it is invariant to the scale of f: a smooth
  stand-in for 1 - AUC.
  """
  margin = (f[:, None] - f[None, :]) / scale
  return jnp.sum(pos[:, None] * neg[None, :] * jax.nn.softplus(-margin))


SURROGATES = ("squared", "logistic")


def pair_auc(f, pos, neg):
  """Weighted Mann-Whitney AUC: sum_{a, b} pos_a neg_b (1{f_a > f_b} + 1{f_a = f_b} / 2).

  By sorting, O(n log n): pos_a times the weight of negatives below f_a plus half of those at
  f_a. (The [n, n] comparison it replaced took 84 of a descent step's 90 ms at 1,024 rows, 6
  folds and 4 splits.)
  """
  order = jnp.argsort(f)
  below = jnp.concatenate([jnp.zeros(1, neg.dtype), jnp.cumsum(neg[order])])   # [n + 1]
  sorted_f = f[order]
  left = jnp.searchsorted(sorted_f, f, side="left")
  right = jnp.searchsorted(sorted_f, f, side="right")
  return 0.5 * jnp.dot(pos, below[left] + below[right], precision=jax.lax.Precision.HIGHEST)


def cv_terms(log_scales, problem: Problem, lam, jitter=JITTER, surrogate: str = "squared"):
  """(held-out pair loss, held-out AUC), each the mean over folds and splits.

  The loss is ``pair_loss`` (squared) or ``logistic_pair_loss`` (its scale the spread of the
  fold's held-out scores); the AUC (``pair_auc``) carries no gradient.
  """
  f = fold_scores(log_scales, problem, lam, jitter)                             # [F, n_l]
  per_fold = lambda fn, *extra: jax.vmap(jax.vmap(fn, in_axes=(None, 0, 0) + (None,) * len(
      extra)))(f if fn is not pair_auc else jax.lax.stop_gradient(f), problem.valid_pos,
               problem.valid_neg, *extra)
  if surrogate == "squared":
    loss = per_fold(pair_loss)
  elif surrogate == "logistic":
    held = ((problem.valid_pos[:, 0] + problem.valid_neg[:, 0]) > 0).astype(f.dtype)   # [F, n_l]
    held = held / jnp.sum(held, axis=1, keepdims=True)
    mean = jnp.sum(held * f, axis=1, keepdims=True)
    spread = jnp.sqrt(jnp.sum(held * (f - mean) ** 2, axis=1) + 1e-30)                 # [F]
    loss = per_fold(logistic_pair_loss, spread)
  else:
    raise ValueError(f"surrogate must be one of {SURROGATES}; received {surrogate!r:.40}.")
  return jnp.mean(loss), jnp.mean(per_fold(pair_auc))


def cv_loss(log_scales, problem: Problem, lam, jitter=JITTER, surrogate: str = "squared"):
  """The held-out pair loss of ``cv_terms``."""
  return cv_terms(log_scales, problem, lam, jitter, surrogate)[0]


def objective_and_auc(log_scales, log_scales0, problem: Problem, lam, penalty, jitter=JITTER,
                      surrogate: str = "squared"):
  """(``cv_loss`` plus the penalty toward s0, the held-out AUC).

  With delta = log s - log s0 and m its mean over features, penalty = (a, b) [2] adds
  a * mean_d (delta_d - m)^2 (anisotropy) + b * m^2 (overall scale); a = b is
  a * mean_d delta_d^2.
  """
  delta = log_scales - log_scales0
  mean = jnp.mean(delta)
  loss, auc = cv_terms(log_scales, problem, lam, jitter, surrogate)
  return loss + penalty[0] * jnp.mean((delta - mean) ** 2) + penalty[1] * mean**2, auc


def objective(log_scales, log_scales0, problem: Problem, lam, penalty, jitter=JITTER,
              surrogate: str = "squared"):
  """The objective of ``objective_and_auc``."""
  return objective_and_auc(log_scales, log_scales0, problem, lam, penalty, jitter, surrogate)[0]


def init(log_scales0, optimizer: optax.GradientTransformation) -> State:
  """The ``State`` at s0 (nothing evaluated yet)."""
  dtype = log_scales0.dtype
  return State(jnp.zeros((), jnp.int32), log_scales0, optimizer.init(log_scales0), log_scales0,
               jnp.asarray(jnp.inf, dtype), jnp.asarray(-jnp.inf, dtype))


def _keep_better(state: State, log_scales, loss, auc, select: str) -> State:
  """``state`` with (log_scales, loss, auc) as its best iterate if it is strictly better by
  ``select`` ("auc": held-out AUC higher by more than ``AUC_TIE``; "surrogate": lower
  objective); NaN never is. Iterates often share one held-out AUC (a count of ordered pairs),
  which rounding in the sums would otherwise break by the order of summation: on one of 36
  peers' trials the sorted ``pair_auc`` picked another iterate than the [n, n] one."""
  better = auc > state.best_auc + AUC_TIE if select == "auc" else loss < state.best_loss
  return state._replace(best_log_scales=jnp.where(better, log_scales, state.best_log_scales),
                        best_loss=jnp.where(better, loss, state.best_loss),
                        best_auc=jnp.where(better, auc, state.best_auc))


def update(state: State, problem: Problem, log_scales0, lam, penalty,
           optimizer: optax.GradientTransformation, jitter=JITTER, surrogate: str = "squared",
           select: str = "auc", tie=None):
  """One Adam step on log s (bounded) -> (State, (objective, AUC) at the iterate it started
  from). ``tie``: [d, d] matrix applied to the gradient (``tying_matrix``: the mean over each
  group of features tied to one factor), or None (one scale per feature)."""
  (loss, auc), grad = jax.value_and_grad(objective_and_auc, has_aux=True)(
      state.log_scales, log_scales0, problem, lam, penalty, jitter, surrogate)
  state = _keep_better(state, state.log_scales, loss, auc, select)
  grad = jnp.where(jnp.isfinite(grad), grad, 0.0)
  if tie is not None:
    grad = jnp.matmul(tie, grad, precision=jax.lax.Precision.HIGHEST)
  updates, opt_state = optimizer.update(grad, state.opt_state, state.log_scales)
  log_scales = jnp.clip(optax.apply_updates(state.log_scales, updates),   # (Python floats:
                        log_scales0 - float(np.log(MAX_SHRINK)),          # strict promotion)
                        log_scales0 + float(np.log(MAX_GROWTH)))
  return state._replace(step=state.step + 1, log_scales=log_scales, opt_state=opt_state), (
      loss, auc)


@functools.partial(jax.jit, static_argnames=("num_steps", "learning_rate", "surrogate",
                                             "select"))
def descend(problem: Problem, log_scales0, lam, penalty, jitter, *, num_steps: int,
            learning_rate: float, surrogate: str = "squared", select: str = "auc",
            tie=None):
  """(final ``State``, ([num_steps + 1] objective, [num_steps + 1] held-out AUC) per iterate):
  the whole descent, one scan."""
  optimizer = optax.adam(learning_rate)

  def body(state, _):
    return update(state, problem, log_scales0, lam, penalty, optimizer, jitter, surrogate,
                  select, tie)

  # optax's bias correction raises a float to an int32 count: a user's strict promotion fails it.
  with jax.numpy_dtype_promotion("standard"):
    state, (losses, aucs) = jax.lax.scan(body, init(log_scales0, optimizer), None,
                                         length=num_steps)
  last, auc = objective_and_auc(state.log_scales, log_scales0, problem, lam, penalty, jitter,
                                surrogate)
  state = _keep_better(state, state.log_scales, last, auc, select)
  return state, (jnp.concatenate([losses, last[None]]), jnp.concatenate([aucs, auc[None]]))


def make_problem(x_l, y_l, x_u, k, gamma, key, num_features, num_unlabeled, num_folds,
                 num_repeats=1, num_labeled=NUM_LABELED):
  """``Problem`` (NumPy float64) of checked inputs, F = num_folds * num_repeats held-out folds
  (each repeat a fresh stratified partition), on at most ``num_labeled`` labeled points (a
  stratified subsample) and ``num_unlabeled`` unlabeled ones; draws are a pure function of
  ``key``."""
  seeds = [np.asarray(jax.random.key_data(jax.random.fold_in(key, i))).tolist() for i in range(4)]
  if x_l.shape[0] > num_labeled:
    keep = folds_lib.stratified_subsample(y_l, num_labeled, num_folds,
                                          np.random.default_rng(seeds[3]))
    x_l, y_l = x_l[keep], y_l[keep]
  if x_u is None or x_u.shape[0] == 0:
    x_u = x_l[:1]                     # a placeholder: gamma = 1 gives it weight 0
  elif x_u.shape[0] > num_unlabeled:
    x_u = x_u[np.sort(np.random.default_rng(seeds[0]).choice(x_u.shape[0], num_unlabeled,
                                                              replace=False))]
  pool = np.concatenate([x_l, x_u])
  p = min(num_features, pool.shape[0])
  landmarks = pool[np.sort(np.random.default_rng(seeds[1]).choice(pool.shape[0], p,
                                                                  replace=False))]
  if np.all(np.asarray(gamma) == 1):  # the unlabeled risks weigh 0 (``split_coefficients``): skip
    x_u = x_l[:1]                     # their moments, every step (the landmarks keep the pool)
  fold_seeds = np.random.default_rng(seeds[2]).integers(2**31, size=num_repeats)
  partitions = [folds_lib.stratified_folds(y_l, num_folds, seed=int(seed)) for seed in fold_seeds]
  n, s = y_l.shape[0], k - 1
  onehot = (y_l[None, :] == np.arange(k)[:, None]).astype(np.float64)        # [k, n]
  arrays = {name: [] for name in FOLD_FIELDS}
  for fold_of, f in itertools.product(partitions, range(num_folds)):
    train, held = onehot * (fold_of != f)[None, :], onehot * (fold_of == f)[None, :]
    diag, low, target = split_coefficients(train.sum(axis=1), gamma)
    class_mean = train / train.sum(axis=1, keepdims=True)
    arrays["point_weight"].append(diag[:k] @ class_mean)
    arrays["unlabeled_weight"].append(diag[k])
    arrays["class_mean"].append(class_mean)
    arrays["low"].append(low)
    arrays["target"].append(target)
    above = np.cumsum(held[::-1], axis=0)[::-1][1:]                           # [s, n]: y > j
    below = np.cumsum(held, axis=0)[:s]                                       # [s, n]: y <= j
    arrays["valid_pos"].append(above / above.sum(axis=1, keepdims=True))
    arrays["valid_neg"].append(below / below.sum(axis=1, keepdims=True))
  return Problem(x_l.astype(np.float64), x_u.astype(np.float64), landmarks.astype(np.float64),
                 **{name: np.asarray(value, np.float64) for name, value in arrays.items()},
                 labeled_rows=np.full(n, 1.0 / n), unlabeled_rows=np.full(x_u.shape[0],
                                                                          1.0 / x_u.shape[0]))


def pad(problem: Problem) -> Problem:
  """``problem`` with its labeled and unlabeled rows padded to ``numerics.bucket_rows`` sizes
  (zero points of zero weight), so that a new number of rows (a fold, a refit) reuses
  ``descend``'s compilation.

  The padded problem has the same fold solutions and held-out terms: the padded rows enter no
  sum (``labeled_rows`` / ``unlabeled_rows`` weigh the shift and the unlabeled moments).
  """
  grow = lambda a, size: np.pad(a, [(0, 0)] * (a.ndim - 1) + [(0, size - a.shape[-1])])
  b_l, b_u = (numerics.bucket_rows(a.shape[0]) for a in (problem.x_labeled, problem.x_unlabeled))
  return problem._replace(
      x_labeled=grow(problem.x_labeled.T, b_l).T, x_unlabeled=grow(problem.x_unlabeled.T, b_u).T,
      labeled_rows=grow(problem.labeled_rows, b_l),
      unlabeled_rows=grow(problem.unlabeled_rows, b_u),
      **{name: grow(getattr(problem, name), b_l) for name in PER_ROW_FIELDS})


def check_length_scale(length_scale, dim: int) -> np.ndarray:
  """[d] float64 initial length scales from a scalar or [d] positive finite values."""
  arr = None
  if not isinstance(length_scale, (str, bool, np.bool_)):
    try:
      arr = np.asarray(length_scale, np.float64)
    except (TypeError, ValueError):   # text, ragged lists, objects: the message below
      pass
  if arr is None or arr.ndim > 1 or (arr.ndim == 1 and arr.shape != (dim,)):
    raise ValueError(f"length_scale must be a number > 0 or one per feature ([{dim}]); received "
                     f"{length_scale!r:.60}.")
  if not np.all(np.isfinite(arr) & (arr > 0)):
    raise ValueError(f"length_scale must be > 0 and finite; received "
                     f"{np.ravel(arr).tolist()[:6]}.")
  return np.broadcast_to(arr, (dim,)).copy()


def learn_length_scales(x_labeled, y_labeled, x_unlabeled=None, *,
                        num_classes: Optional[int] = None, lam: float = FitConfig.lam,
                        gamma=FitConfig.gamma, length_scale=DEFAULT_LENGTH_SCALE,
                        num_features: int = NUM_FEATURES, num_unlabeled: int = NUM_UNLABELED,
                        num_labeled: int = NUM_LABELED,
                        num_folds: int = NUM_FOLDS, num_repeats: int = NUM_REPEATS,
                        num_steps: int = NUM_STEPS,
                        learning_rate: float = LEARNING_RATE, penalty: float = PENALTY,
                        scale_penalty: float = SCALE_PENALTY, surrogate: str = SURROGATE,
                        select: str = SELECT, min_per_scale: float = MIN_PER_SCALE,
                        refine_penalty: Optional[float] = REFINE_PENALTY, key=0,
                        return_trace: bool = False):
  """Per-feature Gaussian length scales learned on a cross-validated AUC surrogate.

  Args:
    x_labeled: [n_l, d] labeled points, min-max scaled (the estimators' scaled units).
    y_labeled: [n_l] int classes 0..k-1 (ordered for k > 2), every class present. Copies of
      a (point, class) count once (``folds.distinct``).
    x_unlabeled: [n_u, d] unlabeled points or None (then every gamma must be 1); at most
      ``num_unlabeled`` of them (drawn by ``key``) enter the solves.
    num_classes: k; default max(y_labeled) + 1.
    lam: lambda > 0 of the objective the length scales are learned for.
    gamma: scalar or [k-1] trade-off in [0, 1] (1: labeled pairs only).
    length_scale: the isotropic start s0 (a number, or [d]); the default is the estimators'
      (sigma = 0.1, s0 = sqrt(5)). The descent also regularizes toward it (``penalty``).
    num_features: landmarks p of the differentiable solve.
    num_unlabeled: cap on the unlabeled points used.
    num_labeled: cap on the labeled points used (a stratified subsample beyond it).
    num_folds: stratified folds (at most the smallest class size).
    num_repeats: independent fold partitions averaged (F = num_folds * num_repeats solves per
      step).
    num_steps: Adam steps on log s (0 returns s0).
    learning_rate: Adam's step on log s.
    penalty: weight (>= 0) of the anisotropy, mean_d (delta_d - mean(delta))^2 with
      delta = log s - log s0.
    scale_penalty: weight (>= 0) of the overall scale change, mean(delta)^2.
    surrogate: "squared" (the objective's own pair loss on held-out pairs) or "logistic"
      (log(1 + exp(-margin / spread)), invariant to the scale of f).
    key: int seed or PRNG key: the subsample, landmarks and folds (the result is a pure function
      of the inputs and key).
    select: which iterate is returned: "auc" (the highest held-out AUC of the folds, ties to
      the earliest, s0 first) or "surrogate" (the lowest objective).
    min_per_scale: with fewer than min_per_scale * d points in the smallest class, the scales
      are tied (``scale_groups``: one factor of s0 per kind of feature or one in all;
      ``LengthScaleWarning``): measured, free per-feature scales then over-fit the folds
      (module docstring).
    refine_penalty: where the scales were tied per kind, a second descent of ``num_steps``
      from the per-kind scales refines them per feature with penalty weights (refine_penalty,
      refine_penalty) toward them (anisotropy and overall scale, as ``penalty`` /
      ``scale_penalty`` toward s0); None keeps the per-kind scales.
    return_trace: also return the ``Trace`` (objective and held-out AUC of every iterate).

  Returns:
    [d] float64 length scales s (the iterate ``select`` picks, s0 included; a constant column
    keeps its s0: ``live_features``; one constant only over the rows the descent uses, the
    subsamples, keeps its start where it has a scale of its own: ``tying_matrix``): use as the
    estimators' ``length_scale``, or ``direct.fit(x / s, ..., sigma=0.5)``. With
    ``return_trace``: (s, ``Trace``).

  Raises:
    ValueError, TypeError: bad inputs (NaN, shapes, a class without points, gamma < 1 without
      unlabeled points), naming what was received and the fix.

  Warns:
    LengthScaleWarning: a class has one labeled point (nothing to hold out): s0 is returned;
      or the smallest class has fewer than min_per_scale * d points: one common factor learned.
  """
  key = validation.check_key(key)
  x_l = validation.check_points("x_labeled", x_labeled, kernel=True)
  y_l, k = validation.check_labels(y_labeled, x_l.shape[0], num_classes)
  validation.refuse_one_point("x_labeled", x_l)
  x_l, y_l = folds_lib.distinct(x_l, y_l)   # copies split by the folds: a lookup table
  gamma = np.asarray(validation.check_gamma(gamma, k), np.float64)
  lam = validation.check_positive("lam", lam)
  penalty = validation.check_positive("penalty", penalty, allow_zero=True)
  scale_penalty = validation.check_positive("scale_penalty", scale_penalty, allow_zero=True)
  learning_rate = validation.check_positive("learning_rate", learning_rate)
  min_per_scale = validation.check_positive("min_per_scale", min_per_scale, allow_zero=True)
  if refine_penalty is not None:
    refine_penalty = validation.check_positive("refine_penalty", refine_penalty, allow_zero=True)
  num_features = validation.check_count("num_features", num_features)
  num_unlabeled = validation.check_count("num_unlabeled", num_unlabeled)
  num_labeled = validation.check_count("num_labeled", num_labeled)
  num_steps = validation.check_count("num_steps", num_steps, minimum=0)
  num_folds = validation.check_count("num_folds", num_folds, minimum=2)
  num_repeats = validation.check_count("num_repeats", num_repeats)
  if not isinstance(surrogate, str) or surrogate not in SURROGATES:
    raise ValueError(f"surrogate must be one of {SURROGATES}; received {surrogate!r:.40}.")
  if not isinstance(select, str) or select not in SELECTIONS:
    raise ValueError(f"select must be one of {SELECTIONS}; received {select!r:.40}.")
  scales0 = check_length_scale(length_scale, x_l.shape[1])
  x_u = None
  if x_unlabeled is not None:
    x_u = validation.check_points("x_unlabeled", x_unlabeled, dim=x_l.shape[1], allow_empty=True,
                                  kernel=True, columns=validation.column_names(x_labeled))
  if (x_u is None or x_u.shape[0] == 0) and np.any(gamma < 1):
    raise ValueError(f"no unlabeled data but gamma={gamma.tolist()} < 1 gives weight to the "
                     "unlabeled risks: pass x_unlabeled, or set gamma=1.")
  live, full0 = live_features(x_l, x_u), scales0   # constant columns keep s0 (``live_features``)
  scales0, x_l = scales0[live], x_l[:, live]
  x_u = None if x_u is None else x_u[:, live]
  smallest = int(np.bincount(y_l, minlength=k).min())
  if smallest < 2 and num_steps:
    warnings.warn(f"a class has a single distinct labeled point (class counts ["
                  f"{validation.summarize(np.bincount(y_l, minlength=k).tolist())}]), so no fold "
                  "can hold it out: length scales are not learned, the isotropic length_scale is "
                  "returned. Label more points of that class.", LengthScaleWarning,
                  stacklevel=validation.outside_stacklevel())
    num_steps = 0
  num_folds = min(num_folds, smallest)
  groups = scale_groups(y_l, k, indicator_features(x_l, x_u), min_per_scale)
  per_kind = 0 < groups.max() < groups.size - 1   # tied per kind: refined unless None
  if groups.max() + 1 < x_l.shape[1] and num_steps:
    learned = ("one factor for the two-valued (indicator) features and one for the others"
               if per_kind else "one overall factor of the length scales")
    instead = (", then each feature's scale is refined with a pull toward its kind's "
               "(refine_penalty)" if per_kind and refine_penalty is not None
               else ", not one per feature")
    warnings.warn(f"the smallest labeled class has {smallest} points for {x_l.shape[1]} "
                  f"features (fewer than min_per_scale={min_per_scale:g} per feature): "
                  f"{learned} is learned{instead} (too few labels to tell free per-feature "
                  "scales apart without over-fitting the folds).",
                  LengthScaleWarning, stacklevel=validation.outside_stacklevel())
  if num_steps == 0:
    return (full0, Trace(np.zeros(0), np.zeros(0))) if return_trace else full0
  problem = make_problem(x_l, y_l, x_u, k, gamma, key, num_features, num_unlabeled, num_folds,
                         num_repeats, num_labeled)
  still = np.ptp(np.concatenate([problem.x_labeled, problem.x_unlabeled, problem.landmarks]),
                 axis=0) == 0    # no data gradient (``tying_matrix``)
  problem = pad(problem)
  # One BLAS thread: LAPACK's Cholesky (dpotrf) spun OpenBLAS threads against XLA's, 190 ms
  # instead of 0.3 ms for three 128 x 128 factors on 2 cores (``numerics.one_blas_thread``).
  with jax.enable_x64(True), numerics.one_blas_thread():
    # NumPy arrays, put on the device as they are: jnp.asarray and jnp.float64 each compile
    # a small program per shape (17 in a first fit; each costs more on an accelerator).
    problem = jax.device_put(problem)
    run = functools.partial(descend, problem, lam=np.float64(lam), jitter=np.float64(JITTER),
                            num_steps=num_steps, learning_rate=float(learning_rate),
                            surrogate=surrogate, select=select)
    state, (losses, aucs) = run(np.log(scales0), penalty=np.array([penalty, scale_penalty]),
                                tie=tying_matrix(groups, still))
    if per_kind and refine_penalty is not None:
      # One scale per feature, as an array rather than None: the first descent's compiled
      # program serves again (a second compilation saved: 3 s of ijcnn1's first fit).
      each = tying_matrix(np.arange(still.size), still)
      state, (more_losses, more_aucs) = run(state.best_log_scales,
                                            penalty=np.full(2, refine_penalty), tie=each)
      losses, aucs = (np.concatenate([np.asarray(a), np.asarray(b)])
                      for a, b in ((losses, more_losses), (aucs, more_aucs)))
    scales = np.exp(np.asarray(state.best_log_scales, np.float64))
    trace = Trace(np.asarray(losses, np.float64), np.asarray(aucs, np.float64))
  if not np.all(np.isfinite(scales)):
    raise FloatingPointError("the length-scale descent produced non-finite scales; raise lam.")
  full = full0.copy()
  full[live] = scales
  return (full, trace) if return_trace else full
