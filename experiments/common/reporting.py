"""Writing results: atomic files, markdown reports, the run's environment, figures, progress.

Every file an experiment writes goes through ``atomic_write_*`` (a temporary file in the same
directory, then ``os.replace``): a run killed at any moment leaves either the old file or the new
one, never half of one. ``write_report`` writes ``name.json`` (payload + environment),
``name.md`` (a title and one section per table) and ``name.csv`` (the first table).
"""

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
from importlib import metadata

import numpy as np
import tqdm

TEMP_PREFIX = ".tmp-"   # temporary files of atomic writes; stale ones are removed on resume
_UMASK = os.umask(0)
os.umask(_UMASK)
PACKAGES = ("jax", "jaxlib", "numpy", "optax", "scikit-learn")


def markdown_table(rows, columns=None, floatfmt=".4f"):
  """A list of dicts as a GitHub markdown table (``columns``: keys in order, default the first
  row's); floats with ``floatfmt``, very small or large ones in ``.3g``."""
  if not rows:
    return "(no rows)\n"
  columns = list(columns or rows[0].keys())

  def cell(value):
    if isinstance(value, (float, np.floating)):
      if math.isnan(value):
        return "nan"
      if value != 0 and (abs(value) < 1e-3 or abs(value) >= 1e5):
        return format(value, ".3g")
      return format(value, floatfmt)
    return "" if value is None else str(value)

  lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
  lines += ["| " + " | ".join(cell(r.get(c)) for c in columns) + " |" for r in rows]
  return "\n".join(lines) + "\n"


