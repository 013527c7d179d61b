"""The default step ("auto"): eta0 capped by the curvature of the squared-loss risk.

One DSG step moves the scores by f <- (1 - eta lam) f - eta K_i g(f) (Eqs. 13-14), where
g = dR/df is the score gradient of the mini-batch risk (``engine.risk``) and K_i = Phi_i Phi_i^T
the random-feature kernel of the step's block; its mean is the Gaussian kernel K and, as
||phi(x)||^2 = 1, it has K's unit diagonal. For the squared loss the risk is quadratic in the
scores with a constant Hessian H (a weighted graph Laplacian of the positive-negative,
positive-unlabeled and unlabeled-negative pairs, weighted by gamma and 1 - gamma), so the scores
follow the linear map (1 - eta lam) I - eta K H, which is stable for
eta < 2 / (lambda_max(K H) + lam). The default step is half that limit, capped:

    eta0 = min(STEP_SIZE_MAX, 1 / (lambda_max(K H) + lam)),

the factor 2 leaving room for the fluctuation of K_i around K and of the unlabeled mini-batch,
and eta_t = eta0 / (1 + eta0 lam t) as for an explicit number. H is the Hessian of the risk of
the training labeled points and one unlabeled mini-batch drawn from the run's key, K the exact
kernel on them; lambda_max(K H) (real and >= 0: K H is similar to K^(1/2) H K^(1/2)) is found by
``POWER_ITERATIONS`` steps of power iteration from ``start_vector``, applying H in closed form
(``risk.score_grads`` of the squared loss is affine in the scores). Past ``MAX_KERNEL_POINTS``
points the labeled ones are a class-stratified subsample (``curvature_points``), so the dense
kernel never exceeds 64 MB. Deterministic given the data, the hyper-parameters and the key.
Tests compare it with a dense eigen-decomposition.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax.config import FitConfig
from qsg_jax.config import STEP_SIZE_MAX
from qsg_jax.engine import kernels
from qsg_jax.engine import loop
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine.types import TrainData
from qsg_jax.numerics import HIGHEST

POWER_ITERATIONS = 200
# The unlabeled mini-batch of the curvature is drawn from fold_in(key, _BATCH_SALT).
_BATCH_SALT = 0x5EED
_dot = functools.partial(jnp.matmul, precision=HIGHEST)
# Points of the curvature's dense kernel, [n, n] float32: 64 MB at 4096 (at 50,000 labels the
# whole labeled set would take 10 GB). Past it the labeled points are subsampled, class by class
# (``curvature_points``). No safety factor: lambda_max of a subsample is not a lower bound of the
# full set's (sample eigenvalues are biased up); on sgemm, cod-rna and ijcnn1 (3000 labels, 1000
# kept, sigma 0.1-8, gamma 0.1-0.9, 5 subsamples each) it was 0.97-3.6 times the full value,
# and the rule's factor 2 below the stability limit covers a 3 % underestimate.
MAX_KERNEL_POINTS = 4096


def unlabeled_rows(key, num_unlabeled, batch_size):
  """[B] indices of the unlabeled mini-batch the curvature uses (a pure function of the key)."""
  return sampling.sample_unlabeled(jax.random.fold_in(key, _BATCH_SALT), batch_size,
                                   jnp.int32(num_unlabeled))


def _hessian_times(v, pos_w, neg_w, gamma, num_labeled):
  """H v: the linear part of the affine squared-loss score gradient."""
  grads = lambda u: jnp.concatenate(risk.score_grads("squared", u[:num_labeled], u[num_labeled:],
                                                     pos_w, neg_w, gamma))
  return grads(v) - grads(jnp.zeros_like(v))


def start_vector(points, a=12.9898, b=78.233):
  """[n] pseudo-random start of the power iteration, a function of each point alone.

  (So dropping zero-weight points, as a CV fold's held-out ones, changes nothing.)
  """
  d = points.shape[1]
  return jnp.sin(a * _dot(points, jnp.arange(1.0, d + 1.0, dtype=points.dtype)) + b)


def curvature_points(x_labeled, classes, num_classes, budget) -> np.ndarray:
  """[n_l] bool: the labeled points the curvature uses, at most ``budget`` of them.

  Every point when they fit; else, per class c, the round(n_c budget / n_l) (at least 1) points
  with the smallest pseudo-random priority, a function of each point alone (``start_vector``
  with other constants): deterministic, independent of the points' order and of the other
  classes' points, so a CV fold selects what ``fit`` on that fold selects.
  """
  classes = np.asarray(classes)
  if classes.shape[0] <= budget:
    return np.ones(classes.shape[0], bool)
  priority = np.asarray(start_vector(jnp.asarray(x_labeled, jnp.float32), 4.1414, 1.7321))
  keep = np.zeros(classes.shape[0], bool)
  for c in range(num_classes):
    members = np.nonzero(classes == c)[0]
    quota = max(1, round(members.size * budget / classes.shape[0]))
    keep[members[np.argsort(priority[members], kind="stable")[:quota]]] = True
  return keep


def curvatures(x_labeled, classes, x_unlabeled_batch, num_classes, sigma, gammas):
  """[c] ``curvature`` of the squared-loss risk of the labeled points (labels ``classes``, a
  subsample past ``MAX_KERNEL_POINTS``: ``curvature_points``) and an unlabeled batch, for c
  rows of gamma [c, k-1]."""
  batch = np.asarray(x_unlabeled_batch, np.float32)[:MAX_KERNEL_POINTS // 2]
  keep = curvature_points(x_labeled, classes, num_classes, MAX_KERNEL_POINTS - batch.shape[0])
  # Padded as ``fit`` pads (``loop.bucket_data``); the padding is class k, which weighs 0 and so
  # changes nothing (``curvature``), and a new data size reuses a compilation.
  padded, n, _ = loop.bucket_data(TrainData(np.asarray(x_labeled, np.float32)[keep],
                                            np.asarray(classes)[keep], batch), unlabeled=False)
  y = np.where(np.arange(padded.y_labeled.size) < n, padded.y_labeled, num_classes)
  counts = jnp.asarray(np.bincount(y, minlength=num_classes + 1)[:num_classes], jnp.int32)
  pos_w, neg_w = risk.subproblem_weights(jnp.asarray(y, jnp.int32), counts)
  points = jnp.concatenate([jnp.asarray(padded.x_labeled), batch])
  power = jax.vmap(functools.partial(curvature, num_labeled=y.size),
                   in_axes=(None, None, None, None, 0))
  return np.asarray(power(points, jnp.float32(sigma), pos_w, neg_w,
                          jnp.asarray(gammas, jnp.float32)))


@functools.partial(jax.jit, static_argnames=("num_labeled",))
def curvature(points, sigma, pos_w, neg_w, gamma, num_labeled):
  """lambda_max(K H) by power iteration, with the Rayleigh quotient v'HKHv / v'Hv.

  Both the quotient and the normalization read v only through H v, so points of zero weight
  (rows and columns of H that vanish) do not change the result.

  Args:
    points: [n_l + B, d] the labeled points, then the unlabeled batch.
    sigma: the Gaussian kernel's parameter (K = ``kernels.gaussian_kernel`` of the points).
    pos_w, neg_w: [k-1, n_l] subproblem weights of the labeled points (0 on unused points).
    gamma: [k-1].
    num_labeled: n_l (static).

  Returns:
    float32 scalar >= 0 (0 when H = 0).
  """
  kernel = kernels.gaussian_kernel(points, points, sigma)              # [n_l + B, n_l + B]
  start = start_vector(points)
  h = lambda v: _hessian_times(v, pos_w, neg_w, gamma, num_labeled)

  def normalized(v):
    return v / jnp.sqrt(jnp.maximum(_dot(v, h(v)), 1e-30))

  v = jax.lax.fori_loop(0, POWER_ITERATIONS, lambda _, v: normalized(_dot(kernel, h(v))),
                        normalized(start))
  hv = h(v)
  value = jnp.maximum(_dot(hv, _dot(kernel, hv)), 0.0) / jnp.maximum(_dot(v, hv), 1e-30)
  # K H = 0 up to rounding (e.g. every point identical: H annihilates K's constant range) makes
  # the normalization blow rounding noise up to inf / NaN; the curvature is then 0.
  return jnp.where(jnp.isfinite(value), value, 0.0)


def step_from_curvature(curv, lam):
  """min(STEP_SIZE_MAX, 1 / (curv + lam)), elementwise on NumPy arrays or floats."""
  return np.minimum(STEP_SIZE_MAX, 1.0 / (np.asarray(curv, np.float64) + lam))


def auto_step_size(x_labeled, y_labeled, x_unlabeled, num_classes, sigma, lam, gamma, key,
                   unlabeled_batch_size=FitConfig.unlabeled_batch_size) -> float:
  """The default eta0 of ``qsg_jax.fit`` (module docstring).

  Args:
    x_labeled: [n_l, d]; y_labeled: [n_l] int labels 0..k-1; x_unlabeled: [n_u, d].
    num_classes: k.
    sigma, lam: kernel parameter and regularization.
    gamma: scalar or [k-1].
    key: the run's PRNG key (the unlabeled batch of the curvature is drawn from it).
    unlabeled_batch_size: B.

  Returns:
    eta0 in (0, ``STEP_SIZE_MAX``].

  Example:
    >>> x = np.array([[0.0], [0.2], [0.9], [1.0]], np.float32)
    >>> eta0 = auto_step_size(x, np.array([0, 0, 1, 1]), x, 2, 8.0, 1e-3, 0.5,
    ...                       jax.random.key(0), unlabeled_batch_size=4)
    >>> bool(0 < eta0 <= STEP_SIZE_MAX)
    True
  """
  rows = unlabeled_rows(key, np.shape(x_unlabeled)[0], unlabeled_batch_size)
  gamma = np.broadcast_to(np.asarray(gamma, np.float32), (1, num_classes - 1))
  curv = curvatures(x_labeled, y_labeled, np.asarray(x_unlabeled)[np.asarray(rows)], num_classes,
                    sigma, gamma)
  return float(step_from_curvature(float(curv[0]), lam))


def task_step_sizes(key, x_labeled, x_unlabeled, pos_w, neg_w, sigma, lam, gamma, fold,
                    unlabeled_batch_size):
  """``auto_step_size`` of every CV task, equal to ``fit(step_size="auto")`` on its fold.

  A task's curvature is ``auto_step_size``'s on its fold's training points (a point's class is
  the number of splits in which it is positive). One power iteration per distinct
  (sigma, fold, gamma).

  Args:
    key: PRNG key shared by the tasks.
    x_labeled: [n_l, d]; x_unlabeled: [n_u, d].
    pos_w, neg_w: [F, k-1, n_l] fold weights (``engine.grouped.fold_weights``).
    sigma, lam: [t]; gamma: [t, k-1]; fold: [t] int.
    unlabeled_batch_size: B.

  Returns:
    [t] float32 eta0.
  """
  rows = np.asarray(unlabeled_rows(key, x_unlabeled.shape[0], unlabeled_batch_size))
  batch = np.asarray(x_unlabeled)[rows]
  k = gamma.shape[1] + 1
  eta0 = np.empty(sigma.shape[0], np.float32)
  for s in np.unique(sigma):
    for f in np.unique(fold):
      members = np.nonzero((sigma == s) & (fold == f))[0]
      if not members.size:
        continue
      combos, inverse = np.unique(gamma[members], axis=0, return_inverse=True)
      train = np.any((pos_w[f] > 0) | (neg_w[f] > 0), axis=0)
      classes = np.sum(pos_w[f][:, train] > 0, axis=0)
      curv = curvatures(np.asarray(x_labeled)[train], classes, batch, k, s, combos)
      eta0[members] = step_from_curvature(curv[inverse.reshape(-1)], lam[members])
  return eta0
