"""Flags shared by the experiment scripts, with the library's real defaults and range checks.

One convention (jaxline's): only a script's ``main()`` reads flags; it passes plain keyword
arguments to everything below it. Each ``define_*`` function defines one group of flags on
``flag_values`` (absl's global ``FLAGS`` by default; tests pass a fresh ``flags.FlagValues()``)
and registers validators, so a bad value such as ``--trials=0`` stops the script at parsing with a
message naming the flag, the value received and the range expected, before any data is loaded.
The engine flags' defaults are ``qsg_jax.defaults`` (shown by ``--help``).
"""

import math
from typing import Sequence

from absl import flags

from qsg_jax import defaults
from experiments import protocols

FLAGS = flags.FLAGS

# The engine's hyper-parameters, by their keyword name in ``qsg_jax.fit``.
ENGINE_FLAGS = ("sigma", "lam", "gamma", "step_size", "num_steps", "num_frequencies",
                "unlabeled_batch_size", "labeled_batch_size", "loss")
LOSSES = ("squared", "hinge", "logistic")


def _at_least(name, minimum, flag_values, allow_none=False, note=""):
  note = note or (" (or unset)" if allow_none else "")
  flags.register_validator(
      name, lambda v: (allow_none and v is None) or (v is not None and v >= minimum),
      message=f"--{name} must be an integer >= {minimum}{note}; pass e.g. --{name}="
      f"{max(minimum, 1) if minimum else 0}.", flag_values=flag_values)


def _positive(name, flag_values, allow_zero=False):
  bound = ">= 0" if allow_zero else "> 0"
  flags.register_validator(
      name, lambda v: v is not None and (v >= 0 if allow_zero else v > 0),
      message=f"--{name} must be a number {bound}; pass e.g. --{name}="
      f"{getattr(defaults, name.upper(), 1.0)}.", flag_values=flag_values)


def define_data_flags(*, dataset: str = None, datasets: Sequence[str] = None,
                      flag_values=FLAGS):
  """--dataset (one name) or --datasets (a list), and --data_dir."""
  if dataset is not None:
    flags.DEFINE_string("dataset", dataset, "Dataset name; see qsg_jax.data.available().",
                        flag_values=flag_values)
  if datasets is not None:
    flags.DEFINE_list("datasets", list(datasets), "Datasets (comma-separated); see "
                      "qsg_jax.data.available(). Missing real data files are skipped.",
                      flag_values=flag_values)
    flags.register_validator("datasets", bool, message="--datasets is empty; name at least one, "
                             "e.g. --datasets=lev (qsg_jax.data.available() lists them).",
                             flag_values=flag_values)
  flags.DEFINE_string("data_dir", None, "Directory of data files (unset: $QSG_JAX_DATA, then "
                      "the user cache).", flag_values=flag_values)


_SEED_HELP = ("Seed of the run; trial t's split and key are fold_in(key(seed), t), so runs of "
              "different seeds share no split.")


def define_run_flags(*, output_dir: str, trials: int = 10, seed_help: str = _SEED_HELP,
                     flag_values=FLAGS):
  """--seed, --trials, --output_dir and --progress."""
  flags.DEFINE_integer("seed", 0, seed_help, flag_values=flag_values)
  flags.DEFINE_integer("trials", trials, "Trials (random splits).", flag_values=flag_values)
  _at_least("trials", 1, flag_values)
  flags.DEFINE_string("output_dir", output_dir, "Directory of the results; created, and "
                      "checked writable before training.", flag_values=flag_values)
  flags.DEFINE_bool("progress", True, "Progress bar with ETA on stderr.",
                    flag_values=flag_values)


def define_resume_flag(flag_values=FLAGS):
  """--resume: continue the interrupted run in --output_dir (same flags required)."""
  flags.DEFINE_bool("resume", False, "Continue the unfinished run in --output_dir from the "
                    "results it wrote (the flags must equal the stored run's); without it, an "
                    "unfinished run there is refused rather than overwritten.",
                    flag_values=flag_values)


def define_trial_seeds_flag(flag_values=FLAGS):
  """--trial_seeds: how trial t's randomness derives from --seed (``protocols.TRIAL_SEEDS``)."""
  flags.DEFINE_enum("trial_seeds", "fold_in", list(protocols.TRIAL_SEEDS), "Trial t's split, "
                    "unlabeled subset and training key: fold_in = from fold_in(key(seed), t) "
                    "(runs of different seeds share no trial); offset = the int seed seed + t, "
                    "the scheme of the published reports' runs (seeds closer than --trials "
                    "share trials).", flag_values=flag_values)


