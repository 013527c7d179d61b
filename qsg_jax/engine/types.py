"""The engine's types: static ``EngineConfig`` (checks itself), traced ``Hyperparams``, ``State``.

``EngineConfig`` holds what fixes shapes and compiled code (counts, sizes, the loss, a schedule
callable); it is hashable and passed to ``jax.jit`` as a static argument. ``Hyperparams`` holds the
numbers a cross-validation grid varies (sigma, lam, gamma, the initial step); they are traced, so
one compilation serves a whole grid and ``jax.vmap`` runs many settings at once.
"""

import dataclasses
import operator
import warnings
from typing import Callable, NamedTuple, Optional, Union

import jax

from qsg_jax.config import BLOCK_GROUP
from qsg_jax.config import CHUNK_SIZE
from qsg_jax.config import FitConfig
from qsg_jax.config import PREDICT_CHUNK
from qsg_jax import _validation as validation
from qsg_jax import errors
from qsg_jax.engine import losses as losses_lib

# Data sizes per doubling that compile ``train`` anew (``loop.bucket_data``: rows padded to
# ``numerics.bucket_rows(n, per_octave=4)``, at most 25 % more).
BUCKETS_PER_OCTAVE = 4

# A step size: a number (the initial step eta0 of ``inverse_time_schedule``) or a schedule
# callable step -> eta (optax schedules work), as optax's ``ScalarOrSchedule``.
ScalarOrSchedule = Union[float, jax.Array, Callable[[jax.Array], jax.Array]]


def _count(name, value, minimum=1, allow_none=False):
  """``value`` as a Python int >= ``minimum`` (or None when allowed), else a clear error."""
  if value is None and allow_none:
    return None
  try:
    number = operator.index(value)
  except TypeError:
    raise TypeError(f"EngineConfig.{name} must be an integer; received {value!r} of type "
                    f"{type(value).__name__}.") from None
  if number < minimum:
    raise ValueError(f"EngineConfig.{name} must be >= {minimum}; received {number}.")
  return int(number)


@dataclasses.dataclass(frozen=True)
class EngineConfig:
  """Static configuration (shapes, counts, functions); hashable, passed to jit as static.

  Every field is checked when the config is built; ``make_config`` picks chunk and group sizes
  that divide ``num_steps`` for you.
  """
  num_classes: int                      # k >= 2; k = 2 is QSG-S2AUC.
  num_steps: int                        # T iterations = T feature blocks.
  num_frequencies: int = FitConfig.num_frequencies        # m frequencies per block (2m features).
  labeled_batch_size: Optional[int] = FitConfig.labeled_batch_size  # b per class; None: all.
  unlabeled_batch_size: int = FitConfig.unlabeled_batch_size  # B unlabeled points per iteration.
  loss: Union[str, losses_lib.PairwiseLoss] = FitConfig.loss  # pairwise loss (qsg_jax.losses).
  schedule: Optional[Callable] = None   # step -> eta; None: eta0 / (1 + eta0 lam t) from hyper.
  chunk_size: int = CHUNK_SIZE  # C iterations whose samples are drawn up front.
  block_group: int = BLOCK_GROUP  # feature blocks per matrix product when scoring.
  predict_chunk: int = PREDICT_CHUNK  # points per matrix product when scoring.
  num_shards: int = 1                   # strata of the unlabeled set; = devices when sharded.
  cache_unlabeled: bool = False         # keep f on every unlabeled point (small n_u).
  split_corrections: bool = False       # rank split j with f + g_j (``engine.corrections``);
                                        # then Hyperparams.split_lam must be set.
  axis_name: Optional[str] = None       # mesh axis of the unlabeled strata (set by sharding).

  def __post_init__(self):
    set_ = lambda name, value: object.__setattr__(self, name, value)
    set_("num_classes", _count("num_classes", self.num_classes, minimum=2))
    for name in ("num_steps", "num_frequencies", "unlabeled_batch_size", "chunk_size",
                 "block_group", "predict_chunk", "num_shards"):
      set_(name, _count(name, getattr(self, name)))
    set_("labeled_batch_size", _count("labeled_batch_size", self.labeled_batch_size,
                                      allow_none=True))
    losses_lib.get_loss(self.loss)   # unknown names raise here, not inside jit
    if self.schedule is not None and not callable(self.schedule):
      raise TypeError(f"EngineConfig.schedule must be a callable step -> eta (an optax schedule "
                      f"works) or None; received {self.schedule!r}. A constant step c is "
                      "`lambda step: c`; the default schedule takes its eta0 from Hyperparams.")
    if self.num_steps % self.chunk_size:
      raise ValueError(f"EngineConfig.chunk_size={self.chunk_size} must divide num_steps="
                       f"{self.num_steps}; qsg_jax.engine.make_config picks a divisor for you.")
    if self.chunk_size % self.block_group:
      raise ValueError(f"EngineConfig.block_group={self.block_group} must divide chunk_size="
                       f"{self.chunk_size}; qsg_jax.engine.make_config picks a divisor for you.")
    if self.unlabeled_batch_size % self.num_shards:
      raise ValueError(f"EngineConfig.unlabeled_batch_size={self.unlabeled_batch_size} must be "
                       f"a multiple of num_shards={self.num_shards} (each stratum contributes "
                       "the same number of points per step).")
    set_("cache_unlabeled", bool(self.cache_unlabeled))
    set_("split_corrections", bool(self.split_corrections))

  def replace(self, **changes) -> "EngineConfig":
    """A copy with ``changes`` applied (and checked again)."""
    return dataclasses.replace(self, **changes)


def _largest_divisor_at_most(n, cap):
  return max(c for c in range(1, min(n, max(cap, 1)) + 1) if n % c == 0)


