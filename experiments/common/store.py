"""A run's results directory: one manifest, one file per finished unit of work, safe reruns.

Layout of ``output_dir`` for a script named ``NAME`` (several scripts may share a directory)::

  NAME.json            {"complete": false, "settings": ..., "cells_done": n} while running; the
                       run's full payload with "complete": true at the end (``finish``)
  NAME.md, NAME.csv    the report tables (``finish`` with sections)
  cells/NAME/*.json    one finished unit ("cell": a trial, a fit, a CV), written the moment it ends

Every file is written atomically (``reporting.atomic_write_*``), so a kill at any moment leaves
whole files only. ``start`` decides what happens to a run already there:
  - nothing there: a new run;
  - ``resume``: the stored run continues (finished or not) from its cells, after checking that
    the settings that fix its numbers equal the stored ones (``selection`` settings, which only
    choose *which* cells run, may differ: more trials, another dataset);
  - ``overwrite``: the stored run is deleted and a new one starts;
  - neither: refused with a message (a finished run is never replaced without ``overwrite``, an
    unfinished one never without ``resume`` or ``overwrite``).
A resumed run reports exactly the numbers of the interrupted one for the cells it had finished
(timings included) and computes the rest as an uninterrupted run would.
"""

import json
import pathlib
import shutil
import tempfile
import time

import numpy as np

from experiments.common import cli
from experiments.common import reporting


class StoreError(cli.UserError):
  """The results directory cannot be used as asked (the message says why and what to pass)."""


def check_output_dir(output_dir):
  """Creates ``output_dir`` and checks a file can be written there, before any work.

  Raises:
    StoreError: ``output_dir`` is empty (it would write into the current directory).
    PermissionError: the directory cannot be created or written (the message says which).
  """
  if output_dir is None or not str(output_dir).strip():
    raise StoreError("--output_dir is empty; name the directory of the results, e.g. "
                     "--output_dir=results/run1 (an empty one would write into the current "
                     "directory).")
  out = pathlib.Path(output_dir)
  try:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(prefix=reporting.TEMP_PREFIX, dir=out):
      pass
  except OSError as e:
    raise PermissionError(
        f"--output_dir={output_dir} is not writable ({e.strerror or e}); choose a directory you "
        "can write to, or fix its permissions, before a run whose results would be lost.") from e
  return out


