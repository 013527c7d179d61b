"""Writing experiment results: JSON, CSV and markdown tables in an output directory."""

import csv
import json
import math
import os
import pathlib
import platform
import time

import numpy as np


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


def _jsonable(value):
  if isinstance(value, dict):
    return {str(k): _jsonable(v) for k, v in value.items()}
  if isinstance(value, (list, tuple)):
    return [_jsonable(v) for v in value]
  if isinstance(value, np.ndarray) or hasattr(value, "__array__"):
    return _jsonable(np.asarray(value).tolist())
  if isinstance(value, (np.floating, float)):
    value = float(value)
    return None if math.isnan(value) or math.isinf(value) else value
  if isinstance(value, np.integer):
    return int(value)
  return value


def environment():
  """A small record of where a result was measured (devices, versions, host)."""
  import jax  # pylint: disable=g-import-not-at-top
  devices = jax.devices()
  return {
      "jax": jax.__version__,
      "backend": jax.default_backend(),
      "devices": [str(d.device_kind) for d in devices],
      "cpu_count": os.cpu_count(),
      "python": platform.python_version(),
      "time": time.strftime("%Y-%m-%d %H:%M:%S"),
  }


def write_results(output_dir, name, payload, rows=None, columns=None, title=None):
  """Writes ``name.json`` (payload + environment), and ``name.md`` / ``name.csv`` from rows.

  Args:
    output_dir: directory, created if missing.
    name: file stem.
    payload: JSON-able dict (NumPy arrays and scalars are converted).
    rows: optional list of dicts for the markdown table and CSV.
    columns: optional column order for the table.
    title: optional heading of the markdown file.

  Returns:
    Dict of the written paths by kind ("json", "md", "csv").
  """
  out = pathlib.Path(output_dir)
  out.mkdir(parents=True, exist_ok=True)
  paths = {"json": out / f"{name}.json"}
  record = dict(payload, environment=environment())
  paths["json"].write_text(json.dumps(_jsonable(record), indent=2) + "\n")
  if rows is not None:
    paths["md"] = out / f"{name}.md"
    text = (f"# {title}\n\n" if title else "") + markdown_table(rows, columns)
    paths["md"].write_text(text)
    paths["csv"] = out / f"{name}.csv"
    columns = list(columns or (rows[0].keys() if rows else []))
    with paths["csv"].open("w", newline="") as f:
      writer = csv.DictWriter(f, fieldnames=columns, extrasaction="ignore")
      writer.writeheader()
      for r in rows:
        writer.writerow({c: _jsonable(r.get(c)) for c in columns})
  return paths


def mean_std(values):
  """(mean, std, standard error) of a list of numbers, ignoring none."""
  arr = np.asarray(values, dtype=np.float64)
  if arr.size == 0:
    return float("nan"), float("nan"), float("nan")
  std = float(arr.std(ddof=1)) if arr.size > 1 else 0.0
  return float(arr.mean()), std, std / math.sqrt(arr.size)
