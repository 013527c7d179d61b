"""Per-split corrections: split j ranks with f + g_j, one shared f plus a small g_j per split.

QS3ORAO shares ONE ranking function f across the k-1 ordinal splits; M-SAMULT fits k-1
independent functions. On sgemm the shared model trails M-SAMULT by about 0.013 ordinal AUC
while sitting within 0.001 of its own exact minimizer (``baselines.fit_exact_qsg``): the gap is
the model class, not the optimizer. This extension interpolates between the two classes:

    min_{f, g_1..g_{k-1}}  (1/(k-1)) sum_j [ R^j(f + g_j) + lam_g/2 ||g_j||^2 ] + lam/2 ||f||^2,

with R^j the per-split risk of ``engine.risk.subproblem_risk`` (ordinal paper Eq. 7) and
f, g_j in the same RKHS. lam_g -> infinity forces g_j = 0 (QS3ORAO); lam_g -> 0 leaves each
f + g_j free, k-1 independent functions (M-SAMULT-like, each regularized only through the
shared part). Why this form: the corrections pay only for what a split does *differently* from
the others, so a large lam_g keeps the splits' common ranking in f (statistically cheaper) while
small differences between splits stay affordable; the penalty is inside the mean over splits so
that lam_g and lam are on the same per-split scale.

The DSG step (``train_chunk``). Every g_j lives on THE SAME random feature blocks phi_i as f, so
iteration i adds one block [2m] for f and one block [k-1, 2m] for the g_j at no extra feature
cost (cos and sin of the same phases serve all of them):
  * f's block is exactly QS3ORAO's (Eq. 13): -eta times the gradient of the mean risk in f,
    whose score gradients are the mean over j of dR^j/ds at s_j = f + g_j; f decays by
    (1 - eta lam) (Eq. 14) with its own running scale, as in ``update.dsg_update``.
  * g_j's block is preconditioned by k-1 (it uses dR^j itself, not dR^j / (k-1)), so a
    correction learns at f's rate; a positive diagonal preconditioner does not move the fixed
    point, which is still the minimizer of the objective above. Its regularizer is applied as a
    proximal shrinkage g <- (g - eta grad) / (1 + eta lam_g) (``update.correction_update``), with
    a second running scale: the explicit decay 1 - eta lam_g is negative once eta lam_g > 1 and
    diverges beyond 2, exactly the large-lam_g regime that must recover QS3ORAO; the proximal
    form agrees with it to first order, has the same fixed point, and is stable for every lam_g.
    ``split_lam = inf`` gives shrinkage 0 and zero blocks: g is frozen at exactly 0 and f's
    coefficients equal QS3ORAO's up to float32 rounding (tests check this).
The score caches are kept current for the g_j too: labeled [k-1, n_l], and the unlabeled pool
[k-1, pool]; a chunk's pool is scored through earlier blocks with coefficients
[T, 2m, 1 + (k-1)] in one blocked matrix product that gives f and every g_j
(``scoring.block_sums``). Extra cost per step: O((k-1) m (n_l + pool)) multiply-adds, no
trigonometry.

Prediction. Ordinal prediction and the thresholds keep using f alone (the thresholds order one
score); the corrections serve per-split ranking: the AUC of split j is computed with f + g_j
(``split_scores`` / ``qsg_jax.split_scores``, [n, k-1]). The exact minimizer of the objective
over the kernel expansion is ``qsg_jax.baselines.fit_exact_split``.

Limits: one device only (``engine.train_sharded`` refuses a config with corrections); model
files (``qsg_jax.io``) store f only and refuse a fit with corrections.
"""

import functools
from typing import Tuple

import jax
import jax.numpy as jnp

from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import PREDICT_CHUNK
from qsg_jax.engine import features
from qsg_jax.engine import risk
from qsg_jax.engine import sampling
from qsg_jax.engine import update as update_lib
from qsg_jax.engine.scoring import chunked_block_sums
from qsg_jax.engine.scoring import scores_through_blocks
from qsg_jax.engine.step import step_size
from qsg_jax.engine.types import EngineConfig
from qsg_jax.engine.types import Hyperparams
from qsg_jax.engine.types import Model
from qsg_jax.engine.types import State
from qsg_jax.engine.types import TrainData
from qsg_jax.numerics import HIGHEST


