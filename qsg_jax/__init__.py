"""qsg_jax: scalable kernel AUC optimization in JAX.

QS3ORAO (semi-supervised ordinal AUC) and QSG-S2AUC (its k = 2 binary case) with quadruply
stochastic functional gradients over random Fourier features regenerated from seeds.
"""

from qsg_jax import baselines
from qsg_jax import data
from qsg_jax import model_selection
from qsg_jax import online_pairwise
from qsg_jax import roc_svm
from qsg_jax.engine import EngineConfig
from qsg_jax.engine import Hyperparams
from qsg_jax.engine import Model
from qsg_jax.engine import State
from qsg_jax.engine import TrainData
from qsg_jax.engine import init
from qsg_jax.engine import inverse_time_schedule
from qsg_jax.engine import predict as predict_scores
from qsg_jax.engine import predict_sharded
from qsg_jax.engine import shard_unlabeled
from qsg_jax.engine import train
from qsg_jax.engine import train_chunk
from qsg_jax.engine import train_sharded
from qsg_jax.estimators import QS3ORAO
from qsg_jax.estimators import QSGS2AUC
from qsg_jax.features import block_features
from qsg_jax.features import cos_sin
from qsg_jax.features import fourier_features
from qsg_jax.features import sample_frequencies
from qsg_jax.kernels import gaussian_kernel
from qsg_jax.losses import PairwiseLoss
from qsg_jax.losses import get_loss
from qsg_jax.losses import pairwise_loss_grads
from qsg_jax.losses import subproblem_derivatives
from qsg_jax.metrics import binary_auc
from qsg_jax.metrics import masked_auc
from qsg_jax.metrics import mean_absolute_error
from qsg_jax.metrics import ordinal_auc
from qsg_jax.metrics import ordinal_auc_per_split
from qsg_jax.risk import minibatch_risk
from qsg_jax.risk import score_grads
from qsg_jax.risk import subproblem_weights
from qsg_jax.thresholds import fit_thresholds
from qsg_jax.thresholds import predict_classes
from qsg_jax.training import DivergenceError
from qsg_jax.training import FitResult
from qsg_jax.training import decision_function
from qsg_jax.training import fit
from qsg_jax.training import predict

__all__ = (
    "DivergenceError",
    "EngineConfig",
    "FitResult",
    "Hyperparams",
    "Model",
    "PairwiseLoss",
    "QS3ORAO",
    "QSGS2AUC",
    "State",
    "TrainData",
    "baselines",
    "binary_auc",
    "block_features",
    "data",
    "model_selection",
    "decision_function",
    "fit",
    "fit_thresholds",
    "cos_sin",
    "fourier_features",
    "gaussian_kernel",
    "get_loss",
    "init",
    "inverse_time_schedule",
    "masked_auc",
    "mean_absolute_error",
    "online_pairwise",
    "roc_svm",
    "minibatch_risk",
    "ordinal_auc",
    "ordinal_auc_per_split",
    "pairwise_loss_grads",
    "predict",
    "predict_classes",
    "predict_scores",
    "predict_sharded",
    "sample_frequencies",
    "score_grads",
    "shard_unlabeled",
    "subproblem_derivatives",
    "subproblem_weights",
    "train",
    "train_chunk",
    "train_sharded",
)
