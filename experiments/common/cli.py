"""The command line of every experiment: flags generated from a settings dataclass, run quietly.

A script describes its settings once, as a frozen dataclass (jaxline's convention: configs reach
pure code as plain values; only ``main`` reads flags)::

  @dataclasses.dataclass(frozen=True, kw_only=True)
  class Settings(cli.Settings):
    dataset: str = "lev"                                     # help and checks from COMMON
    cv_folds: int = cli.setting(5, "Folds of the CV.", lower=2)

  if __name__ == "__main__":
    cli.script(Settings, run)       # flags --dataset, --cv_folds, ...; then run(settings)

Each field becomes the flag of the same name (``bool`` -> bool flag, ``int``/``float``/``str``,
``tuple[...]`` -> comma-separated list, ``Union[float, str]`` -> a number or one of ``words``);
its help and range checks come from ``setting(...)`` or, for the names every script shares, from
``COMMON``. A bad value stops the script at parsing with a message naming the flag, the value and
the range; the same checks run in ``Settings.__post_init__`` when Python code builds settings.

``run_main`` runs ``main`` quietly: JAX's, absl's and matplotlib's logs are kept to warnings
(``--verbosity=1`` adds the library's and the scripts' info lines), JAX's persistent compilation
cache is on (``COMPILATION_CACHE_ENV``), and the errors a user can fix (a missing data file, a
results directory that would be overwritten, ...) print their message in a few lines instead of a
traceback.
"""

import dataclasses
import logging
import math
import os
import sys
import typing
from typing import Optional, Union

from absl import app
from absl import flags

import jax
import qsg_jax
from qsg_jax import data as data_lib

FLAGS = flags.FLAGS
# JAX's persistent compilation cache: a directory, or "off". Default <user cache>/jax, i.e.
# $QSG_JAX_CACHE/jax or ~/.cache/qsg_jax/jax.
COMPILATION_CACHE_ENV = "QSG_JAX_COMPILATION_CACHE"
# Programs that compile faster than this are not written to the cache (JAX's default is 1 s,
# which would skip most of the experiments' programs; each takes 0.1-5 s to compile on CPU).
CACHE_MIN_COMPILE_SECONDS = 0.0


class UserError(Exception):
  """A problem the user fixes from the command line (the message says how); shown without a
  traceback by ``run_main``."""


def setting(default, help_text, *, lower=None, upper=None, positive=False, choices=None,
            words=(), nonempty=False):
  """A settings field with its flag help and checks.

  Args:
    default: the default value (a tuple for list settings).
    help_text: one line for ``--help``.
    lower, upper: inclusive bounds of a number (of every entry for a list).
    positive: the number must be > 0.
    choices: the allowed strings.
    words: strings allowed besides numbers (``"auto"`` for a step size, ``"all"`` for a size).
    nonempty: a string or list that must not be empty.
  """
  return dataclasses.field(default=default, metadata=dict(
      help=help_text, lower=lower, upper=upper, positive=positive, choices=choices,
      words=tuple(words), nonempty=nonempty))


def _meta(help_text, **checks):
  return dict(dict(lower=None, upper=None, positive=False, choices=None, words=(),
                   nonempty=False), help=help_text, **checks)


