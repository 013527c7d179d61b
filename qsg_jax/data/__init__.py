"""Datasets of the papers, read from their original public files, and the papers' preprocessing.

    from qsg_jax import data
    ds = data.load("sgemm", data_dir="../shared/data")         # or QSG_JAX_DATA=../shared/data
    labels, edges = data.discretize_equal_frequency(ds.y, 5)   # regression -> 5 ordered classes
    split = data.split_semisupervised(0, labels, num_labeled=500)
    train = np.concatenate([split.labeled, split.unlabeled])
    lo, scale = data.minmax_fit(ds.x[train])                    # training rows only
    x = data.minmax_apply(ds.x, lo, scale)                      # test rows may leave [0, 1]

``available()`` lists the names: real sets (sgemm, skin, cod_rna, ijcnn1, dota2, bank_marketing,
accelerometer, covtype, road3d, yolanda, year), embedded sets that need no data directory (era,
esl, lev, swd from skordinal; breast_cancer from scikit-learn) and synthetic sets with a known
Bayes-optimal score (synthetic_ordinal, synthetic_binary). ``describe(name)`` gives the source,
label mapping, files and checksums.

Environment: ``QSG_JAX_DATA`` (data directory), ``QSG_JAX_CACHE`` (user cache, default
~/.cache/qsg_jax), ``QSG_JAX_DOWNLOAD=0`` (never download), ``QSG_JAX_URL_<SOURCE>`` (mirror of
a download source: UCI, LIBSVM, CODALAB).
"""

from qsg_jax.data.dataset import Dataset
from qsg_jax.data.dataset import as_numeric
from qsg_jax.data.dataset import check_finite
from qsg_jax.data.dataset import make_dataset
from qsg_jax.data.download import DEFAULT_BASE_URLS
from qsg_jax.errors import ChecksumError
from qsg_jax.errors import DataNotFoundError
from qsg_jax.errors import DownloadError
from qsg_jax.data.files import user_cache_dir
from qsg_jax.data.preprocessing import Split
from qsg_jax.data.preprocessing import discretize_equal_frequency
from qsg_jax.data.preprocessing import discretize_with_edges
from qsg_jax.data.preprocessing import minmax_apply
from qsg_jax.data.preprocessing import minmax_fit
from qsg_jax.data.preprocessing import split_semisupervised
from qsg_jax.data.registry import available
from qsg_jax.data.registry import describe
from qsg_jax.data.registry import load
from qsg_jax.data.registry import register
from qsg_jax.data.synthetic import bayes_score
from qsg_jax.data.synthetic import latent_thresholds
from qsg_jax.data.synthetic import make_binary as make_synthetic_binary
from qsg_jax.data.synthetic import make_ordinal as make_synthetic_ordinal

__all__ = (
    "ChecksumError",
    "DEFAULT_BASE_URLS",
    "DataNotFoundError",
    "DownloadError",
    "Dataset",
    "Split",
    "as_numeric",
    "available",
    "bayes_score",
    "check_finite",
    "describe",
    "discretize_equal_frequency",
    "discretize_with_edges",
    "latent_thresholds",
    "load",
    "make_dataset",
    "make_synthetic_binary",
    "make_synthetic_ordinal",
    "minmax_apply",
    "minmax_fit",
    "register",
    "split_semisupervised",
    "user_cache_dir",
)
