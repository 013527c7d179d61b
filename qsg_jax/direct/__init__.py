"""Direct solver: the squared-loss QS3ORAO / QSG-S2AUC objective minimized exactly in a feature map.

For l(u, v) = (1 - u + v)^2 and f = w . psi(x) with a fixed map psi of p features, the papers'
objective (ordinal paper Eqs. 7-9) is a quadratic in w whose data enter only through the
feature means and second moments of the labeled classes and of the unlabeled set (``system``).
So instead of DSG's T = 1024 stochastic steps over 32,768 random features:

    result = direct.fit(x_l, y_l, x_u, key=0, sigma=0.1, lam=1e-3, gamma=0.5)
    scores = direct.decision_function(result.model, x_test)
    cv = direct.cross_validate(x_l, y_l, x_u)          # the papers' 539 x 5 grid

one pass over the unlabeled points (an array, a memory map, an iterator of chunks, or strata on
a mesh of devices and processes: ``moments``) and one float64 Cholesky solve. The same result
through the checked entry point: ``qsg_jax.fit(..., solver="direct")`` ("auto": direct for the
squared loss, DSG otherwise; ``qsg_jax.config.choose_solver``).

Modules: ``feature_maps`` (Fourier blocks of the engine, Nystrom on landmarks), ``moments``
(the one-pass statistics), ``system`` (the linear system, per-split corrections, the solve),
``fitting`` (``fit``, the models, scoring), ``selection`` (cross-validation from shared
moments), ``solver`` (what ``qsg_jax.fit`` calls for "direct").

The default map was chosen by measurement (``experiments/bench_direct.py --parts=features``:
test AUC against p for Fourier and Nystrom maps on six datasets, beside the exact kernel
minimizer; the table is in ``experiments/reproduction/RESULTS.md#feature-maps``).

Choice: Nystrom, uniform landmarks, p = 512 (``fitting.NUM_FEATURES``): random Fourier
features converge more slowly in p, Nystrom at p = 512 was within 0.002 AUC of p = 2048 on five
of six datasets, and uniform landmarks matched k-means ones. Data whose kernel needs more
landmarks (bank_marketing's one-hot columns) are reported by ``fit`` (``ApproximationWarning``,
``DirectFit.kernel_residual``). The cross-validation ranks the grid with p = 256
(``selection.CV_NUM_FEATURES``), 8x cheaper per solve.
"""

from qsg_jax.direct import bandwidths
from qsg_jax.direct import feature_maps
from qsg_jax.direct import fitting
from qsg_jax.direct import moments
from qsg_jax.direct import selection
from qsg_jax.direct import solver
from qsg_jax.direct import system
from qsg_jax.direct.bandwidths import learn_length_scales
from qsg_jax.direct.fitting import DirectFit
from qsg_jax.direct.fitting import NystromModel
from qsg_jax.direct.fitting import decision_function
from qsg_jax.direct.fitting import fit
from qsg_jax.direct.fitting import split_scores
from qsg_jax.direct.moments import Moments
from qsg_jax.direct.selection import cross_validate
from qsg_jax.direct.selection import paper_grid
from qsg_jax.direct.system import IllPosedSystemError
from qsg_jax.direct.system import solve
from qsg_jax.errors import ApproximationWarning

__all__ = (
    "ApproximationWarning",
    "DirectFit",
    "IllPosedSystemError",
    "Moments",
    "NystromModel",
    "bandwidths",
    "cross_validate",
    "decision_function",
    "feature_maps",
    "fit",
    "fitting",
    "learn_length_scales",
    "moments",
    "paper_grid",
    "selection",
    "solve",
    "solver",
    "split_scores",
    "system",
)
