"""The scikit-learn face: ``QS3ORAO`` / ``QSGS2AUC``, their cross-validated versions, scorers.

Estimators (parameters, attributes and an example in each class docstring, ``help(QS3ORAO)``):
``QS3ORAO`` (k ordered classes), ``QSGS2AUC`` (two classes), ``QS3ORAOCV`` / ``QSGS2AUCCV``
(hyper-parameters chosen by k-fold CV over a stated grid, as ``LogisticRegressionCV``). The
recommended door is the plain estimator with its defaults: it chooses its hyper-parameters
itself ("Defaults that work" below). y follows scikit-learn's
semi-supervised convention: one label per row, -1 (``unlabeled_label``) on unlabeled rows.

Parameter names
---------------
The functional API (``qsg_jax.fit``, ``FitConfig``) keeps the papers' names; the estimators use
names a scikit-learn user cannot mistake (``SVC``'s ``gamma`` is the kernel width):

  ==============  =========  ===========================================================
  estimator       FitConfig  meaning
  ==============  =========  ===========================================================
  length_scale    sigma      sigma = 1 / (2 length_scale^2); one per feature: anisotropic
  labeled_weight  gamma      weight of the labeled pairs; the unlabeled risks get 1 - it
  learning_rate   step_size  "auto", eta0 of eta0 / (1 + eta0 lam t), or a schedule
  ==============  =========  ===========================================================

``sigma``, ``gamma`` and ``step_size`` still work for one release, with a FutureWarning.

Model selection on semi-supervised y
------------------------------------
``GridSearchCV`` and ``cross_val_score`` with ``scoring=None`` use the estimator's ``score``:
the mean ordinal AUC (binary: the AUC) on the labeled rows, unlabeled rows ignored. Other
metrics, same rule:

  ==================  =========================  =====================================
  scorer              get_scorer(name)           metric on the labeled rows
  ==================  =========================  =====================================
  auc_scorer          "roc_auc"                  AUC of decision_function (2 classes)
  ordinal_auc_scorer  "ordinal_auc"              mean AUC over the k-1 ordinal splits
  accuracy_scorer     "accuracy"                 fraction of predict right
  neg_mae_scorer      "neg_mean_absolute_error"  -mean |rank(predict) - rank(y)|
  ==================  =========================  =====================================

``get_scorer`` applies any other scikit-learn name or scorer to the labeled rows only.

scikit-learn's scoring *strings* (``scoring="roc_auc"``) score every test row, unlabeled ones
included: accuracy counts each unlabeled row wrong, roc_auc sees three classes and gives NaN,
neg_mean_absolute_error counts the distance to -1; ``GridSearchCV`` still picks a "best". This
cannot be caught here: scikit-learn's scorer compares ``predict(X)`` with y after the estimator
returns, and nothing of the library sees y then (only patching scikit-learn could; we do not).
Two ways out: pass ``scoring=get_scorer("roc_auc")``, or keep the strings and pass
``cv=LabeledStratifiedKFold(5)``, whose test folds hold labeled rows only (every unlabeled row
trains in every fold, as the papers' CV)::

    search = GridSearchCV(QSGS2AUC(), {"length_scale": [0.5, 1.0, 2.0]},
                          scoring=get_scorer("roc_auc"))          # or scoring="roc_auc",
    search.fit(X, y)                                              # cv=LabeledStratifiedKFold()

Wrappers and Pipeline steps that read y themselves see -1 as a class too, and nothing here can
see them do it: a supervised selector (``SelectKBest(f_classif)``, ``SelectFromModel``) picks the
columns that tell the unlabeled rows from the labeled ones (a sweep: a column shifted in the
unlabeled rows only, test AUC 0.51; select on the labeled rows, or use an unsupervised step);
``CalibratedClassifierCV(QSGS2AUC())`` fitted on semi-supervised y calibrates three classes and
predicts one (a sweep of 2026-11-29: every row class 0 where the ranker's AUC is about 1); around
``QS3ORAO`` (k >= 3) it reads the one score column as class 0's and predicts class 0 for every
row. For probabilities pass ``probability=True`` (``predict_proba``: Platt scaling of
out-of-fold scores, for k >= 3 a cumulative logistic model on the one ranking score, as
``SVC(probability=True)``), or, for two classes, fit the ranker on every row and calibrate it on
labeled rows only::

    ranker = QSGS2AUC().fit(X, y)                                 # unlabeled rows marked -1
    labeled = y != -1
    calibrated = CalibratedClassifierCV(FrozenEstimator(ranker)).fit(X[labeled], y[labeled])

(``sklearn.frozen.FrozenEstimator``, scikit-learn >= 1.6).

Defaults that work: "auto"
--------------------------
``QSGS2AUC()`` / ``QS3ORAO()`` with no arguments solve the squared loss exactly (``solver``
"auto": ``qsg_jax.direct``) with length_scale, lam and labeled_weight chosen per fit from the
labeled rows by a smoothed, repeated 5-fold CV of the direct solver
(``qsg_jax.direct.defaults``; deterministic given ``random_state``; the choices are in
``length_scale_``, ``lam_``, ``labeled_weight_``; the simplest point within one standard
error of the best, ``direct.defaults.simplest_within_one_se``), on inputs whose long-tailed
features are replaced by their ranks (``scale_inputs="auto"``, ``input_ranks_``) before the
min-max scaling. Where the smallest labeled class has at
least 2 rows per feature, one length scale per feature is then learned
(``qsg_jax.direct.learn_length_scales``, from the CV's one-SE point; where that is at the
largest lam, from its best point too, the start whose own choice scores higher kept) and lam
and labeled_weight are chosen again; with
fewer, where the features are of two kinds (two-valued indicators such as one-hot codes, and
the others) and the smallest class has at least 4 rows, one length scale per kind, then
refined per feature with a pull toward it;
``length_scale="isotropic"`` keeps one shared scale, ``length_scale="ard"`` always learns them.
At most 1,000 labeled and 2,000 unlabeled rows enter these choices, so their cost (seconds)
does not grow with the data. Their test AUC against the tuned peers (SVC, LogisticRegression,
LightGBM, self-training, mord, LibAUC) on six datasets and three unseen ones, and their cost:
``experiments/reproduction/RESULTS.md#peers`` (``python -m experiments.peers``). Given values
are kept (``QSGS2AUC(lam=1e-3)`` chooses the other two). The previous release's fit, bit for
bit: ``QSGS2AUC(solver="dsg", length_scale=5 ** 0.5, lam=1e-3, labeled_weight=0.5,
scale_inputs=True)`` (True: min-max scaling alone; "auto" ranks long-tailed features first).

Compilation and JAX's persistent cache
--------------------------------------
The direct solver (the default) pads rows into buckets, so new numbers of rows reuse its
compiled programs: a 5-fold ``cross_val_score`` compiles once (and once more for each new
multiple of 64 that a smooth kernel's Nystrom rank rounds up to: ``direct.moments.live_map``).
DSG (``solver="dsg"``) compiles its training program for the shapes of its data: the first fit
on a new number of rows takes seconds, a warm fit often a fraction of one, so a 5-fold
``cross_val_score`` spends most of its time compiling once per fold size (e.g. 29 s against
0.2 s for the five fits warm, ``QSGS2AUC(solver="dsg", num_steps=256)`` on 2,003 rows, 2 CPU
cores). JAX's persistent compilation cache keeps compiled programs on disk for the next process
(there: 29 s down to 4.6 s; for ``QSGS2AUC()`` on 2,000 rows of cod_rna, a fresh process's 33
compilations took 2.9 s, 0.2 s read from the cache). Turn it on before the first fit::

    import jax
    jax.config.update("jax_compilation_cache_dir", "/path/to/jax_cache")
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)   # optional: cache all

(or set the environment variable ``JAX_COMPILATION_CACHE_DIR``). The cache is keyed by the
program, the JAX version and the device, so it is safe to share between runs.

Model files: each estimator saves and restores its own fitted state (``qsg_jax.io.save`` /
``load`` call its ``_to_arrays`` / ``_from_arrays``; ``io`` knows no estimator).
"""

from qsg_jax.estimators._ranker import QS3ORAO
from qsg_jax.estimators._ranker import QSGS2AUC
from qsg_jax.estimators._scorers import LabeledRowsScorer
from qsg_jax.estimators._scorers import LabeledStratifiedKFold
from qsg_jax.estimators._scorers import accuracy_scorer
from qsg_jax.estimators._scorers import auc_scorer
from qsg_jax.estimators._scorers import get_scorer
from qsg_jax.estimators._scorers import neg_mae_scorer
from qsg_jax.estimators._scorers import ordinal_auc_scorer
from qsg_jax.estimators._search import QS3ORAOCV
from qsg_jax.estimators._search import QSGS2AUCCV

__docformat__ = "numpy"

__all__ = ("LabeledRowsScorer", "LabeledStratifiedKFold", "QS3ORAO", "QS3ORAOCV", "QSGS2AUC",
           "QSGS2AUCCV", "accuracy_scorer", "auc_scorer", "get_scorer", "neg_mae_scorer",
           "ordinal_auc_scorer")
