"""Direct solver (placeholder docstring, filled after the measurements)."""

from qsg_jax.direct import feature_maps
from qsg_jax.direct import moments
from qsg_jax.direct import system
from qsg_jax.direct.fitting import DirectFit
from qsg_jax.direct.fitting import NystromModel
from qsg_jax.direct.fitting import decision_function
from qsg_jax.direct.fitting import fit
from qsg_jax.direct.fitting import split_scores
from qsg_jax.direct.moments import Moments
from qsg_jax.direct.system import IllPosedSystemError
from qsg_jax.direct.system import solve
from qsg_jax.direct.selection import cross_validate
from qsg_jax.direct.selection import paper_grid
