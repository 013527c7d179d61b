"""Incomplete-U ROC-SVM: linear and Nystrom-kernel AUC maximization trained with Optax.

Bae and Shin, "Scaling Up ROC-Optimizing Support Vector Machines": the pairwise hinge risk over
B randomly drawn (positive, negative) pairs instead of all n+ n- of them, a Nystrom feature map
for the Gaussian kernel, and full-batch Adamax. See ``qsg_jax.roc_svm.objective`` for the risks.
"""

from qsg_jax.roc_svm.estimator import ROCSVM
from qsg_jax.roc_svm.clustering import KMeansResult
from qsg_jax.roc_svm.clustering import kmeans
from qsg_jax.roc_svm.model import RocSvmFit
from qsg_jax.roc_svm.model import RocSvmModel
from qsg_jax.roc_svm.model import decision_function
from qsg_jax.roc_svm.model import fit
from qsg_jax.roc_svm.model import model_auc
from qsg_jax.roc_svm.nystrom import NystromMap
from qsg_jax.roc_svm.nystrom import nystrom_features
from qsg_jax.roc_svm.nystrom import nystrom_map
from qsg_jax.roc_svm.nystrom import pinv_sqrt
from qsg_jax.roc_svm.nystrom import select_landmarks
from qsg_jax.roc_svm.objective import MarginLoss
from qsg_jax.roc_svm.objective import Objective
from qsg_jax.roc_svm.objective import full_risk
from qsg_jax.roc_svm.objective import full_risk_sorted
from qsg_jax.roc_svm.objective import get_margin_loss
from qsg_jax.roc_svm.objective import incomplete_risk
from qsg_jax.roc_svm.pairs import PairData
from qsg_jax.roc_svm.pairs import PairIndices
from qsg_jax.roc_svm.pairs import make_pair_data
from qsg_jax.roc_svm.pairs import padded_length
from qsg_jax.roc_svm.pairs import sample_pairs
from qsg_jax.roc_svm.selection import cross_validate
from qsg_jax.roc_svm.train import MinimizeResult
from qsg_jax.roc_svm.train import default_optimizer
from qsg_jax.roc_svm.train import lbfgs_optimizer
from qsg_jax.roc_svm.train import intercept_for_rate
from qsg_jax.roc_svm.train import minimize
from qsg_jax.roc_svm import synthetic

__all__ = (
    "KMeansResult",
    "MarginLoss",
    "MinimizeResult",
    "NystromMap",
    "Objective",
    "PairData",
    "PairIndices",
    "ROCSVM",
    "RocSvmFit",
    "RocSvmModel",
    "cross_validate",
    "decision_function",
    "default_optimizer",
    "fit",
    "full_risk",
    "full_risk_sorted",
    "get_margin_loss",
    "incomplete_risk",
    "intercept_for_rate",
    "kmeans",
    "lbfgs_optimizer",
    "make_pair_data",
    "minimize",
    "model_auc",
    "nystrom_features",
    "nystrom_map",
    "padded_length",
    "pinv_sqrt",
    "sample_pairs",
    "select_landmarks",
    "synthetic",
)
