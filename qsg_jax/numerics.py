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
"""

import jax
import jax.numpy as jnp

HIGHEST = jax.lax.Precision.HIGHEST
MAX_PHASE = 2.0**19


def as_float32(tree):
  """``tree`` with every floating leaf (arrays and Python floats) as a float32 array."""
  floating = lambda a: jnp.issubdtype(jnp.result_type(a), jnp.floating)
  return jax.tree.map(lambda a: jnp.asarray(a, jnp.float32) if floating(a) else a, tree)
