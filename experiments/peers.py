"""Our estimators against what a practitioner would use instead (issue 27, item 1).

    python -m experiments.peers --output_dir=results/peers              # six datasets, 3 trials
    python -m experiments.peers --datasets=lev,breast_cancer --output_dir=/tmp/peers_small
    python -m experiments.peers --csv=my.csv --target=y --output_dir=/tmp/peers_mine

Protocol (issue 27's contract), per dataset and trial t (randomness from SeedSequence([seed, t])):
  - classes: binary and ordinal sets as loaded; a regression target is cut into
    ``num_classes`` (5) equal-frequency classes (``qsg_jax.data.discretize_equal_frequency``).
  - labeled points: ``num_labeled`` (500 ordinal, 200 binary), drawn stratified by class
    (``split_semisupervised(stratify=True)``: every class gets its proportional share, so each
    class has the ``cv_folds`` points a stratified CV needs; 4 positives on accelerometer).
  - test points: a disjoint set of ``test_size`` (20,000) points: a uniform subset of the
    official test file where the source has one (ijcnn1), else drawn first from the rows, before
    the labeled ones (fewer where the rows run out: 11,791 on accelerometer; a quarter of the
    rows on small sets, which then get fewer unlabeled points).
  - unlabeled points: ``num_unlabeled`` (20,000) drawn from the remaining rows.
  - features min-max scaled with the labeled + unlabeled rows' statistics (never the test rows).
  - every method tuned by the SAME ``cv_folds``-fold stratified CV on the labeled points only:
    ``stratified_folds(y_labeled, F, seed=0, points=x_labeled)`` and ``fold_training_sets`` of
    qsg_jax (copies of a labeled row share a fold), the folds the CV estimators
    (``QSGS2AUCCV`` / ``QS3ORAOCV``, fold seed 0) draw themselves; the score is
    the validation AUC (the mean over the k-1 splits for ordinal sets), the best mean wins (the
    first in grid order on ties), then a refit on all the training data. Semi-supervised methods
    see ``cv_unlabeled`` (2,000) unlabeled points during CV, all of them in the refit.
  - test AUC: ``qsg_jax.metrics.binary_auc`` / ``ordinal_auc`` of a ranking score: the
    decision function (SVC, LogisticRegression binary, ours), P(y = 1) (binary LightGBM,
    self-training), the expected class sum_j j P(y = j) (ordinal classifiers), the regression
    output (SVR, LightGBM regressor on the class index).
The test set is only scored, never used to choose anything; "best peer" in the report is the
peer with the best mean test AUC, the comparison target (as in the issue), not a tuned choice;
a peer paired with another peer (``baseline``: LightGBM stumps, a diagnostic of the trees' lead)
counts as a peer like the others.

Adding a method is one ``Method`` entry in ``METHODS``. Each (dataset, trial, method) is one cell
of ``experiments.common.store`` (``--resume``; a finished directory is never replaced without
``--overwrite``; a --csv run is tied to the file's contents, its sha256, not only its path).
Output in --output_dir: results.md (tables), results.json (everything).
"""

import dataclasses
import hashlib
import importlib
import io
import itertools
import json
import os
import pathlib
import platform
import shlex
import time
import warnings
from typing import Callable, NamedTuple, Optional

import numpy as np

import qsg_jax
from qsg_jax import data as data_lib
from qsg_jax import folds as folds_lib
from qsg_jax import metrics
from qsg_jax.config import FitConfig
from qsg_jax.data import preprocessing
from experiments.common import cli
from experiments.common import reporting
from experiments.common import store as store_lib


DEFAULT_DATASETS = ("sgemm", "cod_rna", "ijcnn1", "skin", "bank_marketing", "accelerometer")
CV_FOLD_SEED = 0        # the fold seed of QSGS2AUCCV / QS3ORAOCV (model_selection's default)
LABELED = {"binary": 200, "ordinal": 500}


# --- The methods -------------------------------------------------------------------------------

class FitData(NamedTuple):
  """What a method trains on (scaled features; labels 0..k-1), and the common CV's settings for
  a method that runs that CV itself (the CV estimators)."""
  x_labeled: np.ndarray     # [n_l, d]
  y_labeled: np.ndarray     # [n_l] int
  x_unlabeled: np.ndarray   # [n_u, d]
  num_classes: int          # k
  cv_folds: int = 3         # F
  cv_unlabeled: int = 2000  # unlabeled points a semi-supervised method sees during CV


@dataclasses.dataclass(frozen=True)
class Method:
  """One compared method: how it is tuned, fitted and scored.

  fit(params, data, seed) returns score(x) -> [n] ranking scores, where params = ``fixed``
  plus one point of ``grid`` (name -> values), chosen by the common CV. An empty grid means "as
  is" (defaults, or a method that runs the same CV itself; ``tuning`` says which).
  """
  key: str                        # --methods name
  label: str                      # table name; "binary / ordinal" when they differ
  family: str                     # "peer" or "ours"
  tasks: tuple                    # ("binary", "ordinal")
  fit: Callable
  grid: dict = dataclasses.field(default_factory=dict)
  fixed: dict = dataclasses.field(default_factory=dict)   # settings not searched
  score: str = ""                 # which output ranks
  uses_unlabeled: bool = False
  tuning: str = "common CV"       # or "defaults", "own CV (same folds)"
  baseline: str = ""              # key of the method this one is paired with in the report
  requires: tuple = ()            # modules that must import
  install: str = "pip install 'qsg_jax[peers]'"
  unavailable: Callable = lambda: None   # -> reason it cannot run here, or None

  def fingerprint(self):
    """8 hex digits of what fixes the method's numbers (label, grid, fixed settings, and for our
    methods the library's source, ``library_digest``): a cell stored under another fingerprint
    is never reused, so a resumed run recomputes our cells after any change to qsg_jax and
    keeps the peers' cells."""
    parts = [self.label, self.grid, self.fixed]
    if self.family == "ours":
      parts.append(library_digest())
    text = json.dumps(parts, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:8]

  def name(self, task):
    parts = self.label.split(" / ")
    return parts[task == "ordinal"] if len(parts) == 2 else self.label

  def why_unavailable(self):
    for module in self.requires:
      try:
        importlib.import_module(module)
      except ImportError as e:
        return f"{module} not importable ({e}); {self.install}"
    return self.unavailable()


def library_digest():
  """SHA-256 of every source file of the qsg_jax package (path and bytes, sorted by path):
  what our methods' numbers depend on besides their options."""
  root = pathlib.Path(qsg_jax.__file__).parent
  digest = hashlib.sha256()
  for path in sorted(root.rglob("*.py")):
    digest.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
  return digest.hexdigest()


def _proba_score(model, x, k):
  """P(y = 1) for k = 2, else the expected class sum_j j P(y = j)."""
  proba = model.predict_proba(x)
  return proba[:, 1] if k == 2 else proba @ model.classes_.astype(np.float64)


def _with_unlabeled(d):
  """(X, y) for scikit-learn's semi-supervised API: unlabeled rows marked -1."""
  x = np.concatenate([d.x_labeled, d.x_unlabeled])
  y = np.concatenate([d.y_labeled, np.full(d.x_unlabeled.shape[0], -1, np.int64)])
  return x, y


def _fit_svc(p, d, seed):
  from sklearn.svm import SVC  # pylint: disable=g-import-not-at-top
  return SVC(**p).fit(d.x_labeled, d.y_labeled).decision_function


def _fit_svr(p, d, seed):
  from sklearn.svm import SVR  # pylint: disable=g-import-not-at-top
  return SVR(**p).fit(d.x_labeled, d.y_labeled).predict


def _fit_logreg(p, d, seed):
  from sklearn.linear_model import LogisticRegression  # pylint: disable=g-import-not-at-top
  model = LogisticRegression(**p).fit(d.x_labeled, d.y_labeled)
  return model.decision_function if d.num_classes == 2 else (
      lambda x: _proba_score(model, x, d.num_classes))


def _fit_lgbm_classifier(p, d, seed):
  import lightgbm  # pylint: disable=g-import-not-at-top
  model = lightgbm.LGBMClassifier(**p, n_jobs=1, verbose=-1, random_state=seed)
  model.fit(d.x_labeled, d.y_labeled)
  return lambda x: _proba_score(model, x, d.num_classes)


def _fit_lgbm_regressor(p, d, seed):
  import lightgbm  # pylint: disable=g-import-not-at-top
  model = lightgbm.LGBMRegressor(**p, n_jobs=1, verbose=-1, random_state=seed)
  return model.fit(d.x_labeled, d.y_labeled.astype(np.float64)).predict


