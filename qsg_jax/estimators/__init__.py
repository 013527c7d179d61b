"""The scikit-learn face: ``QS3ORAO`` / ``QSGS2AUC``, their cross-validated versions, scorers.

Each estimator saves and restores its own fitted state (``qsg_jax.io.save`` / ``load`` call its
``_to_arrays`` / ``_from_arrays``; ``io`` knows no estimator).
"""

from qsg_jax.estimators._ranker import QS3ORAO
from qsg_jax.estimators._ranker import QSGS2AUC
from qsg_jax.estimators._scorers import auc_scorer
from qsg_jax.estimators._scorers import ordinal_auc_scorer
from qsg_jax.estimators._search import QS3ORAOCV
from qsg_jax.estimators._search import QSGS2AUCCV

__all__ = ("QS3ORAO", "QS3ORAOCV", "QSGS2AUC", "QSGS2AUCCV", "auc_scorer", "ordinal_auc_scorer")
