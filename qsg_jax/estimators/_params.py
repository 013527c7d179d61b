"""The estimators' parameter names, their ``FitConfig`` fields, and the shared parameter docs.

The functional API (``qsg_jax.fit``, ``FitConfig``) keeps the papers' names; the estimators use
names a scikit-learn user cannot mistake (in ``sklearn.svm.SVC`` ``gamma`` is the kernel width):

  estimator        FitConfig    meaning
  length_scale     sigma        k(x, x') = exp(-||x - x'||^2 / (2 length_scale^2)), sigma =
                                1 / (2 length_scale^2) (SVC's gamma); one per feature: anisotropic
  labeled_weight   gamma        weight of the labeled pairs; the unlabeled risks get 1 - it
  learning_rate    step_size    "auto", eta0 of eta0 / (1 + eta0 lam t), or a schedule

The papers' names still work for one release with a FutureWarning (scikit-learn's deprecation
pattern: the default "deprecated", the warning in ``fit``).
"""

import contextlib
import textwrap
import warnings

import numpy as np

from qsg_jax import _validation as validation
from qsg_jax.config import FitConfig

DEPRECATED = "deprecated"
RENAMED = {"sigma": "length_scale", "gamma": "labeled_weight", "step_size": "learning_rate"}
AUTO = "auto"
ARD = "ard"
ISOTROPIC = "isotropic"
LENGTH_SCALES = (AUTO, ARD, ISOTROPIC)   # the strings length_scale takes
# The papers' fixed values (``FitConfig``): what "auto" was before it chose from the data; with
# them, solver="dsg" and scale_inputs=True a fit is the previous release's, bit for bit.
PAPERS_LENGTH_SCALE = float(np.sqrt(0.5 / FitConfig.sigma))   # sigma = 0.1
DEFAULTS = {"length_scale": AUTO, "labeled_weight": AUTO, "learning_rate": FitConfig.step_size}
SOLVERS = ("auto", "direct", "dsg")
_SVC = "(scikit-learn's SVC gamma is the kernel width, here 1 / (2 length_scale^2))"
_HOW = {"sigma": "length_scale = 1 / sqrt(2 sigma) (a number, or one per feature) " + _SVC,
        "gamma": "labeled_weight, the same value: the labeled pairs' weight, the unlabeled risks "
                 "get 1 - labeled_weight " + _SVC,
        "step_size": "learning_rate, the same value ('auto', eta0 or a schedule)"}


def length_scale_of(sigma: float) -> float:
  """The length scale of the Gaussian kernel exp(-sigma ||x - x'||^2): 1 / sqrt(2 sigma)."""
  return float(np.sqrt(0.5 / sigma))


def deprecation_message(old: str) -> str:
  return (f"{old} is deprecated and will be removed in the next release; pass {_HOW[old]}.")


def _is_default(value, default) -> bool:
  return (not callable(value) and np.ndim(value) == 0 and not isinstance(value, bool)
          and bool(value == default))


def papers_values(estimator) -> dict:
  """{sigma, gamma, step_size} given under their deprecated names (FutureWarning each), the
  others None; both names of one parameter set is an error."""
  values = {}
  for old, new in RENAMED.items():
    value = getattr(estimator, old)
    if isinstance(value, str) and value == DEPRECATED:
      values[old] = None
      continue
    if not _is_default(getattr(estimator, new), DEFAULTS[new]):
      raise ValueError(f"{old}={value!r:.40} and {new}={getattr(estimator, new)!r:.40} are both "
                       f"set, but {old} is the deprecated name of {new}: set {new} only.")
    warnings.warn(deprecation_message(old), FutureWarning,
                  stacklevel=validation.outside_stacklevel())
    values[old] = value
  return values


def is_auto(value) -> bool:
  """Whether ``value`` is the string "auto"."""
  return isinstance(value, str) and value == AUTO


def check_solver(solver) -> str:
  """``solver`` if it is one of ``SOLVERS``, else a clear error."""
  if not isinstance(solver, str) or solver not in SOLVERS:
    raise ValueError(f"solver must be one of {SOLVERS}; received {solver!r:.60}. 'auto' (the "
                     "default) solves the squared loss exactly (qsg_jax.direct), 'dsg' runs the "
                     "papers' Algorithm 1.")
  return solver