def _fit_self_training(p, d, seed):
  """SelfTrainingClassifier(SVC) with sigmoid-calibrated probabilities (scikit-learn 1.9's
  replacement of the deprecated SVC(probability=True)), on at most ``max_unlabeled`` unlabeled
  points (a uniform subset): self-training refits an SVC on every point it labels, and with all
  20,000 one refit took 1,105 s on bank_marketing."""
  from sklearn.calibration import CalibratedClassifierCV  # pylint: disable=g-import-not-at-top
  from sklearn.semi_supervised import SelfTrainingClassifier  # pylint: disable=g-import-not-at-top
  from sklearn.svm import SVC  # pylint: disable=g-import-not-at-top
  p = dict(p)
  self_training = {name: p.pop(name) for name in ("threshold", "max_iter")}
  cap = p.pop("max_unlabeled")
  if d.x_unlabeled.shape[0] > cap:   # the cost bound: at most ``cap`` unlabeled points
    pick = np.random.default_rng([seed, 2]).choice(d.x_unlabeled.shape[0], cap, replace=False)
    d = d._replace(x_unlabeled=d.x_unlabeled[np.sort(pick)])
  calibration_folds = int(np.clip(np.bincount(d.y_labeled).min(), 2, 3))
  base = CalibratedClassifierCV(SVC(**p, random_state=seed), ensemble=False,
                                cv=calibration_folds)
  model = SelfTrainingClassifier(base, **self_training).fit(*_with_unlabeled(d))
  return lambda x: _proba_score(model, x, d.num_classes)


def _fit_mord(name):
  def fit(p, d, seed):
    import mord  # pylint: disable=g-import-not-at-top
    model = getattr(mord, name)(**p).fit(d.x_labeled, d.y_labeled)
    return lambda x: _proba_score(model, x, d.num_classes)
  return fit


def _fit_libauc(p, d, seed):
  """A one-hidden-layer MLP trained with LibAUC's AUC-margin loss and PESG, full batch."""
  import torch  # pylint: disable=g-import-not-at-top
  from libauc.losses import AUCMLoss  # pylint: disable=g-import-not-at-top
  from libauc.optimizers import PESG  # pylint: disable=g-import-not-at-top
  torch.set_num_threads(1)
  torch.manual_seed(seed)
  x = torch.tensor(d.x_labeled, dtype=torch.float32)
  y = torch.tensor(d.y_labeled, dtype=torch.float32)
  model = torch.nn.Sequential(torch.nn.Linear(x.shape[1], p["hidden"]), torch.nn.ReLU(),
                              torch.nn.Linear(p["hidden"], 1))
  cpu = torch.device("cpu")
  loss_fn = AUCMLoss(margin=p["margin"], imratio=float(y.mean()), device=cpu)
  opt = PESG(model.parameters(), loss_fn=loss_fn, lr=p["lr"], weight_decay=p["weight_decay"],
             verbose=False, device=cpu)
  for _ in range(p["steps"]):
    loss = loss_fn(torch.sigmoid(model(x)), y[:, None])
    opt.zero_grad()
    loss.backward()
    opt.step()
  return lambda z: model(torch.tensor(z, dtype=torch.float32))[:, 0].detach().numpy()


class _TailQuantile:
  """Rank-transforms (scikit-learn's ``QuantileTransformer``, 1,000 quantiles, uniform output)
  only the long-tailed features, those ``qsg_jax.data.preprocessing.tail_ranks`` picks (the
  estimators' ``scale_inputs="auto"``, which ranks them with all rows); the others pass
  unchanged."""

  def __init__(self, seed=0):
    self.seed = seed

  def get_params(self, deep=True):
    return {"seed": self.seed}

  def set_params(self, **params):
    self.seed = params.get("seed", self.seed)
    return self

  def fit(self, x, y=None):
    from sklearn import preprocessing   # pylint: disable=g-import-not-at-top
    x = np.asarray(x, np.float64)
    self.columns_ = data_lib.preprocessing.tail_ranks(x).columns
    self.quantiles_ = preprocessing.QuantileTransformer(
        n_quantiles=1000, random_state=self.seed).fit(x[:, self.columns_]) if self.columns_.size \
        else None
    return self

  def transform(self, x):
    x = np.array(x, np.float64)
    if self.columns_.size:
      x[:, self.columns_] = self.quantiles_.transform(x[:, self.columns_])
    return x

  def fit_transform(self, x, y=None):
    return self.fit(x).transform(x)


def _qsg(cv=False, quantile=False, tail=False):
  """Ours through the scikit-learn estimators, with ``p`` as their options (they min-max scale
  again: the identity here up to rounding). ``cv``: the CV estimator, on the common CV's folds
  (fold seed 0 is theirs) and unlabeled count. ``quantile``: behind scikit-learn's
  ``QuantileTransformer`` (1,000 quantiles of the labeled and unlabeled rows, uniform output) in
  a pipeline, the rank transform a user would put in front of a kernel for heavy-tailed
  features (trees are invariant to it); ``tail``: behind ``_TailQuantile`` (that transform of
  the long-tailed features only)."""
  def fit(p, d, seed):
    from sklearn import pipeline, preprocessing   # pylint: disable=g-import-not-at-top
    binary, options = d.num_classes == 2, dict(p)
    if cv:
      cls = qsg_jax.QSGS2AUCCV if binary else qsg_jax.QS3ORAOCV
      options.update(cv=d.cv_folds, cv_unlabeled=d.cv_unlabeled)
    else:
      cls = qsg_jax.QSGS2AUC if binary else qsg_jax.QS3ORAO
    model = cls(random_state=seed, unlabeled_label=-1, **options)
    if quantile:
      model = pipeline.make_pipeline(
          preprocessing.QuantileTransformer(n_quantiles=1000, random_state=seed), model)
    if tail:
      model = pipeline.make_pipeline(_TailQuantile(seed), model)
    return model.fit(*_with_unlabeled(d)).decision_function
  return fit


def _needs_param(name):
  def reason():
    if name not in qsg_jax.QSGS2AUC().get_params():
      return f"qsg_jax.QSGS2AUC has no {name!r} parameter in this version"
    return None
  return reason


def _needs_value(name, value):
  """Unavailable unless QSGS2AUC accepts ``name=value`` (checked on a tiny fit)."""
  def reason():
    absent = _needs_param(name)()
    if absent:
      return absent
    x = np.linspace(0.0, 1.0, 24).reshape(12, 2)
    y = np.array([0, 1] * 6)
    try:
      qsg_jax.QSGS2AUC(**{name: value}).fit(x, y)
    except (ValueError, TypeError) as e:
      return f"qsg_jax.QSGS2AUC({name}={value!r}) is not accepted in this version ({e})"
    return None
  return reason


# Grids widened where a first full run's CV choices sat on an edge (never from test results):
# SVC C = 100 and gamma = 10, LogisticRegression C = 1000, LibAUC lr = 1, SelfTraining gamma = 10,
# mord alpha = 0.01, LightGBM 300 trees / 7 leaves.
SVM_GRID = {"C": [0.1, 1.0, 10.0, 100.0, 1000.0], "gamma": [0.01, 0.1, 1.0, 10.0, 100.0]}
LGBM_GRID = {"n_estimators": [100, 300, 1000], "num_leaves": [4, 7, 31],
             "min_child_samples": [2, 5, 20]}
LGBM_FIXED = {"learning_rate": 0.05}
MORD_GRID = {"alpha": [0.001, 0.01, 0.1, 1.0, 10.0, 100.0]}
CLASS_SCORE = "P(y=1); ordinal: expected class"
# What QSGS2AUC() / QS3ORAO() fitted before the data-driven defaults: DSG with the papers' fixed
# sigma, lambda and gamma (FitConfig), under today's parameter names.
PAPERS_DEFAULTS = {"solver": "dsg", "length_scale": float(np.sqrt(0.5 / FitConfig.sigma)),
                   "lam": FitConfig.lam, "labeled_weight": FitConfig.gamma,
                   "scale_inputs": True}     # min-max alone, as before "auto" ranked features
