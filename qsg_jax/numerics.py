"""The precision rules every computation of the method follows, defined once.

HIGHEST: every matrix product of the method (features, score gradients, updates, scoring, the
exact kernels, the grouped CV, the default step) runs at full float32 precision. On GPUs (TF32)
and TPUs (bf16 passes) the default precision of a float32 product is lower: random Fourier phases
omega . x and the sums over thousands of feature blocks then drift by about 1e-3 relative
(measured on an H100: coefficients 2e-4 away from the literal algorithm instead of 2e-7). CPUs
are unaffected. ``tests/test_engine.py`` walks the jaxpr of every path and fails on a product
below this precision.

MAX_PHASE: ``engine.features.cos_sin`` is accurate to 1.1e-7 for |omega . x| <= 2^19; beyond it
a float32 phase has lost its fractional part (ulp(2^19) = 1/16 rad), so the features are NaN and
the boundary checks refuse such inputs with a message to rescale them.
"""

import jax

HIGHEST = jax.lax.Precision.HIGHEST
MAX_PHASE = 2.0**19