# Help and checks of the names the scripts share (a field without ``setting`` takes them).
COMMON = {
    "dataset": _meta("Dataset name; see qsg_jax.data.available().", nonempty=True),
    "datasets": _meta("Datasets (comma-separated); see qsg_jax.data.available().",
                      nonempty=True),
    "data_dir": _meta("Directory of data files (unset: $QSG_JAX_DATA, then the user cache)."),
    "seed": _meta("Seed of the run; trial t's split and key are fold_in(key(seed), t), so runs of "
                  "different seeds share no trial.", lower=0),
    "trials": _meta("Trials (random splits).", lower=1),
    "trial_seeds": _meta(
        "Trial t's split, unlabeled subset and training key: fold_in = from fold_in(key(seed), t) "
        "(runs of different seeds share no trial); offset = the int seed seed + t, the scheme of "
        "the published reports' runs (seeds closer than --trials share trials).",
        choices=("fold_in", "offset")),
    "eval_size": _meta("Score AUC on a random subset of this many evaluation points; 0 = all of "
                       "them (predicting all 241,100 unlabeled SGEMM points costs ~1.5 min per "
                       "trial).", lower=0),
    "output_dir": _meta("Directory of the results; created, and checked writable before any "
                        "work. A finished run there is never replaced without --overwrite.",
                        nonempty=True),
    "resume": _meta("Continue the run in --output_dir from the results it wrote (the settings "
                    "that fix its numbers must equal the stored run's)."),
    "overwrite": _meta("Replace the run in --output_dir (its stored results are deleted)."),
    "progress": _meta("Progress bar with an ETA (measured after compilation) on a terminal."),
    # The engine's hyper-parameters: help and defaults from qsg_jax.FitConfig (below).
    "sigma": _meta("", positive=True),
    "lam": _meta("", lower=0.0),
    "gamma": _meta("", lower=0.0, upper=1.0),
    "step_size": _meta("", positive=True, words=("auto",)),
    "num_steps": _meta("", lower=1),
    "num_frequencies": _meta("", lower=1),
    "unlabeled_batch_size": _meta("", lower=1),
    "labeled_batch_size": _meta("", lower=1),
    "loss": _meta("", choices=("squared", "hinge", "logistic")),
    "solver": _meta("", choices=qsg_jax.config.SOLVERS),
}
# The engine's hyper-parameters by their keyword name in ``qsg_jax.fit``, and their defaults.
ENGINE_PARAMS = ("sigma", "lam", "gamma", "step_size", "num_steps", "num_frequencies",
                 "unlabeled_batch_size", "labeled_batch_size", "loss", "solver")
_FIT_FIELDS = {f.name: f for f in dataclasses.fields(qsg_jax.FitConfig)}
ENGINE_DEFAULTS = {name: _FIT_FIELDS[name].default for name in ENGINE_PARAMS}
for _name in ENGINE_PARAMS:
  COMMON[_name]["help"] = _FIT_FIELDS[_name].metadata["help"]
COMMON["gamma"]["help"] += (" The flag takes one value, shared by the splits (one per split: "
                           "qsg_jax.fit(gamma=[...]) or the estimators' labeled_weight).")
COMMON["step_size"]["help"] = (   # a flag cannot take FitConfig's schedule callable
    "Initial step eta0 of eta_t = eta0 / (1 + eta0 lam t): a number, or 'auto' (eta0 from the "
    "curvature of the squared-loss risk). A schedule callable: qsg_jax.fit(step_size=...).")
StepSize = Union[float, str]


def _field_meta(cls, field):
  if field.metadata:
    return field.metadata
  if field.name in COMMON:
    return COMMON[field.name]
  raise TypeError(f"{cls.__name__}.{field.name} has no help text: declare it with "
                  "cli.setting(default, help) or add it to cli.COMMON.")


def _kind(annotation):
  """(element type, whether a list) of a field annotation (``Optional`` dropped)."""
  args = typing.get_args(annotation)
  if typing.get_origin(annotation) is Union and type(None) in args:
    rest = [a for a in args if a is not type(None)]
    annotation = rest[0] if len(rest) == 1 else Union[tuple(rest)]
  if typing.get_origin(annotation) is tuple:
    return typing.get_args(annotation)[0], True
  return annotation, False


def _number_type(element):
  """int or float for a numeric element type (or a Union of one with str), else None."""
  options = typing.get_args(element) if typing.get_origin(element) is Union else (element,)
  return next((t for t in options if t in (int, float)), None)


def _convert(element, meta, text):
  """One flag string (or value) as the element type; raises ValueError when it is not one."""
  if not isinstance(text, str):
    return text
  if text in meta["words"]:
    return text
  number = _number_type(element)
  if number is int:
    return int(text)
  if number is float:
    return float(text)
  return text


def _problem(name, meta, element, value):
  """Why ``value`` is not a valid ``name``, or None."""
  if value is None:
    return None
  if isinstance(value, (tuple, list)):
    if meta["nonempty"] and not value:
      return "must not be empty"
    problems = [_problem(name, dict(meta, nonempty=False), element, v) for v in value]
    return next((p.replace("must be", "entries must be", 1) for p in problems if p), None)
  if isinstance(value, str):
    if value in meta["words"]:
      return None
    if meta["choices"] and value not in meta["choices"]:
      return f"must be one of {', '.join(meta['choices'])}"
    if meta["nonempty"] and not value:
      return "must not be empty"
    if _number_type(element) is not None:
      return "must be a number" + (f" or {' or '.join(meta['words'])}" if meta["words"] else "")
    return None
  if isinstance(value, bool) or not isinstance(value, (int, float)):
    return None
  if not math.isfinite(value) and not (value == math.inf and meta["upper"] is None):
    return "must be a finite number"
  lower, upper = meta["lower"], meta["upper"]
  bounds = ([f">= {lower:g}"] if lower is not None else []) + (
      ["> 0"] if meta["positive"] else []) + ([f"<= {upper:g}"] if upper is not None else [])
  if ((meta["lower"] is not None and value < meta["lower"]) or (meta["positive"] and value <= 0)
      or (meta["upper"] is not None and value > meta["upper"])):
    what = "an integer" if _number_type(element) is int else "a number"
    return f"must be {what} {' and '.join(bounds)}"
  return None


