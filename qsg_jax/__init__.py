"""qsg_jax: scalable kernel AUC optimization in JAX.

QS3ORAO (semi-supervised ordinal AUC) and QSG-S2AUC (its k = 2 binary case) with quadruply
stochastic functional gradients over random Fourier features regenerated from seeds; the
incomplete-U ROC-SVM (``roc_svm``); online pairwise least squares (``online_pairwise``); the
papers' baselines (``baselines``) and data (``data``).

The top level is the user's door: ``fit`` / ``decision_function`` / ``predict`` /
``split_scores`` with a ``FitConfig``, the scikit-learn estimators, ``cross_validate``, the
metrics and the errors. The pure, jittable engine and its building blocks live under
``qsg_jax.engine``. Naming: ``decision_function`` returns ranking scores f(x); ``predict``
returns classes. Modules whose name starts with an underscore are private.
"""

from qsg_jax import baselines
from qsg_jax import data
from qsg_jax import direct
from qsg_jax import distributed
from qsg_jax import engine
from qsg_jax import errors
from qsg_jax import estimators
from qsg_jax import io
from qsg_jax import metrics
from qsg_jax import model_selection
from qsg_jax import online_pairwise
from qsg_jax import roc_svm
from qsg_jax._fit import FitResult
from qsg_jax._fit import decision_function
from qsg_jax._fit import fit
from qsg_jax._fit import predict
from qsg_jax._fit import split_scores
from qsg_jax._version import __version__
from qsg_jax.config import FitConfig
from qsg_jax.errors import ApproximationWarning
from qsg_jax.errors import ChecksumError
from qsg_jax.errors import DivergenceError
from qsg_jax.errors import InsufficientMemoryError
from qsg_jax.errors import SlowConfigWarning
from qsg_jax.errors import UnscaledFeaturesWarning
from qsg_jax.estimators import QS3ORAO
from qsg_jax.estimators import QS3ORAOCV
from qsg_jax.estimators import QSGS2AUC
from qsg_jax.estimators import QSGS2AUCCV
from qsg_jax.estimators import auc_scorer
from qsg_jax.estimators import ordinal_auc_scorer
from qsg_jax.metrics import binary_auc
from qsg_jax.metrics import masked_auc
from qsg_jax.metrics import mean_absolute_error
from qsg_jax.metrics import ordinal_auc
from qsg_jax.metrics import split_aucs
from qsg_jax.model_selection import cross_validate
from qsg_jax.thresholds import fit_thresholds
from qsg_jax.thresholds import predict_classes

__all__ = (
    "ApproximationWarning", "ChecksumError", "DivergenceError", "FitConfig", "FitResult",
    "InsufficientMemoryError", "QS3ORAO", "QS3ORAOCV", "QSGS2AUC", "QSGS2AUCCV",
    "SlowConfigWarning",
    "UnscaledFeaturesWarning", "__version__", "auc_scorer", "baselines", "binary_auc",
    "cross_validate", "data", "decision_function", "direct", "distributed", "engine", "errors",
    "estimators", "fit", "fit_thresholds", "io", "masked_auc", "mean_absolute_error", "metrics",
    "model_selection", "online_pairwise", "ordinal_auc", "ordinal_auc_scorer", "predict",
    "predict_classes", "roc_svm", "split_aucs", "split_scores",
)