METHODS = (
    Method("svc", "SVC (rbf)", "peer", ("binary",), _fit_svc, SVM_GRID,
           score="decision_function"),
    Method("svr", "SVR (rbf)", "peer", ("ordinal",), _fit_svr, SVM_GRID,
           score="regression output (class index target)"),
    Method("logreg", "LogisticRegression", "peer", ("binary", "ordinal"), _fit_logreg,
           {"C": [0.01, 0.1, 1.0, 10.0, 100.0, 1000.0, 1e4]}, {"max_iter": 5000},
           "decision_function; ordinal: expected class (multinomial)"),
    Method("lgbm_classifier", "LightGBM classifier", "peer", ("binary", "ordinal"),
           _fit_lgbm_classifier, LGBM_GRID, LGBM_FIXED, CLASS_SCORE, requires=("lightgbm",)),
    Method("lgbm_regressor", "LightGBM regressor", "peer", ("ordinal",), _fit_lgbm_regressor,
           LGBM_GRID, LGBM_FIXED, "regression output (class index target)",
           requires=("lightgbm",)),
    # A diagnostic of the trees' lead (paired with the classifier in the report): boosted
    # stumps (num_leaves 2) fit an additive model, one step function per feature, no
    # interactions.
    Method("lgbm_stumps", "LightGBM classifier, stumps", "peer", ("binary", "ordinal"),
           _fit_lgbm_classifier, {k: v for k, v in LGBM_GRID.items() if k != "num_leaves"},
           {**LGBM_FIXED, "num_leaves": 2}, CLASS_SCORE, baseline="lgbm_classifier",
           requires=("lightgbm",)),
    Method("self_training_svc", "SelfTraining(SVC)", "peer", ("binary", "ordinal"),
           _fit_self_training, {"C": [1.0, 10.0, 100.0], "gamma": [1.0, 10.0, 100.0]},
           {"threshold": 0.75, "max_iter": 10, "max_unlabeled": 2000}, CLASS_SCORE,
           uses_unlabeled=True),
    Method("mord_at", "mord LogisticAT", "peer", ("ordinal",), _fit_mord("LogisticAT"),
           MORD_GRID, score="expected class", requires=("mord",)),
    Method("mord_it", "mord LogisticIT", "peer", ("ordinal",), _fit_mord("LogisticIT"),
           MORD_GRID, score="expected class", requires=("mord",)),
    Method("libauc", "LibAUC AUCM+PESG (MLP)", "peer", ("binary",), _fit_libauc,
           {"lr": [0.03, 0.1, 0.3, 1.0, 3.0], "weight_decay": [1e-4, 1e-2]},
           {"hidden": 32, "steps": 1000, "margin": 1.0}, "network output",
           requires=("torch", "libauc"), install="pip install torch libauc (not in the extra: "
           "libauc's own requirements pull ~80 packages; --no-deps with torch suffices here)"),
    Method("qsg_defaults", "QSGS2AUC() / QS3ORAO()", "ours", ("binary", "ordinal"), _qsg(),
           score="decision_function", uses_unlabeled=True, tuning="defaults"),
    Method("qsg_cv", "QSGS2AUCCV / QS3ORAOCV", "ours", ("binary", "ordinal"), _qsg(cv=True),
           score="decision_function", uses_unlabeled=True, tuning="own CV (same folds)"),
    # Variants: one entry each, their options in `fixed`, `baseline` the entry they are paired
    # with in the report ("unavailable" where this version of the library lacks the option).
    Method("qsg_ard", 'QSGS2AUC(length_scale="ard") / QS3ORAO(length_scale="ard")', "ours",
           ("binary", "ordinal"), _qsg(), fixed={"length_scale": "ard"},
           score="decision_function", uses_unlabeled=True, tuning="defaults",
           baseline="qsg_defaults", unavailable=_needs_value("length_scale", "ard")),
    Method("qsg_quantile", "QuantileTransformer + QSGS2AUC() / QuantileTransformer + QS3ORAO()",
           "ours", ("binary", "ordinal"), _qsg(quantile=True), score="decision_function",
           uses_unlabeled=True, tuning="defaults", baseline="qsg_defaults"),
    Method("qsg_tailq", "TailQuantile + QSGS2AUC() / TailQuantile + QS3ORAO()",
           "ours", ("binary", "ordinal"), _qsg(tail=True), score="decision_function",
           uses_unlabeled=True, tuning="defaults", baseline="qsg_defaults"),
    Method("qsg_isotropic",
           'QSGS2AUC(length_scale="isotropic") / QS3ORAO(length_scale="isotropic")', "ours",
           ("binary", "ordinal"), _qsg(), fixed={"length_scale": "isotropic"},
           score="decision_function", uses_unlabeled=True, tuning="defaults",
           baseline="qsg_defaults", unavailable=_needs_value("length_scale", "isotropic")),
    Method("qsg_dsg", 'QSGS2AUC(solver="dsg") / QS3ORAO(solver="dsg")', "ours",
           ("binary", "ordinal"), _qsg(), fixed={"solver": "dsg"},
           score="decision_function", uses_unlabeled=True, tuning="defaults",
           baseline="qsg_defaults", unavailable=_needs_param("solver")),
    Method("qsg_papers", "previous release's defaults (DSG, the papers' values)", "ours",
           ("binary", "ordinal"), _qsg(), fixed=PAPERS_DEFAULTS,
           score="decision_function", uses_unlabeled=True, tuning="defaults",
           baseline="qsg_defaults", unavailable=_needs_param("solver")),
)
METHOD_KEYS = tuple(m.key for m in METHODS)


def methods_for(task, keys=()):
  """The methods of ``METHODS`` for a task (``keys``: only these)."""
  return [m for m in METHODS if task in m.tasks and (not keys or m.key in keys)]


def grid_points(grid):
  """Every combination of a grid, in its stated order (the last name varies fastest)."""
  names = list(grid)
  return [dict(zip(names, values)) for values in itertools.product(*grid.values())]


def describe_grid(grid):
  """"C in {0.1, 1} x gamma in {1, 10}"."""
  text = lambda v: f"{v:g}" if isinstance(v, float) else str(v)
  return " x ".join(f"{name} in {{{', '.join(map(text, values))}}}"
                    for name, values in grid.items()) or "-"


# --- Settings ----------------------------------------------------------------------------------

NUM_CLASSES = 5   # classes a regression target is cut into by default


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(cli.RunSettings):
  """The comparison's settings (one flag each)."""
  datasets: tuple[str, ...] = cli.setting((), "Datasets (comma-separated; see "
                                          "qsg_jax.data.available()); default: the six of "
                                          "issue 27, or none with --csv.")
  csv: str = cli.setting("", "A CSV file to compare on (with --target): binary for 2 target "
                         "values, ordinal for 3 to 20 whole numbers, else (other numbers) cut "
                         "into --num_classes.")
  target: str = cli.setting("", "The --csv file's target column.")
  data_dir: Optional[str] = None
  methods: tuple[str, ...] = cli.setting((), "Methods to run (default: all available): " +
                                         ", ".join(METHOD_KEYS) + ".", choices=METHOD_KEYS)
  trials: int = 3
  seed: int = cli.setting(0, "Seed of the run; trial t's splits, unlabeled subset and methods' "
                          "seeds come from SeedSequence([seed, t]).", lower=0)
  num_labeled: int = cli.setting(0, "Labeled points; 0 = the protocol's (500 ordinal, 200 "
                                 "binary; at most half the non-test rows).", lower=0)
  num_unlabeled: int = cli.setting(20000, "Unlabeled points (at most the rows left).", lower=1)
  test_size: int = cli.setting(20000, "Test points (at most a quarter of the rows when drawn "
                               "from them).", lower=1)
  num_classes: int = cli.setting(NUM_CLASSES, "Classes of a regression target (equal "
                                 "frequency); a binary or ordinal target keeps its own.", lower=2)
  cv_folds: int = cli.setting(3, "Folds of the common stratified CV.", lower=2)
  cv_unlabeled: int = cli.setting(2000, "Unlabeled points a semi-supervised method sees during "
                                  "CV.", lower=1)
  publish: str = cli.setting("", "Also write results.md to this path (e.g. "
                             "experiments/reproduction/peers_results.md).")
  output_dir: str = "results/peers"

  def __post_init__(self):
    super().__post_init__()
    if bool(self.csv) != bool(self.target):
      raise cli.UserError("--csv and --target go together: pass the file and its target column "
                          f"(received --csv={self.csv!r}, --target={self.target!r}).")
    if self.csv and not os.path.isfile(self.csv):
      raise cli.UserError(f"--csv={self.csv!r}: no such file.")


SELECTION = ("datasets", "methods", "trials", "publish")   # choose cells, not their numbers


# --- Data --------------------------------------------------------------------------------------

@dataclasses.dataclass(frozen=True)
class Labeled:
  """A dataset with class labels 0..k-1."""
  name: str
  task: str                       # "binary" or "ordinal"
  x: np.ndarray                   # [n, d]
  y: np.ndarray                   # [n]
  x_test: Optional[np.ndarray]    # official test file, or None
  y_test: Optional[np.ndarray]
  num_classes: int
  note: str                       # how the labels were made
  # (lowest, highest) target value of each class as text, so that a note can name the classes
  # in the user's values (() = the class indices).
  classes: tuple = ()
  # How a CSV was read (``read_csv_facts``) and a regression target's cut points: the report's.
  read: dict = dataclasses.field(default_factory=dict)


def read_csv(path, target, num_classes):
  """A user CSV as a ``qsg_jax.data.Dataset``: numeric columns as they are, others one-hot; rows
  without a target left out with a warning (the comparison states them in its report)."""
  dataset, facts = read_csv_facts(path, target, num_classes)
  if facts["rows_without_target"]:   # said, never silent
    warnings.warn(f"{facts['rows_without_target']} of {facts['rows']} rows of {path} have no "
                  f"--target={target!r} value and are left out of the comparison.", UserWarning,
                  stacklevel=2)
  if facts.get("minus_one_rows"):   # sweep Z10: a marker column ran as a third class
    warnings.warn(f"--target={target!r} of {path} holds -1 on {facts['minus_one_rows']} rows "
                  "beside two classes, taken as a third ordered class below them (ordinal, k = "
                  "3). If -1 marks unlabeled rows, leave those cells empty: rows without a "
                  "target are left out (the comparison draws its own unlabeled rows).",
                  UserWarning, stacklevel=2)
  return dataset


