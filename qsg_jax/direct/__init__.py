"""Direct solver: the squared-loss QS3ORAO / QSG-S2AUC objective minimized exactly in a feature space.

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

The default map, measured (``experiments/bench_direct.py --parts=features``; 20,000 unlabeled
points, sgemm 500 labels ordinal, the others 200 labels, AUC on test points (sgemm: the
unlabeled points), mean of 3 splits; exact: ``baselines.fit_exact_qsg`` on split 0; defaults
sigma = 0.1, lam = 1e-3, gamma = 0.5; "uniform": Nystrom on uniformly drawn landmarks,
"k-means": on k-means centers, "rff": the engine's Fourier blocks):

  | dataset        | exact  | rff 512 | rff 2048 | uniform 256 | uniform 512 | uniform 2048 | k-means 512 |
  |----------------|--------|---------|----------|-------------|-------------|--------------|-------------|
  | sgemm          | 0.8911 | 0.8735  | 0.8827   | 0.8832      | 0.8844      | 0.8845       | 0.8836      |
  | cod_rna        | 0.9660 | 0.9731  | 0.9734   | 0.9734      | 0.9734      | 0.9734       | 0.9734      |
  | ijcnn1         | 0.8100 | 0.8277  | 0.8293   | 0.8295      | 0.8297      | 0.8296       | 0.8294      |
  | skin           | 0.9604 | 0.9592  | 0.9614   | 0.9606      | 0.9606      | 0.9606       | 0.9606      |
  | bank_marketing | 0.6388 | 0.6339  | 0.6363   | 0.6664      | 0.6709      | 0.6501       | 0.6555      |
  | accelerometer  | 0.8611 | 0.8700  | 0.8697   | 0.8695      | 0.8695      | 0.8695       | 0.8695      |

  (exact is split 0 only; on split 0 uniform 512 is within 0.0009 of it on every set but
  bank_marketing.) Split 0's gap exact - uniform 512: sgemm 0.0000, cod_rna 0.0000, ijcnn1
  -0.0001, skin 0.0009, accelerometer -0.0003, bank_marketing -0.027 (p = 2048: within 0.002).

Choice: Nystrom, uniform landmarks, p = 512 (``fitting.NUM_FEATURES``). Random Fourier features
converge slowly (sgemm: 0.008 short of exact at p = 512, 0.004 at 1024); Nystrom at p = 512 is
within 0.002 of the p = 2048 value on five of six datasets; uniform landmarks match k-means
ones at no cost. bank_marketing (62 mostly one-hot columns) needs p ~ 2048: its fit leaves 19%
of k(x, x) unexplained at p = 512, which ``fit`` reports (``ApproximationWarning``,
``DirectFit.kernel_residual``). The cross-validation ranks the grid with p = 256
(``selection.CV_NUM_FEATURES``), 8x cheaper per solve. On the papers' narrowest kernel
(sigma = 8) no map is near the exact minimizer at p <= 2048 on sgemm and ijcnn1 (exact AUC
0.67 on sgemm, Nystrom 0.62-0.65), a setting the CV does not choose there.
"""

from qsg_jax.direct import bandwidths
from qsg_jax.direct import feature_maps
from qsg_jax.direct import fitting
from qsg_jax.direct import moments
from qsg_jax.direct import selection
from qsg_jax.direct import solver
from qsg_jax.direct import system
from qsg_jax.direct.bandwidths import learn_length_scales
from qsg_jax.direct.fitting import ApproximationWarning
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
