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

The DSG step (``engine.step.dsg_step``). Every g_j lives on THE SAME random feature blocks
phi_i as f: the state carries f and the g_j as k heads of one coefficient array [T, 2m, k], so
iteration i adds one block per head at no extra feature cost (cos and sin of the same phases
serve all of them):
  * f's block is exactly QS3ORAO's (Eq. 13): -eta times the gradient of the mean risk in f,
    whose score gradients are the mean over j of dR^j/ds at s_j = f + g_j; f decays by
    (1 - eta lam) (Eq. 14).
  * g_j's block is preconditioned by k-1 (it uses dR^j itself, not dR^j / (k-1)), so a
    correction learns at f's rate; a positive diagonal preconditioner does not move the fixed
    point, which is still the minimizer of the objective above. Its regularizer is applied as a
    proximal shrinkage g <- (g - eta grad) / (1 + eta lam_g) (``update.dsg_update``): the
    explicit decay 1 - eta lam_g is negative once eta lam_g > 1 and diverges beyond 2, exactly
    the large-lam_g regime that must recover QS3ORAO; the proximal form agrees with it to first
    order, has the same fixed point, and is stable for every lam_g.
    ``split_lam = inf`` gives shrinkage 0 and zero blocks: g is frozen at exactly 0 and f's
    coefficients equal QS3ORAO's up to float32 rounding (tests check this).
Each head has its own running scale, and the score caches keep every head current: labeled
[k, n_l], and the unlabeled pool [k, pool], scored through earlier blocks in one blocked matrix
product (``scoring.block_sums``). Extra cost per step: O((k-1) m (n_l + pool)) multiply-adds, no
trigonometry.

Prediction. Ordinal prediction and the thresholds keep using f alone (the thresholds order one
score); the corrections serve per-split ranking: the AUC of split j is computed with f + g_j
(``split_scores`` / ``qsg_jax.split_scores``, [n, k-1]). The exact minimizer of the objective
over the kernel expansion is ``qsg_jax.baselines.fit_exact_split``.

Limits: one device only (``engine.train_sharded`` refuses a config with corrections); model
files (``qsg_jax.io``) store f only and refuse a fit with corrections.
"""

import functools

import jax
import jax.numpy as jnp

from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import PREDICT_CHUNK
from qsg_jax import numerics
from qsg_jax.engine import features
from qsg_jax.engine.scoring import check_scoring
from qsg_jax.engine.scoring import chunked_block_sums
from qsg_jax.engine.types import Model


def stacked_coef(coef: jax.Array, split_coef: jax.Array) -> jax.Array:
  """[T, 2m, 1 + (k-1)]: f's stored blocks, then every g_j's (one product scores them all)."""
  return jnp.concatenate([coef[:, :, None], split_coef], axis=2)


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
  check_scoring(model, x, block_group)
  model, x = numerics.as_float32((model, x))
  m = model.coef.shape[1] // 2
  both = chunked_block_sums(
      lambda blocks: features.sample_frequency_blocks(model.feature_key, blocks, m, x.shape[1],
                                                      model.sigma),
      stacked_coef(model.coef, model.split_coef), x, block_group, predict_chunk)
  return model.scale * both[:, :1] + model.split_scale * both[:, 1:]