def _plain_value(value):
  """A NumPy scalar as a Python one, a whole float as an int (the classes of a target read as
  floats because of an empty cell are shown as 0, 1, 2, not 0.0, 1.0, 2.0)."""
  value = value.item() if isinstance(value, np.generic) else value
  return int(value) if isinstance(value, float) and value.is_integer() else value


def read_csv_facts(path, target, num_classes):
  """(``read_csv``'s dataset, what the report says of the reading): the sha256 of the file's
  bytes (the bytes parsed: the run's identity, so that results of a file's old contents are
  never reused for new ones), the rows left out for want of a target, the classes' values, the
  one-hot encoded and constant columns."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  data = pathlib.Path(path).read_bytes()   # read once: the bytes hashed are the bytes parsed
  frame = _read_frame(path, data)
  if target not in frame.columns:
    near = [c for c in frame.columns if str(c).strip().lower() == target.strip().lower()]
    columns = list(frame.columns)
    raise cli.UserError(f"--target={target!r} is not a column of {path}; its {len(columns)} "
                        f"columns are {columns[:30]}{' ...' if len(columns) > 30 else ''}." + (
                            f" Did you mean --target={near[0]!r}?" if near else ""))
  missing = frame[target].isna().to_numpy()
  facts = {"path": path, "sha256": hashlib.sha256(data).hexdigest(), "rows": len(frame),
           "rows_without_target": int(missing.sum()),
           "lines_without_target": [int(r) + 2 for r in frame.index[missing][:10]]}
  frame = frame[~missing]   # stated in ``facts`` (the report), warned by ``read_csv``
  raw = frame.pop(target).to_numpy()
  if frame.shape[1] == 0:
    raise cli.UserError(f"{path} has no column besides --target={target!r}: there is nothing "
                        "to rank by. Add the feature columns.")
  features = _checked_features(frame, path)
  x = pd.get_dummies(features, dtype=np.float64)
  values = np.unique(raw)
  if values.size < 2:
    raise cli.UserError(f"--target={target!r} of {path} takes {values.size} value(s) "
                        f"({values.tolist()[:1]}): a ranking needs at least 2.")
  constant = [str(c) for c in features.columns if features[c].nunique() < 2]
  if len(constant) == features.shape[1]:   # every method would rank all rows alike
    raise cli.UserError(f"{path}: every feature column is constant ({constant[:10]}"
                        f"{' ...' if len(constant) > 10 else ''}, one value in all "
                        f"{len(features)} rows): there is nothing to rank by. Add columns that "
                        "vary from row to row.")
  text = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
  facts.update(one_hot={str(c): int(features[c].nunique()) for c in text}, constant=constant)
  facts["columns"] = "; ".join(
      [f"{features.shape[1] - len(text)} numeric as read"]
      + (["one-hot: " + ", ".join(f"{c!r} ({n} columns)" for c, n in facts["one_hot"].items())]
         if text else [])
      + ([f"constant (kept): {', '.join(map(repr, constant))}"] if constant else []))
  numeric = np.issubdtype(raw.dtype, np.number)
  name = "csv_" + pathlib.Path(path).stem
  if values.size == 2:
    y, task = (raw == values[1]).astype(np.int64), "binary"
    note = f"binary, positive = {_plain_value(values[1])!r}"
  elif numeric and np.all(values == np.round(values)) and values.size <= 20:
    y, task = np.searchsorted(values, raw).astype(np.int64), "ordinal"
    note = f"ordinal, classes {[_plain_value(v) for v in values]}"
    if values.size == 3 and values[0] == -1 and values[1] >= 0:   # the estimators' marker
      facts["minus_one_rows"] = int(np.sum(raw == -1))
      note += (f" (-1, on {facts['minus_one_rows']} rows, is the lowest class; if it marks "
               "unlabeled rows, leave those cells empty)")
  elif numeric:
    y, task, note = raw.astype(np.float64), "regression", "regression target"
  else:
    shown = [_plain_value(v) for v in values[:8]]
    raise cli.UserError(f"--target={target!r} has {values.size} non-numeric values "
                        f"{shown}{' ...' if values.size > 8 else ''}; their order is unknown. Map "
                        "them to ordered whole numbers first (and check for stray spaces).")
  if task != "regression":
    facts["classes"] = [(str(_plain_value(v)),) * 2 for v in values]
  if task != "regression" and num_classes != NUM_CLASSES:   # said, never ignored
    raise cli.UserError(f"--num_classes={num_classes} cuts regression targets only; --target="
                        f"{target!r} has {values.size} values, taken as {values.size} "
                        f"{task} classes. Drop --num_classes, or map the target to the classes "
                        "you want first.")
  facts["labels"] = note
  return data_lib.make_dataset(name, task, x.to_numpy(), y, feature_names=list(x.columns),
                               description=f"{path}: {note}"), facts


COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".xz": "xz", ".zip": "zip", ".zst": "zstd"}
MAGIC = {b"\x1f\x8b": "gzip", b"BZh": "bz2", b"\xfd7zXZ": "xz", b"PK\x03\x04": "zip"}


def _read_frame(path, data):
  """The CSV (``data``: the bytes of the file at ``path``, compressed where its suffix says so,
  as pandas reads a path) as a data frame: separated by commas, or, where the comma read finds
  one column whose header holds ";", a tab or "|", by that (";" files with decimal commas, "1,5",
  as numbers); spaces after a separator are skipped."""
  import pandas as pd  # pylint: disable=g-import-not-at-top

  compression = COMPRESSIONS.get(pathlib.Path(path).suffix.lower())

  def read(**how):
    try:
      return pd.read_csv(io.BytesIO(data), skipinitialspace=True, compression=compression,
                         **how)
    except UnicodeDecodeError as e:   # sweep Z10: pandas' words alone, no fix
      packed = next((kind for magic, kind in MAGIC.items() if data.startswith(magic)), None)
      raise cli.UserError(
          f"{path} is {packed}-compressed: name it with its suffix (.gz, .bz2, .xz, .zip) or "
          "decompress it." if packed and not compression else
          f"{path} is not UTF-8 text (byte {e.object[e.start]:#04x} at position {e.start}); save "
          "it as UTF-8 first, e.g. pd.read_csv(path, encoding='latin-1').to_csv(new_path, "
          "index=False).") from None
    except (pd.errors.EmptyDataError, pd.errors.ParserError, OSError, EOFError) as e:
      raise cli.UserError(f"{path} cannot be read as a CSV file with a header row "
                          f"({type(e).__name__}: {str(e).strip()[:120]}).") from None

  frame = read()
  separator = next((s for s in (";", "\t", "|") if s in str(frame.columns[0])), None)
  if frame.shape[1] != 1 or separator is None:
    return frame
  frame = read(sep=separator)
  if separator == ";":   # decimal commas read as numbers where they leave fewer text columns
    commas = read(sep=separator, decimal=",")
    if commas.select_dtypes("number").shape[1] > frame.select_dtypes("number").shape[1]:
      frame = commas
  return frame


# Distinct non-numeric values a column of numbers may hold and still be taken for one with
# missing-value markers ("?", "-", "missing"), not for categories.
MAX_MISSING_MARKERS = 5


def _checked_features(frame, path):
  """The feature columns of a user CSV, refused where one-hot encoding or the numbers would be
  wrong without a word: missing, infinite or beyond-float32 cells, whole numbers that count the
  rows (a row number or ID in file order: a file sorted by the target would rank perfectly),
  and text columns that read as numbers ("1,257.30"), as numbers with missing-value markers
  ("?", "-"), as dates, or have a value in most rows (an ID). True / False become 1 / 0."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  frame = frame.copy()
  line = lambda row: f"line {row + 2}"   # row: the data row read_csv numbered; the header is 1
  for name in frame.columns:
    column = frame[name]
    if name == preprocessing.saved_index_column(frame[[name]]):
      raise cli.UserError(f"{path}: column {name!r} counts the rows (a row index pandas saved: "
                          "to_csv's index=True); as a feature it would rank by file order. Drop "
                          "it, or save the file with index=False.")
    if column.isna().any():
      raise cli.UserError(f"{path}: column {name!r} has {int(column.isna().sum())} missing "
                          f"values (first on {line(column.index[column.isna().to_numpy()][0])});"
                          " fill or drop them first.")
    if pd.api.types.is_bool_dtype(column) or (column.dtype == object and all(
        isinstance(v, (bool, np.bool_)) for v in column.tolist())):
      frame[name] = column.astype(np.float64)
    elif pd.api.types.is_numeric_dtype(column):
      _check_numbers(column, name, path, line)
    else:
      text = column.astype(str).str.strip()
      distinct = text.nunique()
      numbers = pd.to_numeric(text, errors="coerce").notna().to_numpy()
      markers = sorted(set(text[~numbers]))
      why = None
      if preprocessing.numbers_written_as_text(text):
        what, _ = preprocessing.number_text_fix(text)
        why = (f"reads as numbers written as text (e.g. {text[~numbers].iloc[0]!r}: {what}); "
               "write plain numbers with a decimal point")
      elif markers and numbers.mean() >= 0.5 and len(markers) <= MAX_MISSING_MARKERS:
        why = (f"holds numbers but {int((~numbers).sum())} cells are text {markers} (first on "
               f"{line(column.index[~numbers][0])}): missing-value markers? As text the column "
               "would be one-hot encoded (a column per number, its order lost). Replace them by "
               f"numbers or drop their rows (pandas: read_csv(..., na_values={markers}), then "
               "fillna or dropna, and save again), or drop the column; for a category, write its "
               "values as words")
      elif _reads_as_dates(text.iloc[:1000]):   # dateutil per cell: a sample is enough
        why = (f"reads as dates (e.g. {text.iloc[0]!r}); convert them to numbers (e.g. days "
               "since the first) or drop the column")
      elif distinct > 20 and distinct > len(text) // 2:
        why = (f"has {distinct} distinct text values in {len(text)} rows (an identifier?): one-hot "
               "encoding would give a column per row; drop it or convert it to numbers")
      if why:
        raise cli.UserError(f"{path}: column {name!r} {why}. (Text columns with few values, such "
                            "as categories, are one-hot encoded.)")
  return frame