def _plain(value):
  """``value`` with NumPy/JAX arrays and scalars as Python lists and numbers (NaN kept)."""
  if isinstance(value, dict):
    return {str(k): _plain(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_plain(v) for v in value]
  if hasattr(value, "__array__"):
    return _plain(np.asarray(value).tolist()) if np.ndim(value) else np.asarray(value).item()
  return value


def _differences(stored, current, ignore):
  return [f"{name}: the stored run has {stored.get(name)!r}, this one {current.get(name)!r}"
          for name in sorted(set(stored) | set(current))
          if name not in ignore and stored.get(name) != current.get(name)]


class RunStore:
  """Reads and writes one script's run in ``output_dir``; only a ``writer`` touches the disk."""

  def __init__(self, output_dir, name, *, writer=True):
    self.dir = pathlib.Path(output_dir) if str(output_dir).strip() else None
    self.name = name
    self.writer = writer
    self.settings = None
    self.cells = {}
    if self.dir is not None:
      self.manifest = self.dir / f"{name}.json"
      self.cells_dir = self.dir / "cells" / name

  def _stored(self):
    try:
      return json.loads(self.manifest.read_text())
    except FileNotFoundError:
      return None
    except json.JSONDecodeError as e:
      raise StoreError(f"{self.manifest} is not valid JSON ({e}); pass --overwrite to start "
                       "over, or choose another --output_dir.") from e

  def start(self, settings: dict, *, resume=False, overwrite=False, selection=()):
    """Prepares the directory (see the module docstring); returns the finished cells by name.

    Args:
      settings: JSON-able dict of everything the numbers depend on.
      resume: continue the stored run from its cells.
      overwrite: delete the stored run and start a new one.
      selection: names in ``settings`` that may differ on ``resume`` (they choose which cells
        run, not their numbers).

    Raises:
      StoreError: an empty directory name, nothing to resume, settings that differ, or a run
        that would be replaced without ``overwrite``.
      PermissionError: the directory is not writable.
    """
    if self.dir is None:
      check_output_dir("")
    self.settings = reporting.jsonable(settings)
    if self.writer:
      check_output_dir(self.dir)
      reporting.remove_stale_temporaries(self.dir)
      reporting.remove_stale_temporaries(self.cells_dir)
    stored = self._stored()
    if resume:
      if stored is None:
        raise StoreError(f"--resume: {self.dir} holds no run to resume (no "
                         f"{self.manifest.name}); run without --resume to start one.")
      differences = _differences(stored.get("settings", {}), self.settings, selection)
      if differences:
        raise StoreError("--resume: the settings differ from the stored run's, so its results "
                         "cannot be reused:\n  " + "\n  ".join(differences) + "\nRerun with the "
                         "stored values, --overwrite to replace the run, or another "
                         "--output_dir.")
      self.cells = {p.stem: json.loads(p.read_text())
                    for p in sorted(self.cells_dir.glob("*.json"))}
    elif stored is not None and not overwrite and (   # nothing done: nothing to lose (a run
        stored.get("complete", True) or stored.get("cells_done", 0)   # refused before its
        or any(self.cells_dir.glob("*.json"))):                     # first unit, e.g. no data)
      if stored.get("complete", True):
        raise StoreError(
            f"{self.dir} holds the finished results {self.manifest.name}; pass "
            "--overwrite to replace it, --resume to extend it, or choose another --output_dir.")
      raise StoreError(
          f"{self.dir} holds an unfinished run ({self.manifest.name}, "
          f"{stored.get('cells_done', 0)} units done); pass --resume to continue it, "
          "--overwrite to start over, or choose another --output_dir.")
    elif self.writer and self.cells_dir.exists():
      shutil.rmtree(self.cells_dir)
    if self.writer:
      self.cells_dir.mkdir(parents=True, exist_ok=True)
      self._write_manifest()
    return dict(self.cells)

  def _write_manifest(self):
    reporting.atomic_write_json(self.manifest, {
        "complete": False, "cells_done": len(self.cells), "settings": self.settings,
        "updated": time.strftime("%Y-%m-%d %H:%M:%S")})

  def cell_path(self, name):
    safe = "".join(c if c.isalnum() or c in "-_.=" else "_" for c in str(name))
    return self.cells_dir / f"{safe}.json"

  def has(self, name):
    """Whether cell ``name`` is finished (stored or computed in this run)."""
    return self.cell_path(name).stem in self.cells

  def cached(self, name, compute):
    """The stored value of cell ``name``, or ``compute()`` (JSON-able) written at once."""
    stem = self.cell_path(name).stem
    if stem in self.cells:
      return self.cells[stem]
    # Round-tripped through JSON (NaN kept), so a fresh and a resumed run see the same values.
    text = json.dumps(_plain(compute()), indent=2) + "\n"
    self.cells[stem] = json.loads(text)
    if self.writer:
      reporting.atomic_write_text(self.cell_path(name), text)
      self._write_manifest()
    return self.cells[stem]

  def finish(self, payload=None, sections=(), title=None):
    """Writes NAME.json (``payload``, the settings, "complete": true and the environment) and,
    with ``sections``, NAME.md / NAME.csv (``reporting.write_report``); returns the paths."""
    if not self.writer:
      return {}
    payload = dict(payload or {}, complete=True, settings=self.settings)
    return reporting.write_report(self.dir, self.name, payload, sections, title)


def cached(store, name, compute):
  """``store.cached(name, compute)``, or ``compute()`` when ``store`` is None."""
  return compute() if store is None else store.cached(name, compute)
