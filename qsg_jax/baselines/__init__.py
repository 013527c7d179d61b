"""Exact baselines of the semi-supervised AUC papers: SAMULT, PNU-AUC, their multi-class versions
M-SAMULT and M-PNU-AUC (k-1 binary models, one per ordinal split), supervised SVOREX, k-fold
cross-validation of their hyper-parameters, and the exact kernel minimizer of the QSG-S2AUC /
QS3ORAO objective itself (``fit_exact_qsg``: one ranking function, what ``qsg_jax.fit``
approximates) and of its per-split corrections extension (``fit_exact_split``: split j ranks
with f + g_j, what ``qsg_jax.fit(..., split_lam=...)`` approximates).

Every method has the same interface: ``fit_*(x_labeled, y_labeled, x_unlabeled, **hyper) -> model``
and ``decision_function(model, x)`` ([m] scores, or [m, k-1] for the multi-class kernel models);
``mean_split_auc(scores, labels, k)`` judges either form (ordinal paper, Eq. 2).
"""

from qsg_jax.folds import CVResult
from qsg_jax.baselines.cross_validation import FIT_FUNCTIONS
from qsg_jax.baselines.cross_validation import cross_validate
from qsg_jax.baselines.cross_validation import paper_grid
from qsg_jax.baselines.cross_validation import quick_grid
from qsg_jax.folds import stratified_folds
from qsg_jax.baselines.exact_qsg import fit_exact_qsg
from qsg_jax.baselines.exact_split import ExactSplitModel
from qsg_jax.baselines.exact_split import fit_exact_split
from qsg_jax.baselines.kernel_expansion import KernelAUCModel
from qsg_jax.baselines.kernel_expansion import check_kernel_memory
from qsg_jax.baselines.kernel_expansion import required_bytes
from qsg_jax.baselines.multiclass import fit_m_pnu_auc
from qsg_jax.baselines.multiclass import fit_m_samult
from qsg_jax.baselines.pnu_auc import estimate_prior
from qsg_jax.baselines.pnu_auc import fit_pnu_auc
from qsg_jax.baselines.pnu_auc import pnu_coefficients
from qsg_jax.baselines.pnu_auc import training_set_prior
from qsg_jax.baselines.samult import fit_samult
from qsg_jax.baselines.samult import samult_coefficients
from qsg_jax.baselines.scoring import decision_function
from qsg_jax.baselines.scoring import mean_split_auc
from qsg_jax.baselines.scoring import split_aucs
from qsg_jax.baselines.svorex import SvorexModel
from qsg_jax.baselines.svorex import fit_svorex
from qsg_jax.baselines.svorex import predict as predict_svorex

__all__ = (
    "CVResult",
    "ExactSplitModel",
    "FIT_FUNCTIONS",
    "KernelAUCModel",
    "SvorexModel",
    "check_kernel_memory",
    "cross_validate",
    "decision_function",
    "estimate_prior",
    "fit_exact_qsg",
    "fit_exact_split",
    "fit_m_pnu_auc",
    "fit_m_samult",
    "fit_pnu_auc",
    "fit_samult",
    "fit_svorex",
    "mean_split_auc",
    "paper_grid",
    "pnu_coefficients",
    "predict_svorex",
    "quick_grid",
    "required_bytes",
    "samult_coefficients",
    "split_aucs",
    "stratified_folds",
    "training_set_prior",
)