def _check_numbers(column, name, path, line):
  """Refuses a numeric feature column with infinite cells, cells float32 cannot hold (the
  estimators compute in float32: they would become inf, and a traceback mid-run), or whole
  numbers increasing down the file (a row number or ID: as a feature it ranks by file order)."""
  values = column.to_numpy(np.float64)
  bad = ~np.isfinite(values)
  if bad.any():
    raise cli.UserError(f"{path}: column {name!r} has {int(bad.sum())} infinite values "
                        f"(first on {line(column.index[bad][0])}); replace or drop them.")
  big = np.abs(values) > np.finfo(np.float32).max
  if big.any():
    first = column.index[big][0]
    raise cli.UserError(
        f"{path}: column {name!r} has {int(big.sum())} values beyond the float32 range "
        f"+-3.4e38 (first on {line(first)}: {column[first]:.3g}); the estimators compute in "
        "float32, where they would become inf. Rescale the column in the file (e.g. divide it "
        "by a power of ten, or take the logarithm of its size), or drop it.")
  if values.size > 2 and np.all(values == np.round(values)) and np.all(np.diff(values) > 0):
    by_one = np.all(np.diff(values) == 1)
    raise cli.UserError(
        f"{path}: column {name!r} counts the rows: whole numbers increasing "
        f"{'by one' if by_one else 'from row to row'} down the file ({values[0]:.0f}, "
        f"{values[1]:.0f}, ..., {values[-1]:.0f}), a row number or ID"
        f"{'' if by_one else ' (or a time stamp of a file sorted by time)'}; as a feature it "
        "would rank by file order (a file sorted by the target would look perfectly ranked). "
        "Drop the column (a real measurement: shuffle the file's rows to keep it).")


def _reads_as_dates(text):
  """Whether most cells of a text column parse as dates (pandas' own parser, quietly)."""
  import pandas as pd  # pylint: disable=g-import-not-at-top
  if not text.str.count(r"\d+").ge(2).mean() > 0.9:   # day and year at least ("1A" is a code)
    return False
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    return pd.to_datetime(text, errors="coerce", format="mixed").notna().mean() > 0.9


def _left_out(read):
  """The note on the rows a CSV's reading left out for want of a target ("" for none)."""
  count = read.get("rows_without_target", 0)
  if not count:
    return ""
  lines = read["lines_without_target"]
  shown = ", ".join(map(str, lines)) + (" ..." if count > len(lines) else "")
  return (f"; {count} of {read['rows']} rows without a target value left out (line"
          f"{'s' if count > 1 else ''} {shown})")


def labeled_dataset(name, settings):
  """Loads ``name`` (or the CSV) with labels 0..k-1."""
  read = {}
  if name.startswith("csv_") and settings.csv:   # rows left out: said in the note
    ds, read = read_csv_facts(settings.csv, settings.target, settings.num_classes)
  else:
    ds = data_lib.load(name, data_dir=settings.data_dir)
  if ds.task == "regression":
    k = settings.num_classes
    try:
      y, edges = data_lib.discretize_equal_frequency(ds.y, k)
    except ValueError as error:   # ties: said in the flag's name
      raise cli.UserError(f"--num_classes={k}: {error} (--num_classes "
                          "sets the bins; or map the target to classes first).") from None
    y_test = None if ds.y_test is None else data_lib.discretize_with_edges(ds.y_test, edges)
    cuts = [float(e) for e in edges[1:-1]]
    classes = tuple((f"{ds.y[y == j].min():.6g}", f"{ds.y[y == j].max():.6g}") for j in range(k))
    return Labeled(ds.name, "ordinal", ds.x, y, ds.x_test, y_test, k,
                   f"regression target cut into {k} equal-frequency classes at "
                   f"{', '.join(f'{e:.6g}' for e in cuts)} (quantiles of all {ds.y.size} rows; a "
                   "value equal to a cut goes to the class below)" + _left_out(read),
                   classes, dict(read, cut_points=cuts))
  k = int(ds.num_classes)
  # a CSV's own note: which text class is the positive one, or the classes
  note = read["labels"] if read else f"{ds.task} labels as loaded"
  return Labeled(ds.name, ds.task, ds.x, np.asarray(ds.y, np.int64), ds.x_test,
                 None if ds.y_test is None else np.asarray(ds.y_test, np.int64), k,
                 note + _left_out(read), tuple(read.get("classes", ())), read)


def _class_text(group):
  """"5" for a class of one value, "5 to 7" for one of several (its lowest and highest)."""
  return group[0] if group[0] == group[1] else f"{group[0]} to {group[1]}"


def merge_rare_classes(labeled, num_labeled, min_count):
  """Merges each ordinal class whose stratified share of ``num_labeled`` is below ``min_count``
  into its smaller neighbour (the CV needs ``min_count`` labeled points per class); the note
  names the classes left in the target's values (the indices shift with every merge)."""
  y, y_test, k = labeled.y.copy(), None if labeled.y_test is None else labeled.y_test.copy(), \
      labeled.num_classes
  groups = list(labeled.classes) or [(str(j), str(j)) for j in range(k)]
  merged = 0
  while k > 2:
    counts = np.bincount(y, minlength=k)
    share = np.floor(counts / y.size * num_labeled)
    if share.min() >= min_count:
      break
    i = int(np.argmin(share))
    j = min((c for c in (i - 1, i + 1) if 0 <= c < k), key=lambda c: counts[c])
    groups[j] = (groups[min(i, j)][0], groups[max(i, j)][1])
    del groups[i]
    merged += 1
    for arr in (y, y_test):
      if arr is not None:
        arr[arr == i] = j
        arr[arr > i] -= 1
    k -= 1
  if not merged:
    return labeled
  return dataclasses.replace(labeled, y=y, y_test=y_test, num_classes=k, classes=tuple(groups),
                             note=labeled.note + (
      f"; {labeled.num_classes} classes merged into k = {k} for the {min_count}-fold CV (a class"
      f" needs {min_count} of the {num_labeled} labeled rows by its share; each rare class "
      f"joined its smaller neighbour): {' | '.join(_class_text(g) for g in groups)}"))


class Trial(NamedTuple):
  """One trial's arrays, min-max scaled with the training rows' statistics."""
  train: FitData
  x_test: np.ndarray        # [n_t, d]
  y_test: np.ndarray        # [n_t]
  seed: int                 # the methods' random_state


