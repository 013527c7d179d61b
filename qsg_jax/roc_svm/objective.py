"""The ROC-SVM objective: a pairwise margin loss over (positive, negative) pairs plus a ridge.

For scores ``s_pos = f(x_i)`` of positives and ``s_neg = f(x_j)`` of negatives, the pair margin is
``m_ij = s_pos[i] - s_neg[j]`` and the ROC-SVM risk is a U-statistic over margins (paper Eq. 4):

    full U:        U_n   = 1/(n+ n-) sum_{i in I+} sum_{j in I-} l(m_ij)
    incomplete U:  U~_B  = 1/B sum_{(i, j) in D_B} l(m_ij)      (Eq. 6-7; D_B drawn with
                                                                  replacement, B = n by default)

with the hinge l(m) = [1 - m]_+ (the paper's), the squared hinge [1 - m]_+^2 or the logistic
log(1 + e^-m). Three ways to evaluate U_n exactly:

  * ``full_risk`` streams blocks of positives against all negatives, O(n+ n-) time per
    evaluation and O(pairs_per_block) memory; its gradient with respect to the scores is
    accumulated in the same pass (custom VJP), so reverse mode never stores the pairs either;
    asking for all pairs at once is checked against free memory first.
  * ``full_risk_sorted`` (hinge and squared hinge): after one sort of the negative scores, each
    positive's sum over its active negatives is a count and prefix sums, O((n+ + n-) log n-).
    This is the same U_n (not an approximation); the paper's full baseline does not use it.

``Objective`` adds the ridge: beta.beta / 2 for the linear model (Eq. 7, and Eq. 12 on Nystrom
features), or theta^T K theta / 2 for the exact kernel model (Eq. 10), where the rows of the
design are kernel rows and the penalty is theta . (K theta).

The design (rows of positives and negatives, pairs, and masks of the real entries among the
padding) is a ``qsg_jax.roc_svm.pairs.PairData``; every risk averages over real entries only.
"""

import functools
import math
from typing import Callable, NamedTuple

import jax
import jax.numpy as jnp

from qsg_jax import memory
from qsg_jax import numerics

# Default pairs per streamed block: 2^20 margins = 4 MiB per float32 array (fastest on CPU).
DEFAULT_PAIRS_PER_BLOCK = 2**20
# Arrays of one block alive at once in the streamed pass (margins, losses, derivatives).
_ARRAYS_PER_BLOCK = 3


class MarginLoss(NamedTuple):
  """A convex surrogate l(m) of the 0-1 loss 1{m <= 0} of a pair margin, and dl/dm."""
  name: str
  value: Callable  # m -> l(m), elementwise.
  deriv: Callable  # m -> dl/dm, elementwise (subgradient 0 at the hinge kink).


def _hinge(m):
  return jnp.maximum(0.0, 1.0 - m)


def _hinge_deriv(m):
  return jnp.where(1.0 - m > 0, -1.0, 0.0).astype(m.dtype)


def _squared_hinge(m):
  return jnp.square(jnp.maximum(0.0, 1.0 - m))


def _squared_hinge_deriv(m):
  return -2.0 * jnp.maximum(0.0, 1.0 - m)


def _logistic(m):
  return jnp.logaddexp(0.0, -m)


def _logistic_deriv(m):
  return -jax.nn.sigmoid(-m)


HINGE = MarginLoss("hinge", _hinge, _hinge_deriv)
SQUARED_HINGE = MarginLoss("squared_hinge", _squared_hinge, _squared_hinge_deriv)
LOGISTIC = MarginLoss("logistic", _logistic, _logistic_deriv)
MARGIN_LOSSES = {loss.name: loss for loss in (HINGE, SQUARED_HINGE, LOGISTIC)}
RISKS = ("incomplete", "full", "full_sorted")
MODELS = ("linear", "kernel")


def get_margin_loss(name):
  """The ``MarginLoss`` called ``name``: "hinge" (paper), "squared_hinge" or "logistic"."""
  if name not in MARGIN_LOSSES:
    raise ValueError(f"unknown ROC-SVM loss {name!r}; expected one of {sorted(MARGIN_LOSSES)}.")
  return MARGIN_LOSSES[name]


