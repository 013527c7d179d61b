"""The precision rules every computation of the method follows, defined once.

HIGHEST: every matrix product of the method (features, score gradients, updates, scoring, the
exact kernels, the grouped CV, the default step) runs at full float32 precision. On GPUs (TF32)
and TPUs (bf16 passes) the default precision of a float32 product is lower: random Fourier phases
omega . x and the sums over thousands of feature blocks then drift by about 1e-3 relative
(measured on an H100: coefficients 2e-4 away from the literal algorithm instead of 2e-7). CPUs
are unaffected. ``tests/test_engine.py`` walks the jaxpr of every path and fails on a product
below this precision.

float32: the method computes in float32 whatever ``jax_enable_x64`` says (its tolerances,
MAX_PHASE and the cos / sin polynomials are float32's); ``as_float32`` casts at the entry points.

MAX_PHASE: ``engine.features.cos_sin`` is accurate to 1.1e-7 for |omega . x| <= 2^19; beyond it
a float32 phase has lost its fractional part (ulp(2^19) = 1/16 rad), so the features are NaN and
the boundary checks refuse such inputs with a message to rescale them.

``one_blas_thread``: every host-side BLAS / LAPACK call of the library (NumPy, SciPy, jaxlib's
CPU linear algebra) that runs beside XLA runs on one thread.

``in_row_buckets``: the checked entry points that score or featurize points (``decision_function``,
``split_scores``, the direct solver's features and scores) pass them through jitted programs in
zero-padded chunks of a power-of-two number of rows, so a new number of points reuses a compiled
program instead of compiling one (each row's result does not depend on its chunk:
``engine.scoring.ROW_TILE``).
"""

from typing import Optional

import jax
import jax.numpy as jnp
import numpy as np
import threadpoolctl

HIGHEST = jax.lax.Precision.HIGHEST
MAX_PHASE = 2.0**19
_BLAS_CONTROLLER = []   # one threadpoolctl.ThreadpoolController, made on first use


def full_precision(fn):
  """Decorator: every matrix product inside ``fn`` at HIGHEST precision (the rule above, for
  functions outside the engine: the baselines, the ROC-SVM, online pairwise). TF32 / bf16
  products on GPUs and TPUs moved exact-baseline scores by 1e-2 and Nystrom scores by 4e-3
  (H200, 2026-11-27)."""
  return jax.default_matmul_precision("highest")(fn)


def one_blas_thread():
  """Context with host BLAS / LAPACK (NumPy, SciPy, jaxlib's CPU eigh) on one thread.

  Their OpenBLAS worker threads spin against XLA's on a small machine: a 512 x 512 float64
  ``eigh`` took 2.0 s with the default threads on 2 cores while XLA had just run, 25 ms with
  one (a 300 x 300 one 1.3 s against 14 ms). The controller is made once:
  ``threadpoolctl.threadpool_limits`` scans the loaded libraries on every call (10-35 ms each),
  ``ThreadpoolController.limit`` 0.1 ms.
  """
  if not _BLAS_CONTROLLER:
    _BLAS_CONTROLLER.append(threadpoolctl.ThreadpoolController())
  return _BLAS_CONTROLLER[0].limit(limits=1, user_api="blas")


def as_float32(tree):
  """``tree`` with every floating leaf (arrays and Python floats) as a float32 array."""
  floating = lambda a: jnp.issubdtype(jnp.result_type(a), jnp.floating)
  return jax.tree.map(lambda a: jnp.asarray(a, jnp.float32) if floating(a) else a, tree)


def bucket_rows(n: int, cap: Optional[int] = None, per_octave: int = 1,
                min_step: int = 1) -> int:
  """Rows of the padded chunks of n points, so sizes in one bucket share a compilation: the next
  power of two >= n (at least 8, at most ``cap`` when given), or with ``per_octave`` = q > 1 the
  next multiple of 1 / (2q) of that power (q sizes per octave, fewer than n / q extra rows: at
  most 25 % more for q = 4, 2.4 % at n = 500 or 20,000), and of ``min_step``."""
  power = max(8, 1 << max(n - 1, 1).bit_length())
  step = max(min_step, power // (2 * per_octave))
  rows = max(8, -(-n // step) * step)
  return rows if cap is None else min(cap, rows)


def in_row_buckets(fn, x, cap: int) -> np.ndarray:
  """``fn(x)`` as a NumPy array, for an ``fn`` that treats the rows of x independently, computed
  on chunks of ``bucket_rows(n, cap)`` rows, the last padded with zero rows (dropped again)."""
  x = np.asarray(x)
  n = x.shape[0]
  if n == 0:
    return np.asarray(fn(x))
  rows = bucket_rows(n, cap)
  out = []
  for lo in range(0, n, rows):   # NumPy chunks: jnp.asarray would compile a copy per shape
    part = np.zeros((rows,) + x.shape[1:], x.dtype)
    part[:min(rows, n - lo)] = x[lo:lo + rows]
    out.append(np.asarray(fn(part)))
  return np.concatenate(out)[:n]