def sizes_of(labeled, settings):
  """The trial sizes of a dataset (the same in every trial) and where its test points are.

  Test points drawn from the rows: ``test_size``, at most the rows the labeled and unlabeled
  points leave, but a quarter of the rows on a small set (which then gets fewer unlabeled ones).
  """
  n = labeled.x.shape[0]
  wanted = settings.num_labeled or LABELED[labeled.task]
  if labeled.x_test is not None:
    num_test, drawn = min(settings.test_size, labeled.x_test.shape[0]), 0
    where = "official test file" + (f" (uniform subset of its {labeled.x_test.shape[0]} rows)"
                                    if labeled.x_test.shape[0] > num_test else "")
  else:
    num_test = min(settings.test_size, max(n // 4, n - wanted - settings.num_unlabeled))
    drawn, where = num_test, "rows held out before the labeled draw"
  num_labeled = min(wanted, (n - drawn) // 2)
  return {"labeled": num_labeled,
          "unlabeled": min(settings.num_unlabeled, n - drawn - num_labeled),
          "test": num_test, "features": labeled.x.shape[1], "test set": where}


def make_trial(labeled, settings, t):
  """Splits, subsamples and scales trial ``t`` (a pure function of seed, t and the sizes)."""
  split_rng, unlabeled_rng, test_rng, fit_rng = (
      np.random.default_rng(s) for s in np.random.SeedSequence([settings.seed, t]).spawn(4))
  x, y, k = labeled.x, labeled.y, labeled.num_classes
  sizes = sizes_of(labeled, settings)
  official = labeled.x_test is not None
  num_labeled, num_test = sizes["labeled"], 0 if official else sizes["test"]
  split = data_lib.split_semisupervised(split_rng, y, num_labeled, num_test=num_test,
                                        stratify=True, num_classes=k)
  unlabeled = split.unlabeled
  if unlabeled.size > settings.num_unlabeled:
    unlabeled = np.sort(unlabeled_rng.choice(unlabeled, settings.num_unlabeled, replace=False))
  if official:
    x_test, y_test = labeled.x_test, labeled.y_test
    if x_test.shape[0] > sizes["test"]:
      pick = np.sort(test_rng.choice(x_test.shape[0], sizes["test"], replace=False))
      x_test, y_test = x_test[pick], y_test[pick]
  else:
    x_test, y_test = x[split.test], y[split.test]
  classes, distinct = folds_lib.class_counts(y[split.labeled], x[split.labeled])
  counts = np.zeros(k, np.int64)
  counts[classes] = distinct
  problem = _draw_problem(labeled, settings, num_labeled, counts,
                          np.bincount(y_test, minlength=k), official)
  if problem:
    raise cli.UserError(f"{labeled.name}, trial {t}: {problem}")
  lo, scale = data_lib.minmax_fit(np.concatenate([x[split.labeled], x[unlabeled]]))
  scaled = lambda a: data_lib.minmax_apply(a, lo, scale)
  train = FitData(scaled(x[split.labeled]), y[split.labeled], scaled(x[unlabeled]), k,
                  settings.cv_folds, settings.cv_unlabeled)
  return Trial(train, scaled(x_test), y_test, int(fit_rng.integers(2**31 - 1)))


def _draw_problem(labeled, settings, num_labeled, counts, test_counts, official):
  """Why a trial's draw cannot be scored ("" if it can), and only the fixes that can help: the
  labeled draw's distinct rows per class ``counts`` against the CV's folds (--num_labeled is
  capped at half the rows the test draw leaves), and a test set without a class (drawn
  uniformly, not stratified: only another --seed or more rows of the class change it)."""
  folds, problems, fixes = settings.cv_folds, [], []
  if counts.min() < folds:
    problems.append(f"the labeled draw has distinct rows per class {counts.tolist()} and the "
                    f"common {folds}-fold CV needs {folds} distinct labeled rows of every class "
                    "(copies share a fold)")
    wanted = settings.num_labeled or LABELED[labeled.task]
    fixes.append(f"--num_labeled is capped at half the rows the test draw leaves ({num_labeled} "
                 f"here, {wanted} asked), so raising it cannot help (a lower --test_size leaves "
                 "more)" if num_labeled < wanted else f"raise --num_labeled (now {num_labeled})")
    if 2 <= counts.min():
      fixes.append(f"lower --cv_folds to {counts.min()}")
    fixes.append("use a set with more rows of its rarest class")
  absent = np.flatnonzero(test_counts == 0)
  if absent.size:
    classes = getattr(labeled, "classes", ())   # a Labeled's, in the target's values
    names = [_class_text(classes[c]) if classes else str(c) for c in absent]
    problems.append(f"the test set ({int(test_counts.sum())} rows drawn " + (
        "from the official test file" if official else "uniformly from the rows, not stratified")
                    + f") has rows per class {test_counts.tolist()}, none of class "
                    f"{', '.join(names)}, and the test AUC needs every class")
    fixes.append("another --seed draws another test set" + (
        "" if official else ", but a class this rare in the file often misses it: add rows of it"))
  if not problems:
    return ""
  fixes = "; ".join(fixes)
  return "; ".join(problems) + ". " + fixes[0].upper() + fixes[1:] + "."


# --- Tuning, fitting, scoring ------------------------------------------------------------------

def auc(scores, labels, k):
  """Binary AUC, or the mean AUC over the k-1 ordinal splits (qsg_jax.metrics)."""
  scores = np.asarray(scores, np.float64)
  value = metrics.binary_auc(scores, labels) if k == 2 else metrics.ordinal_auc(scores, labels, k)
  return float(value)


def common_folds(x_labeled, y_labeled, num_folds):
  """(train [F, n_train] indices, valid [F, n_l] masks) of the common CV (qsg_jax's folds;
  copies of a labeled row share a fold)."""
  folds = folds_lib.stratified_folds(y_labeled, num_folds, seed=CV_FOLD_SEED, points=x_labeled)
  return folds_lib.fold_training_sets(folds, y_labeled)


def cross_validate(method, train, seed):
  """(best params, its mean validation AUC, [P] mean AUCs) of ``method.grid`` by the common CV.

  Sees only ``train`` (labeled points and unlabeled points), never a test point.
  """
  x_l, y_l, x_u, k = train.x_labeled, train.y_labeled, train.x_unlabeled, train.num_classes
  num_folds = train.cv_folds
  fold_train, valid = common_folds(x_l, y_l, num_folds)
  if method.uses_unlabeled and x_u.shape[0] > train.cv_unlabeled:
    pick = np.random.default_rng([seed, 1]).choice(x_u.shape[0], train.cv_unlabeled,
                                                   replace=False)
    x_u = x_u[np.sort(pick)]
  points = grid_points(method.grid)
  scores = np.zeros((len(points), num_folds))
  for i, params in enumerate(points):
    for f in range(num_folds):
      rows = fold_train[f]
      score = method.fit({**method.fixed, **params}, train._replace(
          x_labeled=x_l[rows], y_labeled=y_l[rows], x_unlabeled=x_u), seed)
      scores[i, f] = auc(score(x_l[valid[f]]), y_l[valid[f]], k)
  means = scores.mean(axis=1)
  best = int(np.argmax(means))
  return points[best], float(means[best]), means


def run_cell(method, trial):
  """Tunes, fits and scores one method on one trial; returns the cell's JSON-able record."""
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    start = time.perf_counter()
    params, cv_auc = {}, None
    if method.grid:
      params, cv_auc, _ = cross_validate(method, trial.train, trial.seed)
    tune_s = time.perf_counter() - start
    start = time.perf_counter()
    score = method.fit({**method.fixed, **params}, trial.train, trial.seed)
    fit_s = time.perf_counter() - start
    start = time.perf_counter()
    test_scores = np.asarray(score(trial.x_test), np.float64)
    predict_s = time.perf_counter() - start
  model = getattr(score, "__self__", None)   # the estimator of a bound decision_function
  if model is not None and hasattr(model, "best_params_"):   # a CV estimator: its own choice
    params, cv_auc = dict(model.best_params_), float(model.best_score_)
    searched = {name: sorted({str(p[name]) for p in model.cv_results_["params"]})
                for name in model.best_params_}
  else:
    searched = None
  return {"auc": auc(test_scores, trial.y_test, trial.train.num_classes), "params": params,
          "cv_auc": cv_auc, "tune_s": tune_s, "fit_s": fit_s, "predict_s": predict_s,
          "grid_searched": searched,
          "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:160]}" for w in caught})}


# --- Report ------------------------------------------------------------------------------------

def _mean_se(values):
  mean, _, se = reporting.mean_std(values)
  return mean, se


def _pm(mean, se, sign=""):
  """"0.9892 +- 0.0012", or "0.9892 (one trial)" where one trial has no standard error."""
  return f"{mean:{sign}.4f} " + ("(one trial)" if np.isnan(se) else f"+- {se:.4f}")


def _fmt(params):
  """"C=10, gamma=1" ("-" for none)."""
  return ", ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}"
                   for k, v in params.items()) or "-"


def _fmt_params(per_trial):
  """The chosen parameters of every trial ("C=10, gamma=1 (x3)" when they agree)."""
  texts = [_fmt(p) for p in per_trial]
  return texts[0] + f" (x{len(texts)})" if len(set(texts)) == 1 else " / ".join(texts)


def _seconds(rows, name):
  return f"{np.mean([r[name] for r in rows]):.2f}"


