"""qsg_jax: scalable kernel AUC optimization in JAX."""

from qsg_jax.metrics import binary_auc
from qsg_jax.metrics import masked_auc
from qsg_jax.metrics import mean_absolute_error
from qsg_jax.metrics import ordinal_auc
from qsg_jax.metrics import ordinal_auc_per_split

__all__ = (
    "binary_auc",
    "masked_auc",
    "mean_absolute_error",
    "ordinal_auc",
    "ordinal_auc_per_split",
)