def define_eval_size_flag(default: int = 20000, flag_values=FLAGS):
  """--eval_size: score on a random subset of at most this many points (0 = all)."""
  flags.DEFINE_integer("eval_size", default, "Score AUC on a random subset of this many "
                       "evaluation points; 0 = all of them (predicting all 241,100 unlabeled "
                       "SGEMM points costs ~1.5 min per trial).", flag_values=flag_values)
  _at_least("eval_size", 0, flag_values, note=" (0 = every point)")


_ENGINE_HELP = {
    "sigma": "Gaussian kernel parameter, k(x, x') = exp(-sigma ||x - x'||^2).",
    "lam": "Regularization lambda.",
    "gamma": "Trade-off in [0, 1]: 1 = labeled pairs only, 0 = PU + NU risks only.",
    "step_size": "Initial step eta0 of eta_t = eta0 / (1 + eta0 lam t): a number, or 'auto' "
                 "(the library's default: eta0 from the curvature of the risk; see the "
                 "README for where it was measured, and the one setting where it diverged).",
    "num_steps": "Iterations T (= random feature blocks).",
    "num_frequencies": "Frequencies m per feature block (2m features).",
    "unlabeled_batch_size": "Unlabeled points per step.",
    "labeled_batch_size": "Labeled points per class and step (unset: every labeled point "
                          "every step).",
    "loss": "Pairwise loss.",
}


def define_engine_flags(names: Sequence[str] = ENGINE_FLAGS, flag_values=FLAGS):
  """The engine's hyper-parameter flags ``names``, defaulting to ``qsg_jax.defaults``."""
  unknown = sorted(set(names) - set(ENGINE_FLAGS))
  if unknown:
    raise ValueError(f"unknown engine flags {unknown}; expected some of {list(ENGINE_FLAGS)}.")
  for name in names:
    default = defaults.HYPERPARAMS[name]
    if name == "loss":
      flags.DEFINE_enum(name, default, LOSSES, _ENGINE_HELP[name], flag_values=flag_values)
    elif name == "step_size":
      flags.DEFINE_string(name, str(default), _ENGINE_HELP[name], flag_values=flag_values)
      flags.register_validator(
          name, _is_step_size, message="--step_size must be 'auto' or a number > 0; pass e.g. "
          "--step_size=auto or --step_size=1.", flag_values=flag_values)
    elif name in ("sigma", "lam", "gamma"):
      flags.DEFINE_float(name, default, _ENGINE_HELP[name], flag_values=flag_values)
      if name == "gamma":
        flags.register_validator(
            name, lambda v: v is not None and 0.0 <= v <= 1.0,
            message="--gamma must be in [0, 1] (1 = labeled pairs only); pass e.g. "
            f"--gamma={defaults.GAMMA}.", flag_values=flag_values)
      else:
        _positive(name, flag_values, allow_zero=name == "lam")
    else:
      flags.DEFINE_integer(name, default, _ENGINE_HELP[name], flag_values=flag_values)
      _at_least(name, 1, flag_values, allow_none=name == "labeled_batch_size")


def define_number_list_validator(name: str, minimum: float = None, maximum: float = None,
                                 positive: bool = False, allow_auto: bool = False,
                                 flag_values=FLAGS):
  """Every entry of list flag --name is a number in [minimum, maximum], > 0 if ``positive``
  (or "auto" if ``allow_auto``)."""
  def ok(values):
    for text in values or ():
      if allow_auto and text == "auto":
        continue
      try:
        v = float(text)
      except (TypeError, ValueError):
        return False
      if not math.isfinite(v) or (positive and v <= 0) or (
          minimum is not None and v < minimum) or (maximum is not None and v > maximum):
        return False
    return True
  bounds = ["> 0"] if positive else []
  bounds += [f">= {minimum:g}"] if minimum is not None else []
  bounds += [f"<= {maximum:g}"] if maximum is not None else []
  bounds = (" " + " and ".join(bounds)) if bounds else ""
  flags.register_validator(name, ok, message=f"--{name} must be a comma-separated list of "
                           f"numbers{bounds}{' or auto' if allow_auto else ''}.",
                           flag_values=flag_values)


def _is_step_size(text) -> bool:
  if text == "auto":
    return True
  try:
    return float(text) > 0
  except (TypeError, ValueError):
    return False


def engine_kwargs(names: Sequence[str] = ENGINE_FLAGS, flag_values=FLAGS) -> dict:
  """The engine flags' values by keyword name of ``qsg_jax.fit`` (call from ``main`` only)."""
  values = {name: flag_values[name].value for name in names}
  if values.get("step_size", "auto") != "auto":
    values["step_size"] = float(values["step_size"])
  return values