def summarize(dataset, task, rows_by_method):
  """(table rows of one dataset, the best peer): AUC mean +- SE over trials, the paired
  difference to the best peer (the peer with the best mean test AUC) +- SE, and wins."""
  aucs = {key: np.array([r["auc"] for r in rows]) for key, rows in rows_by_method.items()}
  peers = [m for m in METHODS if m.key in aucs and m.family == "peer"]
  best = max(peers, key=lambda m: aucs[m.key].mean()) if peers else None
  table = []
  for method in (m for m in METHODS if m.key in aucs):
    rows, a = rows_by_method[method.key], aucs[method.key]
    mean, se = _mean_se(a)
    row = {"dataset": dataset, "key": method.key, "method": method.name(task),
           "label": method.label, "family": method.family, "AUC": _pm(mean, se),
           "auc_mean": mean, "auc_se": se, "vs best peer": "(best peer)" if best else "-",
           "wins": "-"}
    if best is not None and method.key != best.key:
      diff = a - aucs[best.key]
      d_mean, d_se = _mean_se(diff)
      row.update({"vs best peer": _pm(d_mean, d_se, "+"), "diff_mean": d_mean,
                  "diff_se": d_se, "wins": f"{int(np.sum(diff > 0))}/{diff.size}"})
    if method.baseline in aucs:
      diff = a - aucs[method.baseline]
      d_mean, d_se = _mean_se(diff)
      row.update({"baseline": method.baseline, "vs baseline": _pm(d_mean, d_se, "+"),
                  "baseline_diff_mean": d_mean, "baseline_diff_se": d_se,
                  "baseline wins": f"{int(np.sum(diff > 0))}/{diff.size}"})
    cv = [r["cv_auc"] for r in rows if r["cv_auc"] is not None]
    row.update({"chosen": _fmt_params([r["params"] for r in rows]),
                "CV AUC": f"{np.mean(cv):.4f}" if cv else "-",
                "tune s": _seconds(rows, "tune_s") if method.grid else "-",
                "fit s": _seconds(rows, "fit_s"), "predict s": _seconds(rows, "predict_s"),
                "warnings": len({w for r in rows for w in r["warnings"]})})
    table.append(row)
  return table, best


GOAL_MARGIN = 0.005                        # issue 27: within 0.005 of the best peer
MOONSHOT = {"sgemm": "LightGBM", "ijcnn1": "LightGBM"}   # ahead of LightGBM on these


def goal_rows(tables):
  """Issue 27's goals for each of our methods run without user tuning (tuning "defaults" or
  "own CV"), per dataset: the gap to the best peer's mean test AUC, within ``GOAL_MARGIN`` of it,
  ahead of every peer, and (``MOONSHOT`` datasets) ahead of every LightGBM variant."""
  rows = []
  for dataset, table in tables.items():
    peer_rows = [r for r in table if r["family"] == "peer"]
    if not peer_rows:
      continue
    best = max(r["auc_mean"] for r in peer_rows)
    for r in (r for r in table if r["family"] == "ours"):
      gap = r["auc_mean"] - best
      row = {"dataset": dataset, "method": r["method"], "AUC": f"{r['auc_mean']:.4f}",
             "best peer": f"{best:.4f}", "gap": f"{gap:+.4f}",
             f"within {GOAL_MARGIN}": "met" if gap >= -GOAL_MARGIN else "not met",
             "ahead of every peer": "yes" if gap > 0 else "no", "moonshot": "-"}
      if dataset in MOONSHOT:
        rivals = [p["auc_mean"] for p in peer_rows if p["method"].startswith(MOONSHOT[dataset])]
        if rivals:
          margin = r["auc_mean"] - max(rivals)
          row["moonshot"] = (f"{'met' if margin > 0 else 'not met'} ({margin:+.4f} vs "
                             f"{MOONSHOT[dataset]})")
      rows.append(row)
  return rows


def rank_rows(tables):
  """Each method's rank by mean test AUC on every dataset (1 = best; ties share the better
  rank) and its mean rank over the datasets it ran on: the ranking an independent run is
  compared with."""
  ranks = {}
  for dataset, table in tables.items():
    means = sorted((r["auc_mean"] for r in table), reverse=True)
    for r in table:
      ranks.setdefault(r["label"], {})[dataset] = 1 + means.index(r["auc_mean"])
  rows = []
  for label, by_dataset in ranks.items():
    row = {"method": label, **{d: by_dataset.get(d, "-") for d in tables}}
    row["mean rank"] = float(np.mean(list(by_dataset.values())))
    rows.append(row)
  return sorted(rows, key=lambda row: row["mean rank"])


def headline(dataset, table, best):
  """One row of the summary: the best peer, and each of our methods against it."""
  row = {"dataset": dataset, "best peer": "-"}
  for r in table:
    if best is not None and r["key"] == best.key:
      row["best peer"] = f"{r['method']} {r['auc_mean']:.4f}"
    elif r["family"] == "ours":
      row[r["label"]] = f"{r['auc_mean']:.4f} ({r['vs best peer']}, wins {r['wins']})"
  return row


TABLE_COLUMNS = ("method", "AUC", "vs best peer", "wins", "chosen", "CV AUC", "tune s",
                 "fit s", "predict s", "warnings")


def machine():
  """Host, CPUs and load average, for the report's header."""
  model = platform.processor()
  try:
    with open("/proc/cpuinfo") as f:
      model = next((line.split(":", 1)[1].strip() for line in f
                    if line.startswith("model name")), model)
  except OSError:
    pass
  load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
  return f"{platform.node()}, {os.cpu_count()} CPUs ({model}), load average {load}"


def _grid_rows(cells):
  """The tuning of every method that ran: its stated grid, or the grid a CV estimator
  searched."""
  searched, ran = {}, set()
  for name, cell in cells.items():
    key = name.rsplit("__", 1)[1].split("-")[0]
    ran.add(key)
    if cell.get("grid_searched"):
      searched.setdefault(key, cell["grid_searched"])
  rows = []
  for m in (m for m in METHODS if m.key in ran):
    grid = describe_grid(m.grid) if m.grid else (
        "own: " + " x ".join(f"{k} in {{{', '.join(v)}}}" for k, v in searched[m.key].items())
        if m.key in searched else "-")
    rows.append({"method": m.label, "key": m.key, "tasks": ", ".join(m.tasks),
                 "tuning": m.tuning, "grid": grid, "fixed": _fmt(m.fixed),
                 "ranking score": m.score,
                 "unlabeled": "yes" if m.uses_unlabeled else "no"})
  return rows


def render(settings, report):
  """results.md: the command, machine, protocol, summary, one table per dataset, the grids."""
  s = settings
  lines = [
      "# Our estimators against what a practitioner would use instead", "",
      f"Command: `{report['command']}`  ",
      f"Cells computed {report['computed']['first']} to {report['computed']['last']} on "
      f"{', '.join(report['computed']['machines'])}, code at "
      f"{', '.join(report['computed']['commits'])}; this report written "
      f"{report['finished']['time']} ({report['finished']['machine']}).", "",
      f"Protocol: {reporting.count(s.trials, 'trial')}; labeled points drawn stratified by class; "
      f"every method tuned by the same {s.cv_folds}-fold stratified CV on the labeled points "
      f"(qsg_jax's folds, seed 0), semi-supervised ones with {s.cv_unlabeled} unlabeled points "
      "during CV and all of them in the refit; test AUC on a disjoint test set (ordinal: the "
      "mean over the k-1 splits), mean +- standard error over trials. 'vs best peer': the paired "
      "difference to the peer with the best mean test AUC, +- SE; wins: trials where the "
      "method beats that peer. Seconds per trial (tune: the common CV; the CV estimators tune "
      "inside fit; our first trial on a dataset includes JAX compilation), measured on a "
      "shared machine: compare within a table only.", "",
      "## Summary", "", reporting.markdown_table(report["summary"], list(dict.fromkeys(
          name for row in report["summary"] for name in row))),
      "## Datasets", "", reporting.markdown_table(report["datasets"], DATASET_COLUMNS)]
  lines += [f"Caution: {c}" for c in map(few_test_rows, report["datasets"]) if c]
  lines += [""] if lines[-1].startswith("Caution") else []
  goals = goal_rows(report["tables"])
  if goals:
    counts = {}
    for g in goals:
      met = counts.setdefault(g["method"], [0, 0])
      met[0] += g["ahead of every peer"] == "yes"
      met[1] += 1
    lines += ["## Goals of issue 27", "",
              f"Each of our methods as a user calls it (no user tuning) against the best peer's "
              f"mean test AUC: within {GOAL_MARGIN} of it, ahead of every peer (the goal: on at "
              "least half of the datasets), and the moonshot, ahead of every LightGBM variant on "
              + ", ".join(MOONSHOT) + ".", "", reporting.markdown_table(goals),
              "Ahead of every peer: " + "; ".join(f"{name} on {a} of {n}"
                                                  for name, (a, n) in counts.items()) + ".", ""]
  for name, table in report["tables"].items():
    lines += [f"## {name}", "", reporting.markdown_table(table, TABLE_COLUMNS)]
  paired = [{"dataset": name, "variant": r["method"],
             "baseline": next(b["method"] for b in table if b["key"] == r["baseline"]),
             "paired difference": r["vs baseline"], "wins": r["baseline wins"]}
            for name, table in report["tables"].items() for r in table if "baseline" in r]
  if paired:
    lines += ["## Variants against their baseline", "",
              "Paired difference of test AUC (variant minus baseline, same trials) +- SE; "
              "wins: trials where the variant is ahead.", "", reporting.markdown_table(paired)]
  lines += ["## Ranks", "", "Rank of each method's mean test AUC per dataset (1 = best), and its "
            "mean over the datasets the method ran on.", "",
            reporting.markdown_table(rank_rows(report["tables"]), floatfmt=".2f")]
  lines += ["## Methods and their grids", "",
            "Settings not listed: the library's defaults (LogisticRegression: L2, lbfgs; "
            "SelfTraining(SVC): SVC calibrated by CalibratedClassifierCV(ensemble=False), "
            "sigmoid; LibAUC: one hidden ReLU layer, full-batch PESG).", "",
            reporting.markdown_table(_grid_rows(report["cells"]))]
  if report["skipped"]:
    lines += ["## Not run", "", reporting.markdown_table(report["skipped"])]
  return "\n".join(lines)