def _fields(cls):
  """(field, metadata, element type, whether a list) of each field of a settings class."""
  hints = typing.get_type_hints(cls)
  for field in dataclasses.fields(cls):
    yield (field, _field_meta(cls, field), *_kind(hints[field.name]))


# Fields naming datasets of ``qsg_jax.data.load``: checked against its registry in every script.
DATASET_FIELDS = ("dataset", "datasets", "binary_dataset")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
  """Base of every script's settings: checks each field against its ``setting`` metadata (and
  dataset names against ``qsg_jax.data``'s registry)."""

  def __post_init__(self):
    for field, meta, element, is_list in _fields(type(self)):
      value = getattr(self, field.name)
      if is_list and isinstance(value, list):
        object.__setattr__(self, field.name, tuple(value))
        value = tuple(value)
      problem = _problem(field.name, meta, element, value)
      if problem:
        raise UserError(f"{field.name} {problem}; received {value!r}.")
      if field.name in DATASET_FIELDS:   # before any run store: a typo leaves nothing behind
        seen = {}
        for name in value if is_list else (value,):
          try:
            entry = data_lib.registry.get_entry(name)
          except (TypeError, ValueError) as e:
            raise UserError(f"--{field.name}: {e}") from None
          if id(entry) in seen:   # one dataset twice: its trials would count twice
            raise UserError(f"--{field.name}: {seen[id(entry)]!r} and {name!r} name the same "
                            "dataset; list each dataset once.")
          seen[id(entry)] = name

  def as_dict(self, exclude=()):
    """The settings as a JSON-able dict, without the names in ``exclude``."""
    return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
            if f.name not in exclude}


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunSettings(Settings):
  """Settings of a script that writes a results directory (``store.RunStore``)."""
  output_dir: str = "results"
  resume: bool = False
  overwrite: bool = False
  progress: bool = True

  def __post_init__(self):
    super().__post_init__()
    if self.resume and self.overwrite:
      raise UserError("--resume and --overwrite contradict each other: --resume continues the "
                      "stored run, --overwrite deletes it. Pass one of them.")


# Settings that never change a run's numbers: not compared when a run is resumed.
RUN_OPTIONS = ("output_dir", "resume", "overwrite", "progress", "data_dir")


def define_flags(cls, flag_values=FLAGS):
  """Defines one flag per field of the settings dataclass ``cls``, with its checks."""
  for field, meta, element, is_list in _fields(cls):
    name, default, text = field.name, field.default, meta["help"]
    # The script's module owns its flags, so that its --help lists them (absl names the main
    # module by sys.argv[0]).
    module = sys.argv[0] if cls.__module__ == "__main__" else cls.__module__
    kwargs = dict(flag_values=flag_values, module_name=module)
    if is_list:
      flags.DEFINE_list(name, None if default is None else [str(v) for v in default], text,
                        **kwargs)
    elif element is bool:
      flags.DEFINE_bool(name, default, text, **kwargs)
    elif meta["choices"]:
      flags.DEFINE_enum(name, default, list(meta["choices"]), text, **kwargs)
    elif element is int:
      flags.DEFINE_integer(name, default, text, **kwargs)
    elif element is float:
      flags.DEFINE_float(name, default, text, **kwargs)
    else:
      flags.DEFINE_string(name, None if default is None else str(default), text, **kwargs)
    example = default if default not in (None, ()) else (
        meta["choices"][0] if meta["choices"] else meta["lower"] or 1)   # not "--methods=1"
    if isinstance(example, tuple):
      example = ",".join(str(v) for v in example)

    def check(value, name=name, meta=meta, element=element, is_list=is_list, example=example):
      try:
        problem = _problem(name, meta, element, _value(meta, element, is_list, value))
      except ValueError:
        problem = ("must be " + ("a comma-separated list of numbers" if is_list else "a number")
                   + "".join(f" or {word}" for word in meta["words"]))
      if problem:
        raise flags.ValidationError(f"--{name} {problem}; pass e.g. --{name}={example}.")
      return True

    flags.register_validator(name, check, flag_values=flag_values)