def check_lam(lam):
  """``lam``: "auto" as it is, else a float >= 0."""
  if is_auto(lam):
    return lam
  if isinstance(lam, str):
    raise ValueError(f"lam must be 'auto' or a number >= 0; received {lam!r:.40}.")
  return validation.check_positive("lam", lam, allow_zero=True)


def check_length_scale(length_scale, num_features: int) -> np.ndarray:
  """float64 length_scale: a scalar, or [d] (one per feature) after checking d and the values."""
  if isinstance(length_scale, str) and length_scale not in LENGTH_SCALES:
    raise ValueError(f"length_scale must be 'auto', 'ard', 'isotropic', a number > 0 or one per "
                     f"feature; "
                     f"received {length_scale!r:.40}.")
  try:
    arr = np.asarray(length_scale, np.float64)
  except (TypeError, ValueError):   # ragged lists, objects
    arr = None
  if arr is None or length_scale is None or isinstance(length_scale, (str, bool, np.bool_)) or (
      arr.ndim > 1):
    raise TypeError(f"length_scale must be a number > 0 or a list of one per feature; received "
                    f"{type(length_scale).__name__} {length_scale!r:.60}.")
  if arr.ndim == 1 and arr.shape != (num_features,):
    raise ValueError(f"length_scale has {arr.size} values but X has {num_features} features; "
                     "pass one per feature (an anisotropic kernel) or one number.")
  if not np.all(np.isfinite(arr) & (arr > 0)):
    raise ValueError(f"length_scale must be > 0 and finite; received "
                     f"{np.ravel(arr).tolist()[:6]}.")
  with np.errstate(over="ignore", divide="ignore", under="ignore"):
    sigma = (0.5 / np.ravel(arr) ** 2).astype(np.float32)   # the kernel's float32 parameter
  bad = ~(np.isfinite(sigma) & (sigma >= np.finfo(np.float32).tiny))
  if bad.any():   # it used to be reported as sigma = inf / 0, or as inf in the user's X
    value = float(np.ravel(arr)[np.argmax(bad)])
    raise ValueError(f"length_scale={value:g} gives sigma = 1 / (2 length_scale^2) outside "
                     "float32's range; min-max scaled features suit length scales of about "
                     "0.1..10.")
  return arr


def kernel_of(estimator, sigma, num_features: int):
  """(sigma, column_scale [d]): the deprecated ``sigma`` as it is, a scalar length_scale as
  sigma = 1 / (2 length_scale^2), one per feature as sigma = 1/2 with each scaled column divided
  by its length scale (folded into the stored input scaling); "auto", "ard", "isotropic": sigma None
  (chosen from the data, ``_auto``)."""
  if sigma is not None:
    return validation.check_positive("sigma", sigma), np.ones(num_features)
  if isinstance(estimator.length_scale, str) and estimator.length_scale in LENGTH_SCALES:
    return None, np.ones(num_features)
  length_scale = check_length_scale(estimator.length_scale, num_features)
  if length_scale.ndim == 0:
    return float(0.5 / length_scale**2), np.ones(num_features)
  return 0.5, length_scale


@contextlib.contextmanager
def estimator_names(papers):
  """Errors from ``FitConfig``'s checks name the estimator's parameter (labeled_weight for
  gamma, ...) unless the user passed the papers' name (``papers``: its given values)."""
  try:
    yield
  except (TypeError, ValueError) as e:
    message = str(e)
    renamed = message
    for old, new in RENAMED.items():
      if papers.get(old) is None:   # at the start, or quoted (a list of names, a grid key)
        renamed = renamed.replace(f"'{old}'", f"'{new}'")
        renamed = new + renamed[len(old):] if renamed.startswith(old + " ") else renamed
        if old != "sigma" and renamed.startswith(old + "="):   # "step_size=1e+300": same value
          renamed = new + renamed[len(old):]
    if renamed != message:
      raise type(e)(renamed) from None
    raise