def check_split_lam(config: EngineConfig, hyper: Hyperparams) -> None:
  """Raises (at trace time) when ``hyper.split_lam`` and ``config.split_corrections`` disagree."""
  if config.split_corrections and hyper.split_lam is None:
    raise ValueError("EngineConfig.split_corrections=True needs Hyperparams.split_lam (lam_g > 0, "
                     "or inf to freeze the corrections at 0); received split_lam=None.")
  if not config.split_corrections and hyper.split_lam is not None:
    raise ValueError("Hyperparams.split_lam is set but EngineConfig.split_corrections=False, so it "
                     "would be ignored: build the config with split_corrections=True, or pass "
                     "split_lam=None.")


def init_corrections(state: State, config: EngineConfig, num_labeled: int,
                     num_cached: int) -> State:
  """``state`` with zero corrections: g_j = 0 on every labeled (and cached unlabeled) point."""
  s = config.num_classes - 1
  return state._replace(
      split_coef=jnp.zeros((config.num_steps, 2 * config.num_frequencies, s), jnp.float32),
      split_scale=jnp.ones((), jnp.float32),
      g_labeled=jnp.zeros((s, num_labeled), jnp.float32),
      v_unlabeled=jnp.zeros((s, num_cached), jnp.float32))


def stacked_coef(coef: jax.Array, split_coef: jax.Array) -> jax.Array:
  """[T, 2m, 1 + (k-1)]: f's stored blocks, then every g_j's (one product scores them all)."""
  return jnp.concatenate([coef[:, :, None], split_coef], axis=2)


