"""qsg_jax: scalable kernel AUC optimization in JAX.

QS3ORAO (semi-supervised ordinal AUC) and QSG-S2AUC (its k = 2 binary case) with quadruply
stochastic functional gradients over random Fourier features regenerated from seeds; the
incomplete-U ROC-SVM (``roc_svm``); online pairwise least squares (``online_pairwise``); the
papers' baselines (``baselines``) and data (``data``).

Naming: ``decision_function`` / ``model_scores`` return ranking scores f(x); ``predict`` and
``predict_classes`` return classes. Everything listed in ``__all__`` (and in the subpackages'
``__all__``) is public; modules whose name starts with an underscore are private.
"""

from qsg_jax import baselines
from qsg_jax import cv
from qsg_jax import data
from qsg_jax import defaults
from qsg_jax import distributed
from qsg_jax import engine
from qsg_jax import errors
from qsg_jax.engine import features
from qsg_jax import io
from qsg_jax.engine import losses
from qsg_jax import metrics
from qsg_jax import model_selection
from qsg_jax import online_pairwise
from qsg_jax.engine import reference
from qsg_jax.engine import risk
from qsg_jax import roc_svm
from qsg_jax.engine import sampling
from qsg_jax import scorers
from qsg_jax.engine import update
from qsg_jax.engine import EngineConfig
from qsg_jax.engine import Hyperparams
from qsg_jax.engine import Model
from qsg_jax.engine import ScalarOrSchedule
from qsg_jax.engine import State
from qsg_jax.engine import TrainData
from qsg_jax.engine import init
from qsg_jax.engine import inverse_time_schedule
from qsg_jax.engine import make_config
from qsg_jax.engine import model_of
from qsg_jax.engine import model_scores
from qsg_jax.engine import model_scores_sharded
from qsg_jax.engine import shard_unlabeled
from qsg_jax.engine import train
from qsg_jax.engine import train_chunk
from qsg_jax.engine import train_sharded
from qsg_jax.errors import DivergenceError
from qsg_jax.errors import InsufficientMemoryError
from qsg_jax.errors import SlowConfigWarning
from qsg_jax.errors import UnscaledFeaturesWarning
from qsg_jax.estimators import QS3ORAO
from qsg_jax.estimators import QSGS2AUC
from qsg_jax.estimators_cv import QS3ORAOCV
from qsg_jax.estimators_cv import QSGS2AUCCV
from qsg_jax.engine.features import block_features
from qsg_jax.engine.features import cos_sin
from qsg_jax.engine.features import fourier_features
from qsg_jax.engine.features import sample_frequencies
from qsg_jax.engine.kernels import gaussian_kernel
from qsg_jax.engine.losses import Derivatives
from qsg_jax.engine.losses import PairwiseLoss
from qsg_jax.engine.losses import get_loss
from qsg_jax.engine.losses import pairwise_loss_grads
from qsg_jax.engine.losses import subproblem_derivatives
from qsg_jax.metrics import binary_auc
from qsg_jax.metrics import masked_auc
from qsg_jax.metrics import mean_absolute_error
from qsg_jax.metrics import ordinal_auc
from qsg_jax.metrics import ordinal_auc_per_split
from qsg_jax.engine.reference import reference_fit
from qsg_jax.scorers import auc_scorer
from qsg_jax.scorers import ordinal_auc_scorer
from qsg_jax.engine.risk import minibatch_risk
from qsg_jax.engine.risk import score_grads
from qsg_jax.engine.risk import subproblem_weights
from qsg_jax.thresholds import fit_thresholds
from qsg_jax.thresholds import predict_classes
from qsg_jax.training import FitResult
from qsg_jax.training import decision_function
from qsg_jax.training import fit
from qsg_jax.training import predict
from qsg_jax.training import split_scores
from qsg_jax.engine.update import dsg_update
from qsg_jax.engine.update import functional_gradient

__all__ = (
    "Derivatives",
    "DivergenceError",
    "EngineConfig",
    "FitResult",
    "Hyperparams",
    "InsufficientMemoryError",
    "Model",
    "PairwiseLoss",
    "QS3ORAO",
    "QS3ORAOCV",
    "QSGS2AUC",
    "QSGS2AUCCV",
    "ScalarOrSchedule",
    "SlowConfigWarning",
    "State",
    "TrainData",
    "UnscaledFeaturesWarning",
    "auc_scorer",
    "baselines",
    "binary_auc",
    "block_features",
    "cos_sin",
    "cv",
    "data",
    "decision_function",
    "defaults",
    "distributed",
    "dsg_update",
    "engine",
    "errors",
    "features",
    "fit",
    "fit_thresholds",
    "fourier_features",
    "functional_gradient",
    "gaussian_kernel",
    "get_loss",
    "init",
    "io",
    "inverse_time_schedule",
    "losses",
    "make_config",
    "masked_auc",
    "mean_absolute_error",
    "metrics",
    "minibatch_risk",
    "model_of",
    "model_scores",
    "model_scores_sharded",
    "model_selection",
    "online_pairwise",
    "ordinal_auc",
    "ordinal_auc_scorer",
    "ordinal_auc_per_split",
    "pairwise_loss_grads",
    "predict",
    "predict_classes",
    "reference",
    "reference_fit",
    "risk",
    "roc_svm",
    "sample_frequencies",
    "sampling",
    "score_grads",
    "scorers",
    "shard_unlabeled",
    "split_scores",
    "subproblem_derivatives",
    "subproblem_weights",
    "train",
    "train_chunk",
    "train_sharded",
    "update",
)