def doc(*names: str) -> str:
  """The numpydoc entries of ``names`` (``PARAMETERS``), indented for a class docstring."""
  return textwrap.indent("\n".join(PARAMETERS[name] for name in names), "  ").lstrip()


# numpydoc entries shared by QS3ORAO, QSGS2AUC and their CV versions.
PARAMETERS = {
    "length_scale": f"""\
length_scale : "auto", "ard", "isotropic", float or array-like of shape (n_features,), \
default="auto"
    Length scale l of the Gaussian kernel k(x, x') = exp(-||x - x'||^2 / (2 l^2)) on the
    scaled inputs, as scikit-learn's ``gaussian_process.kernels.RBF``. The papers' sigma
    (``FitConfig.sigma``, scikit-learn SVC's ``gamma``) is 1 / (2 l^2); their fixed value
    sigma = {FitConfig.sigma} is l = {PAPERS_LENGTH_SCALE:.4f}. "isotropic": one l chosen from
    the data with lam and labeled_weight by a cross-validation of the direct solver on the
    labeled rows (Notes; ``qsg_jax.direct.defaults``). "ard": one length scale per feature
    learned from the labeled rows (``qsg_jax.direct.learn_length_scales``, started from the
    "isotropic" choice; lam and labeled_weight "auto" are then chosen again on the rescaled
    inputs; it needs lam > 0; with fewer than 2 rows of the smallest class per feature the
    scales are tied: one per kind of feature, then refined per feature toward them, or one in
    all, ``direct.bandwidths.scale_groups``).
    "auto": "ard" where the labels allow more than one scale (2 rows of the smallest class per
    feature, or 4 for one scale per kind where two-valued indicator features sit beside
    others) and lam > 0, else "isotropic" (so lam=0 keeps one shared scale). The result is
    kept in ``length_scale_``. An array (one per feature) gives an anisotropic kernel: each
    scaled column is divided by its length scale (stored in ``input_scale_``).""",
    "lam": f"""\
lam : "auto" or float, default="auto"
    Regularization lambda >= 0 (the weight of ||f||^2 / 2 in the objective). "auto": chosen
    by the same cross-validation as length_scale (Notes), kept in ``lam_``; the papers' fixed
    value was {FitConfig.lam}.""",
    "labeled_weight": f"""\
labeled_weight : "auto", float or list of k-1 floats in [0, 1], default="auto"
    Weight of the labeled (positive, negative) pairs in the risk; the unlabeled risks (PU and
    NU pairs) get 1 - labeled_weight (the papers' gamma). 1 = supervised, 0 = unlabeled
    risks only. A list gives each of the k-1 ordinal splits its own weight. "auto": chosen by
    the same cross-validation as length_scale (Notes) among 0, 0.25, 0.5, 0.75, 1, kept in
    ``labeled_weight_``; the papers' fixed value was {FitConfig.gamma}. Ignored (taken as 1)
    when y has no unlabeled row.""",
    "solver": """\
solver : {"auto", "direct", "dsg"}, default="auto"
    How the objective is minimized. "direct": the squared loss exactly, over 512 Nystrom
    features, from one pass over the data and one float64 solve (``qsg_jax.direct``;
    milliseconds to a second, no compilation per data size). "dsg": the papers' Algorithm 1,
    doubly stochastic functional gradients over 2 x num_frequencies x num_steps random Fourier
    features (the previous release's only solver: with length_scale=5 ** 0.5, lam=0.001,
    labeled_weight=0.5 and scale_inputs=True it fits bit for bit as before). "auto": "direct"
    for the squared loss unless a DSG-only parameter (learning_rate, num_steps,
    num_frequencies, unlabeled_batch_size, labeled_batch_size) differs from its default, else
    "dsg" (``qsg_jax.config.choose_solver``); the choice is kept in ``solver_``.""",
    "learning_rate": f"""\
learning_rate : "auto", float or callable, default="{FitConfig.step_size}"
    DSG only. Step size eta_t = eta0 / (1 + eta0 lam t) of iteration t. "auto": eta0 = min(3, 1 /
    (lambda_max(K H) + lam)), half the stability limit of the squared-loss scores (K the
    kernel on the training points, H the risk's Hessian in the scores); the chosen eta0 is
    ``training_metrics_["eta"][0]``. A float is eta0; a callable t -> eta (an optax
    schedule) replaces the whole schedule.""",
    "num_steps": f"""\
num_steps : int, default={FitConfig.num_steps}
    DSG only. Iterations T. Each draws a new block of num_frequencies random frequencies, so the
    model has 2 x num_frequencies x num_steps random features (cos and sin of each).""",
    "num_frequencies": f"""\
num_frequencies : int, default={FitConfig.num_frequencies}
    DSG only. Frequencies m per iteration's feature block (2m random features per block).""",
    "unlabeled_batch_size": f"""\
unlabeled_batch_size : int, default={FitConfig.unlabeled_batch_size}
    DSG only. Unlabeled points sampled per iteration.""",
    "labeled_batch_size": f"""\
labeled_batch_size : int or None, default={FitConfig.labeled_batch_size}
    DSG only. Labeled points sampled per class and iteration; None uses every labeled point in
    every iteration (the cost then grows with the number of labels).""",
    "loss": f"""\
loss : {{"squared", "hinge", "logistic"}}, default="{FitConfig.loss}"
    Pairwise surrogate of the 0-1 ranking loss; "squared" is the papers' (the only one
    the direct solver and "auto" learning_rate handle; another loss runs DSG).""",
    "scale_inputs": """\
scale_inputs : "auto", bool, default="auto"
    True: min-max scale each feature to [0, 1] on the training rows (labeled and unlabeled),
    the range the default length_scale assumes; the same map is applied when predicting.
    "auto": the same, after replacing each long-tailed feature (more than 10 values, its
    middle half within a tenth of its range) by its rank, the training rows' CDF
    (``qsg_jax.data.preprocessing.tail_ranks``; the columns in ``input_ranks_``). Set False
    only for data already in [0, 1].""",
    "random_state": """\
random_state : int, RandomState instance or None, default=None
    Seed of the random features and the sampling; None draws a fresh seed per fit (kept in
    ``seed_``).""",
    "unlabeled_label": """\
unlabeled_label : "auto", int, str or None, default="auto"
    The value of y marking unlabeled rows. "auto": -1 (scikit-learn's semi-supervised
    convention, as ``SelfTrainingClassifier``) where -1 cannot be a class: beside classes 1,
    2, ...; for the binary estimators beside any two classes, e.g. {0, 1}, since a third value
    cannot be a class of a binary problem (labels -1 / +1 with 0 on unlabeled rows, SVMlight's
    convention, need unlabeled_label=0). -1 beside classes 0, 1, 2, ... of an ordinal model, or
    between classes (-2, 0, 1, 2), is ambiguous (it may be a class, as in sentiment -1 / 0 / +1)
    and refused: pass unlabeled_label=-1 or None. None: every row is labeled.""",
    "probability": """\
probability : bool, default=False
    Also fit class probabilities, for ``predict_proba`` (as scikit-learn's
    ``SVC(probability=True)``): a cumulative logistic model P(y > j) = sigmoid(a (f(x) -
    mean(b)) - c_j) (b the fitted thresholds), for two classes Platt scaling, fitted to
    out-of-fold scores of the labeled rows (5 folds, or as many as the smallest class's
    distinct rows allow, at least 2; each a refit with the chosen hyper-parameters, so the fit
    costs about 5 fits more; ``qsg_jax.thresholds.fit_probabilities``). ``predict`` still
    compares f(x) with the thresholds, so it may differ from the argmax of ``predict_proba``.
    For the smallest expected absolute error of an ordinal class take the median class of
    ``predict_proba``, ``np.argmax(np.cumsum(p, axis=1) >= 0.5, axis=1)`` (test MAE 0.644
    against ``predict``'s 0.682 on diabetes cut into 4 classes, 1.232 against 1.280 on era;
    RELIABILITY.md, sweep Z4).""",
}
PARAMETERS["deprecated"] = """\
sigma, gamma, step_size : deprecated
    The papers' names (``FitConfig``) of length_scale (sigma = 1 / (2 length_scale^2)),
    labeled_weight (gamma) and learning_rate (step_size); they still work until the next
    release, with a FutureWarning in ``fit``."""