def make_config(num_classes: int, num_steps: int, *, chunk_size: int = CHUNK_SIZE,
                block_group: int = BLOCK_GROUP, **kwargs) -> EngineConfig:
  """``EngineConfig`` with chunk and group sizes lowered to divisors of ``num_steps``.

  Chunking changes speed only, never the coefficients. Warns when ``num_steps`` has no divisor
  near ``chunk_size`` (a prime T forces chunks of one step: several times slower).

  Example:
    >>> make_config(5, 1000).chunk_size, make_config(5, 1000).block_group
    (25, 5)
  """
  num_steps = _count("num_steps", num_steps)
  chunk_size = _count("chunk_size", chunk_size)
  chunk = _largest_divisor_at_most(num_steps, chunk_size)
  if chunk < min(chunk_size, num_steps) / 4:
    suggestion = (num_steps // chunk_size + 1) * chunk_size
    warnings.warn(f"num_steps={num_steps} has no divisor near chunk_size={chunk_size}, so "
                  f"chunks of {chunk} steps are used, which trains several times slower. "
                  f"Use a num_steps with many divisors, e.g. {suggestion}.",
                  errors.SlowConfigWarning, stacklevel=validation.outside_stacklevel())
  group = _largest_divisor_at_most(chunk, _count("block_group", block_group))
  return EngineConfig(num_classes=num_classes, num_steps=num_steps, chunk_size=chunk,
                      block_group=group, **kwargs)


class Hyperparams(NamedTuple):
  """Numeric hyper-parameters (arrays: may be traced, vmapped over a grid)."""
  sigma: jax.Array                  # scalar, Gaussian kernel k(x, x') = exp(-sigma ||x - x'||^2).
  lam: jax.Array                    # scalar, regularization lambda.
  gamma: jax.Array                  # [k-1], PN vs PU+NU trade-off per subproblem.
  eta0: Optional[jax.Array] = None  # scalar initial step of the default schedule, or None when
                                    # EngineConfig.schedule is set (exactly one of the two).
  split_lam: Optional[jax.Array] = None  # scalar lam_g > 0 (inf: g frozen at 0) of the per-split
                                         # corrections; set iff EngineConfig.split_corrections.


class TrainData(NamedTuple):
  x_labeled: jax.Array    # [n_l, d] float32.
  y_labeled: jax.Array    # [n_l] int32 in 0..k-1, every class present.
  x_unlabeled: jax.Array  # [n_u, d] float32, n_u >= 1 (sharded: the padded strata layout).


class State(NamedTuple):
  """Training state after ``step`` iterations: everything the update needs, computed by ``init``.

  The state trains h heads on the same feature blocks: f alone (h = 1), or f and the k-1
  per-split corrections g_j (h = k, ``EngineConfig.split_corrections``); head 0 is always f.
  Head h's actual blocks are ``head_scale[h] * head_coef[:, :, h]`` (Eq. 14 as one running
  scalar). The properties below read one part: ``coef``, ``scale``, ``f_labeled`` (f) and
  ``split_coef``, ``split_scale``, ``g_labeled`` (the g_j; None without corrections).
  """
  step: jax.Array            # int32 scalar, iterations done.
  head_coef: jax.Array       # [T, 2m, h] float, each head's blocks / its scale (rows >= step 0).
  head_scale: jax.Array      # [h] float, running products of the decays since renormalization.
  head_labeled: jax.Array    # [h, n_l] float, each head's current score on every labeled point.
  head_unlabeled: jax.Array  # [h, n_u] float, score / scale of every unlabeled point if cached,
                             # else [h, 0].
  feature_key: jax.Array     # PRNG key of the feature blocks.
  sample_key: jax.Array      # PRNG key of the mini-batches.
  class_order: jax.Array     # [n_l] int32, labeled indices sorted by class (padding last).
  class_offsets: jax.Array   # [k] int32, start of each class in ``class_order``.
  class_counts: jax.Array    # [k] int32, labeled points per class.
  pos_w: jax.Array           # [k-1, S] float, positive weights P_j of the labeled slots.
  neg_w: jax.Array           # [k-1, S] float, negative weights N_j.
  num_unlabeled: jax.Array   # int32 scalar, n_u (without the padding of a sharded or bucket
                             # layout: rows past it are never sampled).
  sigma: jax.Array           # float scalar, the kernel parameter of the blocks (0 before any).

  coef = property(lambda self: self.head_coef[..., 0])           # [T, 2m] f's blocks / scale.
  scale = property(lambda self: self.head_scale[..., 0])         # f's running scale.
  f_labeled = property(lambda self: self.head_labeled[..., 0, :])  # [n_l] f.
  u_unlabeled = property(lambda self: self.head_unlabeled[..., 0, :])  # [n_u] or [0].
  split_coef = property(lambda self: self._corrected and self.head_coef[..., 1:])
  split_scale = property(lambda self: self._corrected and self.head_scale[..., -1])
  g_labeled = property(lambda self: self._corrected and self.head_labeled[..., 1:, :])
  _corrected = property(lambda self: None if self.head_scale.shape[-1] == 1 else True)


class Model(NamedTuple):
  """What prediction needs: f(x) = scale * sum_j coef_j . phi_j(x) (and the corrections g_j)."""
  feature_key: jax.Array  # PRNG key of the feature blocks.
  coef: jax.Array         # [T, 2m] float32.
  scale: jax.Array        # float32 scalar.
  sigma: jax.Array        # float32 scalar.
  split_coef: Optional[jax.Array] = None   # [T, 2m, k-1] float32 corrections g_j / split_scale,
                                           # or None (plain QS3ORAO).
  split_scale: Optional[jax.Array] = None  # float32 scalar, or None.
