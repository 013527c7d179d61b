"""The pairs of the ROC-SVM: the sampled design D_B and the padded rows it indexes.

``sample_pairs`` draws the B (positive, negative) index pairs of the incomplete U-statistic
(paper Eq. 7). ``make_pair_data`` packs the positives' and negatives' rows and the pairs into a
``PairData``, padded to bucketed lengths (``padded_length``) with boolean masks marking the real
entries, so data sets whose class sizes differ slightly (repetitions, cross-validation folds)
share one compiled training loop.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from qsg_jax import _validation as validation
from qsg_jax import numerics


class PairIndices(NamedTuple):
  """B (positive, negative) index pairs: the design D_B of the incomplete U-statistic."""
  positive: jax.Array  # [B] int32 indices into the positives.
  negative: jax.Array  # [B] int32 indices into the negatives.


def sample_pairs(key, num_positive, num_negative, num_pairs):
  """Draws D_B: ``num_pairs`` pairs uniformly with replacement from I+ x I- (paper Eq. 7).

  ``padded_length(num_pairs)`` pairs are drawn on the device and the first ``num_pairs`` kept,
  so every B in one length bucket (cross-validation folds, repetitions) shares one compiled
  sampler; the pairs are still independent and uniform.

  Args:
    key: PRNG key.
    num_positive: n+.
    num_negative: n-.
    num_pairs: B.

  Returns:
    ``PairIndices`` with two [B] int32 arrays.
  """
  num_pairs = validation.check_count("num_pairs", num_pairs)
  if min(num_positive, num_negative, num_pairs) < 1:
    raise ValueError(f"need n+ >= 1, n- >= 1 and B >= 1; received n+={num_positive}, "
                     f"n-={num_negative}, B={num_pairs}.")
  drawn = _sample_pairs(key, jnp.int32(num_positive), jnp.int32(num_negative),
                        padded_length(num_pairs))
  # Cut on the host: a device slice would compile once per B.
  return PairIndices(*(jnp.asarray(np.asarray(a)[:num_pairs]) for a in drawn))


@functools.partial(jax.jit, static_argnums=3)
def _sample_pairs(key, num_positive, num_negative, num_pairs):
  # Class sizes are traced: one compilation per B, whatever the split of the classes.
  key_pos, key_neg = jax.random.split(key)
  return PairIndices(jax.random.randint(key_pos, (num_pairs,), 0, num_positive, jnp.int32),
                     jax.random.randint(key_neg, (num_pairs,), 0, num_negative, jnp.int32))


class PairData(NamedTuple):
  """Rows of the design for the positives and negatives, the sampled pairs, and their masks."""
  x_pos: jax.Array       # [P, p] positives' rows (kernel model: kernel rows), padded to P.
  x_neg: jax.Array       # [N, p] negatives' rows, padded to N.
  pairs: PairIndices     # [B'] pairs (incomplete risk only), padded to B'.
  pos_valid: jax.Array   # [P] bool, real positives (the first n+).
  neg_valid: jax.Array   # [N] bool, real negatives (the first n-).
  pair_valid: jax.Array  # [B'] bool, real pairs (the first B).


def padded_length(n, buckets_per_octave=16, min_step=64):
  """The smallest multiple of max(min_step, 2^(bit_length(n) - 1) / buckets) that is >= n
  (``numerics.bucket_rows`` with ``per_octave=buckets_per_octave``, for n >= 1, min_step >= 8).

  Lengths in one bucket share a compiled training loop: n = 1000 and n = 1010 both give 1024,
  and every n <= 64 gives 64. Padding is at most max(min_step - 1, n / buckets) entries.
  ``buckets_per_octave`` and ``min_step`` must be powers of two.
  """
  return numerics.bucket_rows(int(n), per_octave=buckets_per_octave, min_step=min_step)


def _pad_rows(x, length):
  """Zero rows appended on the host (NumPy), so that no shape-specific kernel is compiled."""
  x = np.asarray(x)
  return np.concatenate([x, np.zeros((length - x.shape[0],) + x.shape[1:], x.dtype)])


def make_pair_data(x_pos, x_neg, pairs, pad=True):
  """``PairData`` of the given rows and pairs, padded to bucketed lengths when ``pad``.

  Args:
    x_pos: [n+, p] positives' rows.
    x_neg: [n-, p] negatives' rows.
    pairs: ``PairIndices`` into them.
    pad: pad rows and pairs to ``padded_length`` (zero rows, pair (0, 0)), masked as not real.

  Returns:
    ``PairData``.
  """
  n_pos, n_neg, b = x_pos.shape[0], x_neg.shape[0], pairs.positive.shape[0]
  lengths = [padded_length(k) if pad else k for k in (n_pos, n_neg, b)]
  data = PairData(_pad_rows(x_pos, lengths[0]), _pad_rows(x_neg, lengths[1]),
                  PairIndices(_pad_rows(pairs.positive, lengths[2]),
                              _pad_rows(pairs.negative, lengths[2])),
                  np.arange(lengths[0]) < n_pos, np.arange(lengths[1]) < n_neg,
                  np.arange(lengths[2]) < b)
  return jax.device_put(data)