# --- The run -----------------------------------------------------------------------------------

def dataset_names(settings):
  names = list(settings.datasets or (() if settings.csv else DEFAULT_DATASETS))
  if settings.csv:
    names.append("csv_" + pathlib.Path(settings.csv).stem)
  return names


def plan_datasets(settings):
  """([(Labeled, its methods)] in the order run, [unavailable methods and why])."""
  skipped, keys = [], settings.methods
  for m in METHODS:
    reason = m.why_unavailable() if not keys or m.key in keys else None
    if reason:
      skipped.append({"method": m.label, "why": reason})
  unavailable = {row["method"] for row in skipped}
  plan = []
  for name in dataset_names(settings):
    labeled = labeled_dataset(name, settings)
    labeled = merge_rare_classes(labeled, sizes_of(labeled, settings)["labeled"],
                                 settings.cv_folds)
    plan.append((labeled, [m for m in methods_for(labeled.task, keys)
                           if m.label not in unavailable]))
    skipped += [{"method": m.label, "why": f"not a method for {labeled.task} data ({name}): it "
                 f"runs on {' and '.join(m.tasks)} sets"}
                for m in METHODS if m.key in keys and labeled.task not in m.tasks]
  if not any(methods for _, methods in plan):
    raise cli.UserError("--methods: none of them runs on these datasets (" + "; ".join(
        f"{row['method']}: {row['why']}" for row in skipped) + "). Add a method for their task.")
  return plan, skipped


def _computed(cells):
  """When, where and with which code the cells were computed (a resumed run spans sessions)."""
  when = sorted(c["when"] for c in cells.values())
  return {"first": when[0] if when else "-", "last": when[-1] if when else "-",
          "machines": sorted({c["machine"].split(", load")[0] for c in cells.values()}),
          "commits": sorted({c["commit"] for c in cells.values()})}


def command_line(settings):
  """The command that reproduces ``settings`` (run options left out), shell-quoted so that it
  runs as copied (``--target=is malignant`` would be split at its space)."""
  values = settings.as_dict(exclude=("progress", "resume", "overwrite"))
  return shlex.join(["python", "-m", "experiments.peers"] + [
      f"--{k}={','.join(map(str, v)) if isinstance(v, tuple) else v}"
      for k, v in values.items() if v not in ((), "", None)])


DATASET_COLUMNS = ("dataset", "task", "k", "labeled", "unlabeled", "test", "features",
                   "test set", "labels", "columns")


def dataset_row(labeled, settings):
  """A dataset's row of the report: the table's columns (``DATASET_COLUMNS``), and for
  results.json its classes in the target's values and how a CSV was read (``read``: its
  sha256, rows left out, one-hot and constant columns, a regression target's cut points)."""
  row = dict(dataset=labeled.name, task=labeled.task, k=labeled.num_classes,
             **sizes_of(labeled, settings), labels=labeled.note,
             columns=labeled.read.get("columns", "as loaded"))
  if labeled.classes:
    row["classes"] = [_class_text(g) for g in labeled.classes]
  if labeled.read:
    row["read"] = labeled.read
  return row


MIN_TEST_ROWS = 50   # fewer: the report says that its test AUCs are mostly chance


def few_test_rows(row) -> str:
  """The caution for a dataset row with fewer than ``MIN_TEST_ROWS`` test rows ("" if none):
  sweep Z10's 30-row file gave 4-decimal AUCs and "within 0.005: met" from 7 test rows."""
  if row["test"] >= MIN_TEST_ROWS:
    return ""
  return (f"{row['dataset']} has {row['test']} test rows (fewer than {MIN_TEST_ROWS}): its test "
          "AUCs rest on few pairs and differences between methods there are mostly chance; "
          "the goals' verdicts on it mean little.")


def describe_dataset(row):
  """The console's line on how a dataset was read: the Datasets table's row in words."""
  caution = few_test_rows(row)
  return (f"{row['dataset']} ({row['task']}, k = {row['k']}): {row['labels']}; "
          f"{row['labeled']} labeled, {row['unlabeled']} unlabeled, {row['test']} test rows "
          f"({row['test set']}); {row['features']} features ({row['columns']})"
          + (f". Caution: {caution}" if caution else ""))


def _refuse_changed_csv(settings, digest, manifest):
  """Refuses to resume, or to be refused with advice to resume, a stored run of the same --csv
  path whose file had other contents (sha256 ``digest`` now): its stored cells are results of
  the old contents, and a resumed run would report them as the new file's, or average the two.
  (The store would refuse it too, as one more differing setting; this says what to do.)
  ``manifest``: the store's file of the run's settings (None: no directory, which the store
  refuses)."""
  try:
    stored = json.loads(manifest.read_text())
  except (AttributeError, OSError, ValueError):   # no run there (or the store says what)
    return
  old = stored.get("settings", {})
  if settings.overwrite or old.get("csv") != settings.csv or (
      old.get("csv_sha256") == digest) or not (
          settings.resume or stored.get("complete", True) or stored.get("cells_done", 0)):
    return
  then = (f"sha256 {old['csv_sha256'][:16]}... then" if old.get("csv_sha256") else
          "its contents were not recorded then")
  raise cli.UserError(
      f"--csv={settings.csv!r} is not the file the run in {settings.output_dir} was computed "
      f"from: its contents changed ({then}, {digest[:16]}... now), so the stored results are "
      "another data set's and cannot be resumed or reported with this one's. Pass --overwrite "
      "to replace that run, or choose a new --output_dir (or restore the file).")


def run(settings, log=cli.log_line):
  """Runs every (dataset, trial, method) cell not yet stored; writes results.md / .json."""
  plan, skipped = plan_datasets(settings)        # refuses a selection that runs nothing
  identity = settings.as_dict(exclude=cli.RUN_OPTIONS)
  digest = next((lab.read["sha256"] for lab, _ in plan if "sha256" in lab.read), None)
  store = store_lib.RunStore(settings.output_dir, "results")
  if digest:   # the file's contents, not only its path, fix the numbers
    _refuse_changed_csv(settings, digest, getattr(store, "manifest", None))
    identity["csv_sha256"] = digest
  store.start(identity, resume=settings.resume, overwrite=settings.overwrite,
              selection=SELECTION)
  stamp = {"commit": reporting.git_commit() or "unknown (not a git checkout)",
           "machine": machine()}
  for row in skipped:
    log(f"skipped: {row['method']}: {row['why']}")
  datasets = [dataset_row(labeled, settings) for labeled, _ in plan]
  for row in datasets:   # what was done to the data, before any number
    log(describe_dataset(row))
  progress = reporting.Progress(sum(settings.trials * len(ms) for _, ms in plan), unit="cells",
                                enabled=settings.progress, log=log)
  tables, summary, cells = {}, [], {}
  for labeled, methods in plan:
    rows_by_method = {m.key: [] for m in methods}
    for t in range(settings.trials):
      trial = None
      for method in methods:
        cell = f"{labeled.name}__t{t}__{method.key}-{method.fingerprint()}"
        if trial is None and not store.has(cell):
          trial = make_trial(labeled, settings, t)
        row = store.cached(cell, lambda: dict(
            run_cell(method, trial), when=time.strftime("%Y-%m-%d %H:%M:%S"), **stamp))
        rows_by_method[method.key].append(row)
        cells[cell] = row
        progress.update(len(cells))
        progress.write(f"{labeled.name} trial {t}: {method.name(labeled.task):<34} AUC "
                       f"{row['auc']:.4f}  tune {row['tune_s']:7.1f} s  fit {row['fit_s']:7.1f} s")
    tables[labeled.name], best = summarize(labeled.name, labeled.task, rows_by_method)
    summary.append(headline(labeled.name, tables[labeled.name], best))
  progress.close()
  report = {"summary": summary, "datasets": datasets, "tables": tables, "cells": cells,
            "goals": goal_rows(tables), "ranks": rank_rows(tables),
            "skipped": skipped, "command": command_line(settings), "computed": _computed(cells),
            "finished": {"time": time.strftime("%Y-%m-%d %H:%M:%S"), "machine": machine()},
            "grids": {m.key: m.grid for m in METHODS}}
  text = render(settings, report)
  reporting.atomic_write_text(pathlib.Path(settings.output_dir) / "results.md", text)
  if settings.publish:
    reporting.atomic_write_text(settings.publish, text)
  store.finish(report)
  log(f"wrote {pathlib.Path(settings.output_dir) / 'results.md'} and results.json")
  return report


if __name__ == "__main__":
  cli.script(Settings, run)
