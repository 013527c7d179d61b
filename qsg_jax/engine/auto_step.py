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
(``risk.score_grads`` of the squared loss is affine in the scores). Deterministic given the data,
the hyper-parameters and the key. Tests compare it with a dense eigen-decomposition.
"""

import functools

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax.config import FitConfig
from qsg_jax.config import STEP_SIZE_MAX
from qsg_jax.engine import kernels
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.numerics import HIGHEST

POWER_ITERATIONS = 200
# The unlabeled mini-batch of the curvature is drawn from fold_in(key, _BATCH_SALT).
_BATCH_SALT = 0x5EED
_dot = functools.partial(jnp.matmul, precision=HIGHEST)


def unlabeled_rows(key, num_unlabeled, batch_size):
  """[B] indices of the unlabeled mini-batch the curvature uses (a pure function of the key)."""
  return sampling.sample_unlabeled(jax.random.fold_in(key, _BATCH_SALT), batch_size,
                                   jnp.int32(num_unlabeled))


def _hessian_times(v, pos_w, neg_w, gamma, num_labeled):
  """H v: the linear part of the affine squared-loss score gradient."""
  grads = lambda u: jnp.concatenate(risk.score_grads("squared", u[:num_labeled], u[num_labeled:],
                                                     pos_w, neg_w, gamma))
  return grads(v) - grads(jnp.zeros_like(v))


def start_vector(points):
  """[n] pseudo-random start of the power iteration, a function of each point alone.

  (So dropping zero-weight points, as a CV fold's held-out ones, changes nothing.)
  """
  d = points.shape[1]
  return jnp.sin(12.9898 * _dot(points, jnp.arange(1.0, d + 1.0, dtype=points.dtype)) + 78.233)


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
  y = jnp.asarray(y_labeled, jnp.int32)
  pos_w, neg_w = risk.subproblem_weights(y, jnp.bincount(y, length=num_classes))
  rows = unlabeled_rows(key, np.shape(x_unlabeled)[0], unlabeled_batch_size)
  points = jnp.concatenate([jnp.asarray(x_labeled, jnp.float32),
                            jnp.asarray(x_unlabeled, jnp.float32)[rows]])
  gamma = jnp.broadcast_to(jnp.asarray(gamma, jnp.float32), (num_classes - 1,))
  curv = curvature(points, jnp.float32(sigma), pos_w, neg_w, gamma, num_labeled=y.shape[0])
  return float(step_from_curvature(float(curv), lam))


def task_step_sizes(key, x_labeled, x_unlabeled, pos_w, neg_w, sigma, lam, gamma, fold,
                    unlabeled_batch_size):
  """``auto_step_size`` of every CV task, equal to ``fit(step_size="auto")`` on its fold.

  Held-out points have zero weight, so their rows of H vanish and lambda_max(K H) is that of
  the fold's training points alone. One power iteration per distinct (sigma, fold, gamma).

  Args:
    key: PRNG key shared by the tasks.
    x_labeled: [n_l, d]; x_unlabeled: [n_u, d].
    pos_w, neg_w: [F, k-1, n_l] fold weights (``engine.grouped.fold_weights``).
    sigma, lam: [t]; gamma: [t, k-1]; fold: [t] int.
    unlabeled_batch_size: B.

  Returns:
    [t] float32 eta0.
  """
  rows = unlabeled_rows(key, x_unlabeled.shape[0], unlabeled_batch_size)
  points = jnp.concatenate([jnp.asarray(x_labeled, jnp.float32),
                            jnp.asarray(x_unlabeled, jnp.float32)[rows]])
  power = functools.partial(curvature, num_labeled=x_labeled.shape[0])
  eta0 = np.empty(sigma.shape[0], np.float32)
  for s in np.unique(sigma):
    members = np.nonzero(sigma == s)[0]
    combos, inverse = np.unique(np.concatenate([fold[members, None], gamma[members]], axis=1),
                                axis=0, return_inverse=True)
    f = combos[:, 0].astype(int)
    curv = jax.vmap(power, in_axes=(None, None, 0, 0, 0))(     # one kernel for the combos
        points, jnp.float32(s), jnp.asarray(pos_w[f]), jnp.asarray(neg_w[f]),
        jnp.asarray(combos[:, 1:], jnp.float32))
    eta0[members] = step_from_curvature(np.asarray(curv)[inverse.reshape(-1)], lam[members])
  return eta0
