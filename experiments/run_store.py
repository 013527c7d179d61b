"""The main job's results directory: one file per finished trial, resumable runs.

Layout of ``output_dir``::

  run.json                 {"complete": false, "trials_done": t, "settings": ...} while running,
                           the full summary with "complete": true at the end
  trials/trial_00003.json  one finished trial, written atomically the moment it ends

Every file is written by ``reporting.atomic_write_json`` (temporary file + ``os.replace``), so a
kill at any moment leaves whole files only; the temporaries of a killed write are removed when
the run is resumed. ``resume=True`` continues from the trial files after checking that the run's
settings equal the stored ones (a resumed run must give the uninterrupted run's numbers).
"""

import json
import pathlib

import numpy as np

from experiments import reporting


class ResumeError(ValueError):
  """The results directory cannot be resumed (or would be overwritten) as asked."""


def _describe_differences(stored, current):
  lines = []
  for name in sorted(set(stored) | set(current)):
    if stored.get(name) != current.get(name):
      lines.append(f"{name}: the stored run has {stored.get(name)!r}, this one "
                   f"{current.get(name)!r}")
  return lines


class RunStore:
  """Reads and writes a run's files; only a ``writer`` (process 0) touches the disk."""

  def __init__(self, output_dir, writer=True):
    self.dir = pathlib.Path(output_dir)
    self.trials_dir = self.dir / "trials"
    self.manifest = self.dir / "run.json"
    self.writer = writer
    self.settings = None

  def trial_path(self, t):
    return self.trials_dir / f"trial_{t:05d}.json"

  def _read_manifest(self):
    try:
      return json.loads(self.manifest.read_text())
    except FileNotFoundError:
      return None
    except json.JSONDecodeError as e:
      raise ResumeError(f"{self.manifest} is not valid JSON ({e}); delete the directory or "
                        "choose another --output_dir.") from e

  def start(self, settings, num_trials, resume):
    """Prepares the directory; returns {trial index: row} of the trials already done.

    Args:
      settings: JSON-able dict of everything the numbers depend on (dataset, protocol,
        hyper-parameters, seed, trials, ...).
      num_trials: trials of the run.
      resume: continue the run stored in the directory (its settings must equal ``settings``).

    Raises:
      PermissionError: the directory is not writable.
      ResumeError: nothing to resume, settings that differ, or an unfinished run that
        ``resume=False`` would overwrite.
    """
    self.settings = reporting.jsonable(settings)
    if self.writer:
      reporting.check_writable(self.dir)
      self.trials_dir.mkdir(exist_ok=True)
      reporting.remove_stale_temporaries(self.dir)
      reporting.remove_stale_temporaries(self.trials_dir)
    stored = self._read_manifest()
    if resume:
      if stored is None:
        raise ResumeError(f"--resume: {self.dir} holds no run to resume (no run.json); run "
                          "without --resume to start one.")
      differences = _describe_differences(stored.get("settings", {}), self.settings)
      if differences:
        raise ResumeError("--resume: the flags differ from the stored run's, so its trials "
                          "cannot be reused:\n  " + "\n  ".join(differences) + "\nRerun with "
                          "the stored values, or start a new run in another --output_dir.")
      done = {}
      for t in range(num_trials):
        path = self.trial_path(t)
        if path.exists():
          done[t] = json.loads(path.read_text())
      return done
    if stored is not None and not stored.get("complete", False):
      raise ResumeError(
          f"{self.dir} holds an unfinished run ({stored.get('trials_done', 0)} of "
          f"{stored.get('num_trials', '?')} trials done); pass --resume to continue it, or "
          "delete it / choose another --output_dir to start over.")
    if self.writer:
      for old in self.trials_dir.glob("trial_*.json"):
        old.unlink()
      self._write_manifest(0, num_trials)
    return {}

  def _write_manifest(self, trials_done, num_trials):
    reporting.atomic_write_json(self.manifest, {
        "complete": False, "trials_done": trials_done, "num_trials": num_trials,
        "settings": self.settings})

  def save_trial(self, t, row, trials_done, num_trials):
    """Writes trial ``t`` at once, then records the count done in the manifest."""
    if self.writer:
      reporting.atomic_write_json(self.trial_path(t), row)
      self._write_manifest(trials_done, num_trials)

  def finish(self, summary, sections, title):
    """Writes the complete run.json / run.md / run.csv (``reporting.write_report``)."""
    if not self.writer:
      return {}
    payload = dict(summary, complete=True, settings=self.settings)
    return reporting.write_report(self.dir, "run", payload, sections, title)


def _plain(value):
  """``value`` with NumPy/JAX arrays and scalars as Python lists and numbers (NaN kept)."""
  if isinstance(value, dict):
    return {str(k): _plain(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if hasattr(value, "__array__"):
    return _plain(np.asarray(value).tolist()) if np.ndim(value) else np.asarray(value).item()
  return value


class CellStore(RunStore):
  """A long experiment's finished units ("cells": one fit, one size, one repetition), for
  ``--resume`` in scripts whose work is not a list of trials.

  Each cell is written at once, atomically, to ``cells/<name>.json``; ``cached(name, compute)``
  returns the stored cell on a resumed run and computes (and stores) it otherwise. A resumed run
  therefore reports exactly the numbers of the interrupted one for the cells it had finished
  (timings included) and computes the rest as an uninterrupted run would.
  """

  def __init__(self, output_dir, writer=True):
    super().__init__(output_dir, writer)
    self.trials_dir = self.dir / "cells"
    self.cells = {}

  def cell_path(self, name):
    safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in str(name))
    return self.trials_dir / f"{safe}.json"

  def start(self, settings, resume):
    """Prepares the directory and loads the finished cells of a resumed run.

    Raises:
      PermissionError, ResumeError: as ``RunStore.start``.
    """
    super().start(settings, 0, resume)
    self.cells = {}
    if resume:
      for path in sorted(self.trials_dir.glob("*.json")):
        self.cells[path.stem] = json.loads(path.read_text())
    elif self.writer:
      for old in self.trials_dir.glob("*.json"):
        old.unlink()
    return dict(self.cells)

  def cached(self, name, compute):
    """The stored value of cell ``name``, or ``compute()`` written at once (JSON-able)."""
    stem = self.cell_path(name).stem
    if stem in self.cells:
      return self.cells[stem]
    # Round-tripped through JSON (NaN kept), so a fresh and a resumed run see the same values.
    text = json.dumps(_plain(compute()), indent=2) + "\n"
    self.cells[stem] = json.loads(text)
    if self.writer:
      reporting.atomic_write_text(self.cell_path(name), text)
      self._write_manifest(len(self.cells), None)
    return self.cells[stem]

  def finish_cells(self):
    """Marks the run complete (its report is written by the script itself)."""
    if self.writer:
      reporting.atomic_write_json(self.manifest, {
          "complete": True, "cells_done": len(self.cells), "settings": self.settings})


def cached(store, name, compute):
  """``store.cached(name, compute)``, or ``compute()`` when ``store`` is None."""
  return compute() if store is None else store.cached(name, compute)
