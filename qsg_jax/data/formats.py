"""Parsers of the original public file formats: delimited text tables, LIBSVM sparse, UCI Bank.

Every parser reads a binary stream of uncompressed bytes (as ``files.CheckedFile`` provides)
and returns NumPy arrays; none of them knows where the bytes came from.
"""

import csv
import io

import numpy as np


def _text(stream):
  """Text view of a binary stream; universal newlines turn the CRLF of UCI files into LF."""
  return io.TextIOWrapper(stream, encoding="utf-8-sig", newline=None)


def read_table(stream, *, delimiter=None, header=False, usecols=None, expected_columns=None):
  """Reads a numeric delimited text table.

  Args:
    stream: binary stream of the file.
    delimiter: column separator; None means any whitespace.
    header: whether the first line holds column names.
    usecols: indices of the columns to keep (others, e.g. text columns, are skipped).
    expected_columns: number of columns every row must have, or None.

  Returns:
    (names, values): names is a tuple of the kept header names (None without a header), values
    is a float64 array [rows, kept columns].

  Raises:
    ValueError: a row with the wrong number of columns or a non-numeric entry.
  """
  text = _text(stream)
  try:
    names = None
    if header:
      first = text.readline().rstrip("\n")
      all_names = [n.strip().strip('"') for n in (first.split(delimiter) if delimiter
                                                  else first.split())]
      if expected_columns is not None and len(all_names) != expected_columns:
        raise ValueError(f"the header has {len(all_names)} columns, expected {expected_columns}: "
                         f"{first[:200]!r}. Is this the original file?")
      names = tuple(all_names[i] for i in usecols) if usecols is not None else tuple(all_names)
    values = np.loadtxt(text, delimiter=delimiter, usecols=usecols, dtype=np.float64, ndmin=2)
  finally:
    text.detach()
  if expected_columns is not None and usecols is None and values.shape[1] != expected_columns:
    raise ValueError(f"the table has {values.shape[1]} columns, expected {expected_columns}. "
                     "Is this the original file?")
  return names, values


def read_libsvm(stream, num_features):
  """Reads a LIBSVM / svmlight file (``label index:value ...``, 1-based indices) densely.

  Args:
    stream: binary stream of the file.
    num_features: d; indices above it are an error, features never present are zero.

  Returns:
    (x, labels): float64 [n, d] and the raw float64 labels [n].
  """
  from sklearn import datasets as sk_datasets  # pylint: disable=g-import-not-at-top  (slow)
  x, labels = sk_datasets.load_svmlight_file(stream, n_features=num_features, zero_based=False,
                                             dtype=np.float64)
  return np.asarray(x.toarray(), dtype=np.float64), np.asarray(labels, dtype=np.float64)


def one_hot(values, levels, column):
  """One-hot encodes a categorical column against its documented levels.

  Args:
    values: sequence of n strings.
    levels: the allowed levels, in output column order.
    column: the column's name (used in messages and in the returned names).

  Returns:
    (codes, names): float64 [n, len(levels)] indicator matrix and ``column=level`` names.

  Raises:
    ValueError: a value outside ``levels``.
  """
  index = {level: i for i, level in enumerate(levels)}
  try:
    codes = np.fromiter((index[v] for v in values), dtype=np.int64, count=len(values))
  except KeyError as e:
    raise ValueError(f"column {column!r} has the value {e.args[0]!r}, which is not one of its "
                     f"documented levels {list(levels)}. Is this the original file?") from None
  matrix = np.zeros((len(values), len(levels)), dtype=np.float64)
  matrix[np.arange(len(values)), codes] = 1.0
  return matrix, tuple(f"{column}={level}" for level in levels)


def read_semicolon_records(stream):
  """Reads a ';'-separated file with a header and quoted strings (UCI Bank Marketing).

  Returns:
    (header, rows): the column names and a list of rows (lists of strings).
  """
  text = _text(stream)
  try:
    reader = csv.reader(text, delimiter=";", quotechar='"')
    header = next(reader)
    rows = [row for row in reader if row]
  finally:
    text.detach()
  bad = [i for i, row in enumerate(rows) if len(row) != len(header)]
  if bad:
    raise ValueError(f"row {bad[0] + 2} has {len(rows[bad[0]])} fields, expected {len(header)}. "
                     "Is this the original file?")
  return header, rows


def encode_records(header, rows, *, numeric, categorical, drop=()):
  """Turns string records into a float64 matrix: numeric columns as they are, categoricals one-hot.

  Columns come out in file order; each categorical expands in place into its levels that occur
  in ``rows`` (in the documented order of ``categorical[column]``), so the encoding depends only
  on the file, and no all-zero column is created for a level that never occurs.

  Args:
    header: column names.
    rows: list of rows (lists of strings).
    numeric: names of numeric columns.
    categorical: {name: documented levels} of categorical columns.
    drop: names of columns to leave out.

  Returns:
    (x, names): float64 [n, d] and the d feature names.
  """
  blocks, names = [], []
  for j, column in enumerate(header):
    if column in drop:
      continue
    values = [row[j] for row in rows]
    if column in numeric:
      try:
        blocks.append(np.asarray(values, dtype=np.float64)[:, None])
      except ValueError as e:
        raise ValueError(f"numeric column {column!r} has a non-numeric entry ({e}).") from None
      names.append(column)
    elif column in categorical:
      seen = set(values)
      unknown = sorted(seen - set(categorical[column]))
      if unknown:
        raise ValueError(f"column {column!r} has the values {unknown[:5]}, which are not among its "
                         f"documented levels {list(categorical[column])}. Is this the original "
                         "file?")
      levels = [level for level in categorical[column] if level in seen]
      matrix, level_names = one_hot(values, levels, column)
      blocks.append(matrix)
      names.extend(level_names)
    else:
      raise ValueError(f"unexpected column {column!r}; known columns: "
                       f"{sorted(set(numeric) | set(categorical))}. Is this the original file?")
  return np.concatenate(blocks, axis=1), tuple(names)
