"""Writing experiment results: atomic files, multi-section reports, tables and plots.

Every file an experiment writes goes through ``atomic_write_*`` (a temporary file in the same
directory, then ``os.replace``): a run killed at any moment leaves either the old file or the new
one, never half of one. ``write_report`` writes ``name.json`` (payload + environment),
``name.md`` (a title and one section per table) and ``name.csv`` (the first table).
"""

import contextlib
import csv
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

TEMP_PREFIX = ".tmp-"   # temporary files of atomic writes; stale ones are removed on resume
_UMASK = os.umask(0)
os.umask(_UMASK)
PACKAGES = ("jax", "jaxlib", "numpy", "optax", "scikit-learn", "qsg_jax")


def markdown_table(rows, columns=None, floatfmt=".4f"):
  """Renders a list of dicts as a GitHub markdown table.

  Args:
    rows: list of dicts, one per table row.
    columns: column keys in order; defaults to the keys of the first row.
    floatfmt: format spec for float cells.

  Returns:
    The table as a string (header, separator and one line per row).
  """
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


_jsonable = jsonable   # former private name, kept for the scripts that still use it


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


def save_figure(fig, path, dpi=120):
  """Saves a matplotlib figure as PNG atomically and closes it."""
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  with atomic_open(path, "wb") as f:
    fig.savefig(f, format="png", dpi=dpi)
  plt.close(fig)
  return pathlib.Path(path)


def pyplot():
  """matplotlib.pyplot with the non-interactive Agg backend."""
  import matplotlib  # pylint: disable=g-import-not-at-top
  matplotlib.use("Agg")
  import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
  return plt


def remove_stale_temporaries(directory):
  """Removes temporary files a killed atomic write left in ``directory``; returns their names."""
  directory = pathlib.Path(directory)
  if not directory.is_dir():
    return []
  stale = sorted(p for p in directory.iterdir() if p.name.startswith(TEMP_PREFIX))
  for p in stale:
    p.unlink()
  return [p.name for p in stale]


def check_writable(output_dir):
  """Creates ``output_dir`` and checks a file can be written there, before any training.

  Raises:
    PermissionError: the directory cannot be created or written (the message says which).
  """
  out = pathlib.Path(output_dir)
  try:
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(prefix=TEMP_PREFIX, dir=out):
      pass
  except OSError as e:
    raise PermissionError(
        f"--output_dir={output_dir} is not writable ({e.strerror or e}); choose a directory you "
        "can write to, or fix its permissions, before a run whose results would be lost.") from e
  return out


def package_versions():
  """Installed versions of the packages a result depends on (None when not installed)."""
  versions = {}
  for name in PACKAGES:
    try:
      versions[name] = metadata.version(name)
    except metadata.PackageNotFoundError:
      versions[name] = None
  return versions


def git_commit():
  """The repository's commit (with "+dirty" for local changes), or None outside git."""
  root = pathlib.Path(__file__).resolve().parent.parent
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
      "jax": jax.__version__,
      "backend": jax.default_backend(),
      "devices": [str(d.device_kind) for d in devices],
      "device_count": len(devices),
      "process_count": jax.process_count(),
      "cpu_count": os.cpu_count(),
      "python": platform.python_version(),
      "packages": package_versions(),
      "git_commit": git_commit(),
      "command_line": [sys.executable] + sys.argv,
      "time": time.strftime("%Y-%m-%d %H:%M:%S"),
  }


def _csv_text(rows, columns):
  buffer = io.StringIO(newline="")
  writer = csv.DictWriter(buffer, fieldnames=columns, extrasaction="ignore")
  writer.writeheader()
  for r in rows:
    writer.writerow({c: jsonable(r.get(c)) for c in columns})
  return buffer.getvalue()


def write_report(output_dir, name, payload, sections=(), title=None, env=None):
  """Writes ``name.json``, and ``name.md`` / ``name.csv`` when there are sections, atomically.

  Args:
    output_dir: directory, created if missing.
    name: file stem.
    payload: JSON-able dict (NumPy arrays and scalars are converted); "environment" is added.
    sections: sequence of (heading or None, rows, columns or None); the markdown has one table
      per section under its heading, the CSV holds the first section's table.
    title: optional heading of the markdown file.
    env: the environment record (default: ``environment()``).

  Returns:
    Dict of the written paths by kind ("json", and "md", "csv" with sections).
  """
  out = pathlib.Path(output_dir)
  out.mkdir(parents=True, exist_ok=True)
  paths = {"json": atomic_write_json(out / f"{name}.json",
                                     dict(payload, environment=env or environment()))}
  if sections:
    parts = [f"# {title}\n"] if title else []
    for heading, rows, columns in sections:
      parts.append((f"## {heading}\n\n" if heading else "") + markdown_table(rows, columns))
    paths["md"] = atomic_write_text(out / f"{name}.md", "\n".join(parts))
    _, rows, columns = sections[0]
    paths["csv"] = atomic_write_text(
        out / f"{name}.csv", _csv_text(rows, list(columns or (rows[0].keys() if rows else []))))
  return paths


def write_results(output_dir, name, payload, rows=None, columns=None, title=None):
  """Writes ``name.json`` (payload + environment), and ``name.md`` / ``name.csv`` from rows.

  The one-table form of ``write_report``; same atomic writes.

  Returns:
    Dict of the written paths by kind ("json", "md", "csv").
  """
  sections = [(None, rows, columns)] if rows is not None else ()
  return write_report(output_dir, name, payload, sections, title)


def mean_std(values):
  """(mean, std, standard error) of a list of numbers, ignoring none."""
  arr = np.asarray(values, dtype=np.float64)
  if arr.size == 0:
    return float("nan"), float("nan"), float("nan")
  std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
  return float(arr.mean()), std, std / math.sqrt(arr.size)