def unlabeled_marker(estimator, y, classes=None):
  """The marker ``estimator.unlabeled_label`` stands for in ``y``: "auto" is -1 for a binary-only
  estimator (``_binary_only``) whose y holds two classes beside -1 (``classes``: the fitted ones,
  -1 not among them), where -1 cannot be a third class (NaN rows are no class), and an error
  beside one class (-1 may be the second; beside NaN rows "auto", whose NaN advice then marks
  them with a number no label is); else ``unlabeled_label`` as it is
  (``_validation.unlabeled_mask`` decides "auto", refusing an ambiguous -1). A ``Pipeline`` has
  its final step's marker, a meta-estimator (``GridSearchCV``) that of the estimator it wraps;
  an estimator
  without ``unlabeled_label`` (``ROCSVM``, scikit-learn's) has -1 unless -1 is one of its fitted
  ``classes_`` (labels -1 / +1), then none: a fitted class is never read as the marker."""
  while not hasattr(estimator, "unlabeled_label"):   # a meta-estimator: the one it wraps decides
    inner = (estimator.steps[-1][1] if hasattr(estimator, "steps")   # a Pipeline's final step
             else getattr(estimator, "best_estimator_", getattr(estimator, "estimator", None)))
    if inner is None:   # (GridSearchCV: its refit estimator; CalibratedClassifierCV: estimator)
      break
    estimator = inner
  if not hasattr(estimator, "unlabeled_label"):
    fitted = np.asarray(getattr(estimator, "classes_", []) if classes is None else classes)
    return None if fitted.dtype.kind in "biuf" and np.any(fitted == -1) else -1
  marker = estimator.unlabeled_label
  if not (isinstance(marker, str) and marker == "auto" and getattr(estimator, "_binary_only",
                                                                   False)):
    return marker
  y = np.asarray(y)
  nan = validation.nan_rows(y)   # never a class: unlabeled_mask refuses them, advising a marker
  y = validation.unbox_numbers(y[~nan])   # ints held as objects: numbers, as in fit
  if y.dtype.kind not in "biuf" or not np.any(y == -1):
    return marker
  others = np.unique(y[y != -1]) if classes is None else np.asarray(classes)
  if others.size == 1 and nan.any():   # -1 may be the second class: the advice avoids it
    return marker
  if others.size == 1:
    raise ValueError(f"y has {int(np.sum(y == -1))} rows -1 beside one class {others.tolist()}: "
                     "if -1 marks unlabeled rows, a binary ranking needs labeled rows of both "
                     "classes; if -1 is the second class, pass unlabeled_label=None.")
  if others.size == 2 and not np.any(others == -1) and not (
      others.min() < -1 < others.max()):   # classes -2 and 0: -1 may lie between them
    if classes is None and validation.svmlight_like(y):
      _warn_svmlight(y)
    return -1
  return marker


def _warn_svmlight(y):
  """A ``UserWarning`` for labels ``validation.svmlight_like`` read as classes 0 / 1 with -1
  marking the unlabeled rows (scikit-learn's convention, taken under "auto"): in SVMlight's,
  this reading is a model of the unlabeled rows against the positives (sweep Z10: accuracy 0.20
  against the user's labels, 0.91 with unlabeled_label=0)."""
  zeros, minus = int(np.sum(y == 0)), int(np.sum(y == -1))
  warnings.warn(
      f"y holds -1, 0 and 1, with 0 on most rows ({zeros} of {y.size}; -1 on {minus}): "
      "unlabeled_label='auto' reads -1 as scikit-learn's unlabeled marker and 0 / 1 as the "
      "classes. If -1 / +1 are the classes and 0 marks the unlabeled rows (SVMlight's "
      "convention), pass unlabeled_label=0; pass unlabeled_label=-1 to keep this reading "
      "without this warning.", UserWarning, stacklevel=validation.outside_stacklevel())