def _value(meta, element, is_list, value):
  if value is None:
    return None
  if is_list:
    return tuple(_convert(element, meta, v) for v in value)
  return _convert(element, meta, value)


def settings_from_flags(cls, argv=(), flag_values=FLAGS):
  """The settings ``cls`` from the parsed flags (``argv``: refused if it holds positionals)."""
  if len(argv) > 1:
    raise app.UsageError(f"unexpected arguments {list(argv[1:])}; every setting is a --flag "
                         "(see --help).")
  values = {}
  for field, meta, element, is_list in _fields(cls):
    values[field.name] = _value(meta, element, is_list, flag_values[field.name].value)
  return cls(**values)


def engine_params(settings):
  """The ``qsg_jax.fit`` hyper-parameters among the fields of ``settings``."""
  return {name: getattr(settings, name) for name in ENGINE_PARAMS if hasattr(settings, name)}


def configure_logging(verbosity):
  """Warnings only from JAX, absl and matplotlib; the library's and the scripts' info lines
  (and the per-segment training lines of ``experiments.run``) with ``verbosity >= 1``."""
  logging.getLogger().setLevel(logging.WARNING)
  for name in ("jax", "jaxlib", "absl", "matplotlib", "PIL"):
    logging.getLogger(name).setLevel(logging.WARNING)
  level = logging.INFO if verbosity >= 1 else logging.WARNING
  for name in ("qsg_jax", "experiments"):
    logging.getLogger(name).setLevel(level)


def enable_compilation_cache(directory=None):
  """Turns on JAX's persistent compilation cache; returns its directory (None when off).

  ``directory`` (--compilation_cache; "off" turns the cache off): None reads
  ``$QSG_JAX_COMPILATION_CACHE``, else <user cache>/jax (``qsg_jax.data.user_cache_dir``:
  $QSG_JAX_CACHE or ~/.cache/qsg_jax). A second process then loads the programs the first
  compiled instead of compiling them again.
  """
  directory = directory or os.environ.get(COMPILATION_CACHE_ENV) or str(
      data_lib.user_cache_dir() / "jax")
  if directory == "off":
    return None
  jax.config.update("jax_compilation_cache_dir", directory)
  jax.config.update("jax_persistent_cache_min_compile_time_secs", CACHE_MIN_COMPILE_SECONDS)
  return directory


# Errors whose message is the whole answer: printed in a few lines, exit status 2.
SHORT_ERRORS = (UserError, PermissionError, data_lib.DataNotFoundError, data_lib.ChecksumError,
                qsg_jax.DivergenceError, qsg_jax.InsufficientMemoryError)


def run_main(main):
  """``absl.app.run(main)``, quietly, with the compilation cache on and short user errors."""
  flags.DEFINE_string("compilation_cache", None, f"Directory of JAX's persistent compilation "
                      f"cache, or 'off' (unset: ${COMPILATION_CACHE_ENV}, else <user cache>/jax).",
                      module_name=sys.argv[0])

  def wrapped(argv):
    configure_logging(FLAGS.verbosity)
    enable_compilation_cache(FLAGS.compilation_cache)
    try:
      return main(argv)
    except SHORT_ERRORS as e:
      print(f"error: {e}", file=sys.stderr)
      sys.exit(2)
    except KeyboardInterrupt:
      print("interrupted: every finished unit of the run is stored; rerun the same command with "
            "--resume to continue (scripts without --resume start again).", file=sys.stderr)
      sys.exit(130)
  app.run(wrapped)


def script(settings_cls, run_fn):
  """A script's entry point, ``if __name__ == "__main__": cli.script(Settings, run)``: the flags
  of ``settings_cls`` (``define_flags``), then ``run_fn(settings)`` through ``run_main``."""
  define_flags(settings_cls)

  def main(argv):   # returns None: absl exits with main's return value
    run_fn(settings_from_flags(settings_cls, argv))

  run_main(main)


def log_line(line: Optional[str]):
  """Prints one line at once (a script's default ``log``)."""
  print(line, flush=True)
