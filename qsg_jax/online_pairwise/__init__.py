"""Online pairwise least squares (Boissier, Lyu, Ying, Zhou): Eq. (1) with O(d^2) updates.

``init``/``update`` are the exact incremental form (running moments, O(d^2) per step);
``init_literal``/``update_literal`` the literal one (a sum over every earlier example, O(t d)).
Both are pure single-example steps for ``lax.scan``; ``run`` scans a chunk, ``fit_stream``
consumes a stream chunk by chunk. ``synthetic`` has streams with known minimizers.
"""

from qsg_jax.online_pairwise.estimator import OnlinePairwiseRanker
from qsg_jax.online_pairwise.streaming import StreamResult
from qsg_jax.online_pairwise.streaming import fit_stream
from qsg_jax.online_pairwise.streaming import run
from qsg_jax.online_pairwise.synthetic import BipartiteProblem
from qsg_jax.online_pairwise.synthetic import LinearProblem
from qsg_jax.online_pairwise.synthetic import make_bipartite_problem
from qsg_jax.online_pairwise.synthetic import make_linear_problem
from qsg_jax.online_pairwise.synthetic import sample_bipartite
from qsg_jax.online_pairwise.synthetic import sample_linear
from qsg_jax.online_pairwise.updates import IncrementalState
from qsg_jax.online_pairwise.updates import LiteralState
from qsg_jax.online_pairwise.updates import PolynomialStepSize
from qsg_jax.online_pairwise.updates import estimate_mu
from qsg_jax.online_pairwise.updates import gradient
from qsg_jax.online_pairwise.updates import init
from qsg_jax.online_pairwise.updates import init_literal
from qsg_jax.online_pairwise.updates import literal_gradient
from qsg_jax.online_pairwise.updates import polynomial_step_size
from qsg_jax.online_pairwise.updates import update
from qsg_jax.online_pairwise.updates import update_literal

__all__ = (
    "BipartiteProblem",
    "IncrementalState",
    "LinearProblem",
    "LiteralState",
    "OnlinePairwiseRanker",
    "PolynomialStepSize",
    "StreamResult",
    "estimate_mu",
    "fit_stream",
    "gradient",
    "init",
    "init_literal",
    "literal_gradient",
    "make_bipartite_problem",
    "make_linear_problem",
    "polynomial_step_size",
    "run",
    "sample_bipartite",
    "sample_linear",
    "update",
    "update_literal",
)