def jsonable(value):
  """``value`` with NumPy/JAX arrays and scalars as lists and numbers; NaN and inf as None."""
  if isinstance(value, dict):
    return {str(k): jsonable(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [jsonable(v) for v in value]
  if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
    return jsonable(np.asarray(value).tolist())
  if isinstance(value, (np.floating, float)):
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value
  if isinstance(value, np.integer):
    return int(value)
  return value


@contextlib.contextmanager
def atomic_open(path, mode="w", **kwargs):
  """Opens a temporary file next to ``path``; on success it replaces ``path`` at once.

  On an exception the temporary file is removed and ``path`` is left as it was. A process killed
  while writing leaves at most a ``.tmp-*`` file (``remove_stale_temporaries`` cleans it).
  """
  path = pathlib.Path(path)
  fd, tmp = tempfile.mkstemp(prefix=TEMP_PREFIX + path.name + ".", dir=path.parent)
  try:
    os.fchmod(fd, 0o666 & ~_UMASK)   # mkstemp's 0600 would make results private
    with os.fdopen(fd, mode, **kwargs) as f:
      yield f
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    with contextlib.suppress(FileNotFoundError):
      os.unlink(tmp)
    raise


def atomic_write_text(path, text):
  """Writes ``text`` to ``path`` atomically."""
  with atomic_open(path, "w") as f:
    f.write(text)
  return pathlib.Path(path)


def atomic_write_json(path, payload):
  """Writes ``payload`` (made JSON-able) to ``path`` atomically."""
  return atomic_write_text(path, json.dumps(jsonable(payload), indent=2) + "\n")


def remove_stale_temporaries(directory):
  """Removes temporary files a killed atomic write left in ``directory``; returns their names."""
  directory = pathlib.Path(directory)
  if not directory.is_dir():
    return []
  stale = sorted(p for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX))
  for p in stale:
    p.unlink()
  return [p.name for p in stale]


def pyplot():
  """matplotlib.pyplot with the non-interactive Agg backend."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def save_figure(fig, path, dpi=120):
  """Saves a matplotlib figure as PNG atomically and closes it; returns the path."""
  with atomic_open(path, "wb") as f:
    fig.savefig(f, format="png", dpi=dpi)
  pyplot().close(fig)
  return pathlib.Path(path)


def package_versions():
  """Versions of Python, qsg_jax and the packages a result depends on (None: not installed)."""
  import qsg_jax  # pylint: disable=g-import-not-at-top
  versions = {"python": platform.python_version(),
              "qsg_jax": getattr(qsg_jax, "__version__", None)}
  for name in PACKAGES + (() if versions["qsg_jax"] else ("qsg_jax",)):
    try:
      versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      versions[name] = None
  return versions


def git_commit():
  """The repository's commit (with "+dirty" for local changes), or None outside git."""
  root = pathlib.Path(__file__).resolve().parents[2]
  try:
    run = lambda *a: subprocess.run(["git", *a], cwd=root, capture_output=True, text=True,
                                    timeout=10, check=True).stdout.strip()
    commit = run("rev-parse", "HEAD")
    dirty = bool(run("status", "--porcelain", "--untracked-files=no"))
  except (OSError, subprocess.SubprocessError):
    return None
  return commit + ("+dirty" if dirty else "")


def environment():
  """Where and with what a result was measured: devices, versions, commit, command line."""
  import jax  # pylint: disable=g-import-not-at-top
  devices = jax.devices()
  return {
      "backend": jax.default_backend(),
      "devices": [str(d.device_kind) for d in devices],
      "device_count": len(devices),
      "process_count": jax.process_count(),
      "cpu_count": os.cpu_count(),
      "packages": package_versions(),
      "git_commit": git_commit(),
      "command_line": [sys.executable] + sys.argv,
      "compilation_cache": jax.config.jax_compilation_cache_dir,
      "time": time.strftime("%Y-%m-%d %H:%M:%S"),
  }


def _csv_text(rows, columns):
  buffer = io.StringIO(newline="")
  writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
  writer.writeheader()
  for r in rows:
    writer.writerow({c: jsonable(r.get(c)) for c in columns})
  return buffer.getvalue()


def write_report(output_dir, name, payload, sections=(), title=None):
  """Writes ``name.json``, and ``name.md`` / ``name.csv`` when there are sections, atomically.

  Args:
    output_dir: directory, created if missing.
    name: file stem.
    payload: JSON-able dict (NumPy arrays and scalars are converted); "environment" is added.
    sections: sequence of (heading or None, rows, columns or None); the markdown has one table
      per section under its heading, the CSV holds the first section's table.
    title: optional heading of the markdown file.

  Returns:
    Dict of the written paths by kind ("json", and "md", "csv" with sections).
  """
  out = pathlib.Path(output_dir)
  out.mkdir(parents=True, exist_ok=True)
  paths = {"json": atomic_write_json(out / f"{name}.json",
                                     dict(payload, environment=environment()))}
  if sections:
    parts = [f"# {title}\n"] if title else []
    for heading, rows, columns in sections:
      parts.append((f"## {heading}\n\n" if heading else "") + markdown_table(rows, columns))
    paths["md"] = atomic_write_text(out / f"{name}.md", "\n".join(parts))
    _, rows, columns = sections[0]
    paths["csv"] = atomic_write_text(
        out / f"{name}.csv", _csv_text(rows, list(columns or (rows[0].keys() if rows else []))))
  return paths


def mean_std(values):
  """(mean, std, standard error) of a list of numbers; NaNs for an empty list, and for the std
  and standard error of one number (undefined: a single trial has no spread to report)."""
  arr = np.asarray(values, dtype=np.float64)
  if arr.size == 0:
    return float("nan"), float("nan"), float("nan")
  std = float(arr.std(ddof=1)) if arr.size > 1 else float("nan")
  return float(arr.mean()), std, std / math.sqrt(arr.size)


class Progress:
  """A tqdm bar over ``total`` units whose rate, and so its ETA, excludes the first update.

  The first update of a run comes after compilation, which can take longer than the whole rest
  of a short run: the bar starts its clock there (tqdm's ``initial``), so the ETA extrapolates
  only compiled work. ``enabled=False`` draws nothing; otherwise the bar shows on a terminal only
  (tqdm's ``disable=None``), so logs hold the per-trial lines alone.
  """

  def __init__(self, total, unit="steps", enabled=True, log=print):
    self.total, self.unit, self.enabled, self.log = int(total), unit, enabled, log
    self.done = 0
    self._bar = self._open(0, "compiling")

  def _open(self, initial, note=None):
    if not self.enabled:
      return None
    return tqdm.tqdm(total=self.total, initial=initial, unit=f" {self.unit}", file=sys.stderr,
                     disable=None, dynamic_ncols=True, leave=note is None, postfix=note)

  def update(self, done):
    """Sets the units done so far."""
    first, self.done = self.done == 0 and done > 0, min(int(done), self.total)
    if self._bar is None:
      return
    if first:   # the clock starts now: the rate counts compiled work only
      self._bar.close()
      self._bar = self._open(self.done)
    else:
      self._bar.update(self.done - self._bar.n)

  def write(self, line):
    """``log(line)`` without garbling the bar."""
    with tqdm.tqdm.external_write_mode():
      self.log(line)

  def close(self):
    if self._bar is not None:
      self._bar.close()


def data_files(dataset):
  """{path: sha256} of the files a real dataset was read from (embedded sets: {}).

  The loader names the files it read at the end of ``dataset.description`` ("Files: a, b.");
  their bytes are hashed here (compressed files as stored).
  """
  text = dataset.description
  if "Files: " not in text:
    return {}
  paths = text.rsplit("Files: ", 1)[1].rstrip(".").split(", ")
  out = {}
  for path in paths:
    with open(path, "rb") as f:
      out[path] = hashlib.file_digest(f, "sha256").hexdigest()
  return out


def count(number: int, noun: str) -> str:
  """ "1 trial", "3 trials": a count with its noun in the right number."""
  return f"{number} {noun}{'' if number == 1 else 's'}"