def train_chunk(state: State, data: TrainData, hyper: Hyperparams, config: EngineConfig,
                samples: sampling.StepSample) -> Tuple[State, dict]:
  """``loop.train_chunk`` with per-split corrections: C iterations of the f and g_j blocks.

  Args:
    state: ``State`` with the correction fields (``init`` with ``config.split_corrections``).
    data: ``TrainData``.
    hyper: ``Hyperparams`` with ``split_lam``.
    config: static ``EngineConfig`` (``split_corrections=True``, one device).
    samples: the chunk's samples (``loop._chunk_samples``).

  Returns:
    (new state, metrics of [C] arrays: "eta", "max_abs_score" = max |f| and |f + g_j| over the
    labeled points).
  """
  check_split_lam(config, hyper)
  if config.axis_name is not None:
    raise ValueError("per-split corrections run on one device only: use engine.train (or "
                     "qsg_jax.fit without a mesh), or split_lam=None for sharded training.")
  c, m = config.chunk_size, config.num_frequencies
  if config.cache_unlabeled:
    x_pool, u_pool, v_pool = data.x_unlabeled, state.u_unlabeled, state.v_unlabeled
    batch_rows = samples.unlabeled
  else:
    x_pool = data.x_unlabeled[samples.unlabeled.reshape(-1)]
    # f and every g_j of the chunk's points through earlier blocks: one blocked product.
    both = scores_through_blocks(state.feature_key, stacked_coef(state.coef, state.split_coef),
                                 state.step, x_pool, hyper.sigma, config.block_group)
    u_pool, v_pool = both[:, 0], both[:, 1:].T                         # [pool], [k-1, pool]
    batch_rows = jnp.arange(x_pool.shape[0], dtype=jnp.int32).reshape(c, -1)
  num_labeled = data.x_labeled.shape[0]
  dot = functools.partial(jnp.matmul, precision=HIGHEST)

  def step(carry, r):
    coef, scale, f_labeled, u_pool, split_coef, split_scale, g_labeled, v_pool = carry
    i = state.step + r
    phi_labeled, phi_pool = features.block_features_of(                # [n_l, 2m], [pool, 2m]
        state.feature_key, i, (data.x_labeled, x_pool), m, hyper.sigma)
    slots, rows = samples.labeled[r], batch_rows[r]
    d_slots, d_u = risk.split_score_grads(
        config.loss, f_labeled[slots], scale * u_pool[rows], g_labeled[:, slots],
        split_scale * v_pool[:, rows], state.pos_w, state.neg_w, hyper.gamma)
    d_labeled = jnp.zeros((d_slots.shape[0], num_labeled), d_slots.dtype).at[:, slots].add(d_slots)
    grad_g = update_lib.split_functional_gradient(d_labeled, phi_labeled, d_u, phi_pool[rows])
    grad_f = jnp.mean(grad_g, axis=0)      # the mean risk's gradient: linear in the d's
    eta = step_size(config, hyper, i)
    new = update_lib.dsg_update(coef, scale, u_pool, i, grad_f, eta, hyper.lam)
    f_labeled = new.decay * f_labeled + dot(phi_labeled, new.alpha)
    u_pool = new.partial + dot(phi_pool, new.coef[i])
    new_g = update_lib.correction_update(split_coef, split_scale, v_pool, i, grad_g, eta,
                                         hyper.split_lam)
    g_labeled = new_g.decay * g_labeled + dot(new_g.alpha, phi_labeled.T)
    v_pool = new_g.partial + dot(new_g.coef[i].T, phi_pool.T)
    largest = jnp.maximum(jnp.max(jnp.abs(f_labeled)),
                          jnp.max(jnp.abs(f_labeled[None, :] + g_labeled)))
    metrics = {"eta": eta, "max_abs_score": largest}
    return (new.coef, new.scale, f_labeled, u_pool, new_g.coef, new_g.scale, g_labeled,
            v_pool), metrics

  carry = (state.coef, state.scale, state.f_labeled, u_pool, state.split_coef, state.split_scale,
           state.g_labeled, v_pool)
  carry, metrics = jax.lax.scan(step, carry, jnp.arange(c))
  coef, scale, f_labeled, u_pool, split_coef, split_scale, g_labeled, v_pool = carry
  state = state._replace(step=state.step + c, coef=coef, scale=scale, f_labeled=f_labeled,
                         split_coef=split_coef, split_scale=split_scale, g_labeled=g_labeled)
  if config.cache_unlabeled:
    state = state._replace(u_unlabeled=u_pool, v_unlabeled=v_pool)
  return state, metrics


@functools.partial(jax.jit, static_argnames=("block_group", "predict_chunk"))
def split_scores(model: Model, x: jax.Array, block_group: int = BLOCK_GROUP,
                 predict_chunk: int = PREDICT_CHUNK) -> jax.Array:
  """Per-split ranking scores f(x) + g_j(x) of a model with corrections: pure and jittable.

  ``qsg_jax.split_scores`` is the checked version for a ``FitResult``.

  Args:
    model: ``Model`` whose ``split_coef`` is set (``model_of`` of a state with corrections).
    x: [n, d] float32 points.
    block_group: blocks per matrix product (must divide T).
    predict_chunk: points per matrix product.

  Returns:
    [n, k-1] float32 scores; column j ranks split j (classes <= j against > j).
  """
  if model.split_coef is None:
    raise ValueError("the model has no per-split corrections (trained with split_lam=None); its "
                     "per-split scores are f itself: use engine.model_scores.")
  if x.ndim != 2:
    raise ValueError(f"x must have shape [n, d]; received {x.shape}.")
  if model.coef.shape[0] % block_group:
    raise ValueError(f"block_group={block_group} must divide the model's {model.coef.shape[0]} "
                     "blocks; pass config.block_group of the run that trained it.")
  m = model.coef.shape[1] // 2
  both = chunked_block_sums(
      lambda blocks: features.sample_frequency_blocks(model.feature_key, blocks, m, x.shape[1],
                                                      model.sigma),
      stacked_coef(model.coef, model.split_coef), x, block_group, predict_chunk)
  return model.scale * both[:, :1] + model.split_scale * both[:, 1:]