def incomplete_risk(s_pos, s_neg, pairs, loss="hinge", pair_valid=None):
  """Incomplete U-statistic U~_B: mean loss over the pairs D_B (paper Eq. 6-7).

  Args:
    s_pos: [n+] scores of the positives.
    s_neg: [n-] scores of the negatives.
    pairs: ``PairIndices`` of B pairs.
    loss: margin loss name.
    pair_valid: optional [B] bool mask of the real pairs (the rest is padding).

  Returns:
    Scalar risk. O(B) time and memory.
  """
  values = get_margin_loss(loss).value(s_pos[pairs.positive] - s_neg[pairs.negative])
  if pair_valid is None:
    return jnp.mean(values)
  return jnp.sum(jnp.where(pair_valid, values, 0.0)) / jnp.sum(pair_valid, dtype=values.dtype)


def positives_per_block(num_positive, num_negative, pairs_per_block):
  """How many positives one streamed block holds; ``None`` pairs_per_block means all of them."""
  if pairs_per_block is None:
    return num_positive
  return max(1, min(num_positive, int(pairs_per_block) // max(num_negative, 1)))


def check_pair_block(num_positive, num_negative, pairs_per_block, itemsize=4):
  """Refuses (``InsufficientMemoryError``) a block of pairs that would not fit in free memory.

  Args:
    num_positive: n+.
    num_negative: n-.
    pairs_per_block: margins materialized at once; None asks for all n+ x n- pairs.
    itemsize: bytes per float.

  Returns:
    The number of positives per block.
  """
  rows = positives_per_block(num_positive, num_negative, pairs_per_block)
  memory.check_allocation(
      _ARRAYS_PER_BLOCK * itemsize * rows * num_negative,
      f"the full-U ROC-SVM risk with {rows} x {num_negative} pairs per block "
      f"(n+ = {num_positive}, n- = {num_negative}, {num_positive * num_negative:,} pairs in all)",
      "Stream the pairs in smaller blocks (pairs_per_block=2**22), use risk='full_sorted' "
      "(exact, O(n log n), hinge and squared hinge), or the incomplete U-statistic "
      "(risk='incomplete').")
  return rows


@numerics.full_precision
def _stream(s_pos, s_neg, loss, pairs_per_block, with_grads):
  """One pass over blocks of positives: (sum of losses, d sum/d s_pos, d sum/d s_neg)."""
  n_pos, n_neg = s_pos.shape[0], s_neg.shape[0]
  rows = check_pair_block(n_pos, n_neg, pairs_per_block, s_pos.dtype.itemsize)
  num_blocks = math.ceil(n_pos / rows)
  padded = num_blocks * rows
  blocks = jnp.pad(s_pos, (0, padded - n_pos)).reshape(num_blocks, rows)
  valid = (jnp.arange(padded) < n_pos).reshape(num_blocks, rows)

  def body(carry, block):
    total, g_neg = carry
    s_block, valid_block = block
    margins = s_block[:, None] - s_neg[None, :]                   # [rows, n-]
    keep = valid_block[:, None]
    total = total + jnp.sum(jnp.where(keep, loss.value(margins), 0.0))
    if not with_grads:
      return (total, g_neg), None
    deriv = jnp.where(keep, loss.deriv(margins), 0.0)             # dl/dm_ij
    # Row and column sums as matrix-vector products: XLA on CPU reduces the leading axis of a
    # [rows, n-] array an order of magnitude slower than it multiplies by a ones vector.
    col_sums = jnp.ones((rows,), deriv.dtype) @ deriv
    row_sums = deriv @ jnp.ones((n_neg,), deriv.dtype)
    return (total, g_neg - col_sums), row_sums

  init = (jnp.zeros((), s_pos.dtype), jnp.zeros_like(s_neg))
  (total, g_neg), g_pos = jax.lax.scan(body, init, (blocks, valid))
  g_pos = None if g_pos is None else g_pos.reshape(-1)[:n_pos]
  return total, g_pos, g_neg


@functools.partial(jax.custom_vjp, nondiff_argnums=(2, 3))
def _pair_loss_sum(s_pos, s_neg, loss_name, pairs_per_block):
  """Sum of l(s_pos[i] - s_neg[j]) over all pairs; its VJP comes from the same streamed pass."""
  loss = get_margin_loss(loss_name)
  total, _, _ = _stream(s_pos, s_neg, loss, pairs_per_block, with_grads=False)
  return total


def _pair_loss_sum_fwd(s_pos, s_neg, loss_name, pairs_per_block):
  loss = get_margin_loss(loss_name)
  total, g_pos, g_neg = _stream(s_pos, s_neg, loss, pairs_per_block, with_grads=True)
  return total, (g_pos, g_neg)


def _pair_loss_sum_bwd(loss_name, pairs_per_block, residuals, cotangent):
  del loss_name, pairs_per_block
  g_pos, g_neg = residuals
  return cotangent * g_pos, cotangent * g_neg


_pair_loss_sum.defvjp(_pair_loss_sum_fwd, _pair_loss_sum_bwd)


def full_risk(s_pos, s_neg, loss="hinge", pairs_per_block=DEFAULT_PAIRS_PER_BLOCK,
              pos_valid=None, neg_valid=None):
  """Full U-statistic U_n over all n+ x n- pairs, streamed in blocks (paper Eq. 4).

  Padded entries get score +inf (positives) or -inf (negatives): their margins are +inf, where
  every margin loss and its derivative vanish, so they add nothing to the sum or the gradient.

  Args:
    s_pos: [n+] scores of the positives.
    s_neg: [n-] scores of the negatives.
    loss: margin loss name.
    pairs_per_block: margins computed at once (static); ``None`` materializes all n+ x n-
      pairs in one block, which is checked against free memory first.
    pos_valid: optional [n+] bool mask of the real positives.
    neg_valid: optional [n-] bool mask of the real negatives.

  Returns:
    Scalar risk (mean over real pairs); differentiable, the score gradients come from the same
    streamed pass.

  Raises:
    qsg_jax.memory.InsufficientMemoryError: one block would not fit in free memory.
  """
  get_margin_loss(loss)
  num_pos, num_neg = s_pos.shape[0], s_neg.shape[0]
  if pos_valid is not None:
    s_pos = jnp.where(pos_valid, s_pos, jnp.inf)
    num_pos = jnp.sum(pos_valid)
  if neg_valid is not None:
    s_neg = jnp.where(neg_valid, s_neg, -jnp.inf)
    num_neg = jnp.sum(neg_valid)
  total = _pair_loss_sum(s_pos, s_neg, loss, pairs_per_block)
  return total / jnp.asarray(num_pos * num_neg, total.dtype)


def full_risk_sorted(s_pos, s_neg, loss="hinge", pos_valid=None, neg_valid=None):
  """Exact full U-statistic U_n of the hinge or squared hinge in O((n+ + n-) log n-).

  Negative j is active for positive i when 1 - s_i + s_j > 0, i.e. s_j > s_i - 1. With the
  negatives sorted and prefix sums S1 = sum s_j, S2 = sum s_j^2 over the active ones (count c_i),
      hinge:          sum_j [1 - s_i + s_j]_+   = c_i (1 - s_i) + S1_i
      squared hinge:  sum_j [1 - s_i + s_j]_+^2 = c_i (1 - s_i)^2 + 2 (1 - s_i) S1_i + S2_i.
  Reverse-mode differentiation through the sort and the prefix sums gives the exact
  subgradient of ``full_risk`` (counts are piecewise constant).

  Args:
    s_pos: [n+] scores of the positives.
    s_neg: [n-] scores of the negatives.
    loss: "hinge" or "squared_hinge".
    pos_valid: optional [n+] bool mask of the real positives.
    neg_valid: optional [n-] bool mask of the real negatives.

  Returns:
    Scalar risk equal to ``full_risk`` up to rounding.
  """
  if loss not in ("hinge", "squared_hinge"):
    raise ValueError(f"full_risk_sorted handles loss 'hinge' or 'squared_hinge'; received "
                     f"{loss!r}. Use full_risk (streamed pairs) for the logistic loss.")
  if pos_valid is None:
    pos_valid = jnp.ones(s_pos.shape, bool)
  if neg_valid is None:
    neg_valid = jnp.ones(s_neg.shape, bool)
  num_pos, num_neg = jnp.sum(pos_valid), jnp.sum(neg_valid)
  # Margins are shift invariant; centering keeps the prefix sums small in float32.
  center = jax.lax.stop_gradient(jnp.sum(jnp.where(neg_valid, s_neg, 0.0)) / num_neg)
  s_pos = jnp.where(pos_valid, s_pos - center, 0.0)
  # Padded negatives sort first as -inf, never active, and add 0 to the prefix sums.
  sorted_neg = jnp.sort(jnp.where(neg_valid, s_neg - center, -jnp.inf))
  finite_neg = jnp.where(jnp.isfinite(sorted_neg), sorted_neg, 0.0)
  zero = jnp.zeros((1,), s_neg.dtype)
  prefix1 = jnp.concatenate([zero, jnp.cumsum(finite_neg)])
  first_active = jnp.searchsorted(sorted_neg, s_pos - 1.0, side="right")
  count = (s_neg.shape[0] - first_active).astype(s_pos.dtype)
  sum1 = prefix1[-1] - prefix1[first_active]
  slack = 1.0 - s_pos
  if loss == "hinge":
    per_positive = count * slack + sum1
  else:
    prefix2 = jnp.concatenate([zero, jnp.cumsum(jnp.square(finite_neg))])
    sum2 = prefix2[-1] - prefix2[first_active]
    per_positive = count * jnp.square(slack) + 2.0 * slack * sum1 + sum2
  total = jnp.sum(jnp.where(pos_valid, per_positive, 0.0))
  return total / (num_pos * num_neg).astype(total.dtype)


class Objective(NamedTuple):
  """The ROC-SVM objective as a hashable callable ``objective(params, data, lam)``.

  Hashable by value, so ``jax.jit`` with the objective as a static argument compiles once per
  configuration and shape, not once per call.
  """
  loss: str = "hinge"              # margin loss: "hinge", "squared_hinge", "logistic".
  risk: str = "incomplete"         # "incomplete" (D_B), "full" (streamed), "full_sorted".
  model: str = "linear"            # "linear": ridge beta.beta; "kernel": theta^T K theta.
  pairs_per_block: int = DEFAULT_PAIRS_PER_BLOCK   # streamed full risk only; None: all pairs.

  def check(self):
    """Raises ``ValueError`` for an unknown loss, risk or model; returns self."""
    get_margin_loss(self.loss)
    if self.risk not in RISKS:
      raise ValueError(f"unknown risk {self.risk!r}; expected one of {RISKS}.")
    if self.model not in MODELS:
      raise ValueError(f"unknown model {self.model!r}; expected one of {MODELS}.")
    if self.risk == "full_sorted" and self.loss == "logistic":
      full_risk_sorted(jnp.zeros(1), jnp.zeros(1), self.loss)  # raises the explanation
    return self

  def risk_of_scores(self, s_pos, s_neg, data):
    """The U-statistic (full or incomplete) of the given scores of ``data``'s rows."""
    if self.risk == "incomplete":
      return incomplete_risk(s_pos, s_neg, data.pairs, self.loss, data.pair_valid)
    if self.risk == "full":
      return full_risk(s_pos, s_neg, self.loss, self.pairs_per_block, data.pos_valid,
                       data.neg_valid)
    return full_risk_sorted(s_pos, s_neg, self.loss, data.pos_valid, data.neg_valid)

  @jax.default_matmul_precision("highest")
  def __call__(self, params, data, lam):
    """Objective value: risk + lam / 2 * penalty (paper Eq. 7, 10 and 12).

    Args:
      params: [p] coefficients beta (linear) or theta (kernel: one per row of x_pos then
        x_neg, padding included; K's padded rows and columns are zero).
      data: ``PairData``.
      lam: scalar regularization lambda.

    Returns:
      Scalar objective.
    """
    s_pos = data.x_pos @ params
    s_neg = data.x_neg @ params
    if self.model == "linear":
      penalty = params @ params
    else:
      penalty = params @ jnp.concatenate([s_pos, s_neg])   # theta^T K theta
    return self.risk_of_scores(s_pos, s_neg, data) + 0.5 * lam * penalty
