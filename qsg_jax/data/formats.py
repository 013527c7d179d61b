"""Parsers of the original public file formats: delimited text tables, LIBSVM sparse, UCI Bank.

Every parser reads a binary stream of uncompressed bytes (as ``files.CheckedFile`` provides)
and returns NumPy arrays; none of them knows where the bytes came from. Tables are read by
``pandas.read_csv`` (measured on the real files, 2-core CPU: sgemm_product.csv 0.15 s against
0.42 s for ``np.loadtxt``, bank-additional-full.csv 0.09 s against 0.32 s for the csv module,
identical values); LIBSVM files by scikit-learn's ``load_svmlight_file``.
"""

import numpy as np
import pandas as pd


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
    ValueError: a row with too many columns, a non-numeric entry, or not ``expected_columns``
      columns. (A short row reads as NaN, which the dataset's finiteness check reports.)
  """
  try:
    frame = pd.read_csv(stream, sep=r"\s+" if delimiter is None else delimiter,
                        header=0 if header else None, usecols=usecols, dtype=np.float64,
                        encoding="utf-8-sig")
  except ValueError as e:   # pandas' ParserError is a ValueError
    raise ValueError(f"the table could not be read as numbers ({str(e)[:200]}). Is this the "
                     "original file?") from None
  if expected_columns is not None and usecols is None and frame.shape[1] != expected_columns:
    raise ValueError(f"the table has {frame.shape[1]} columns, expected {expected_columns}. "
                     "Is this the original file?")
  names = tuple(str(c).strip() for c in frame.columns) if header else None
  return names, frame.to_numpy(np.float64)


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


def read_records(stream, delimiter=";"):
  """Reads a delimited file with a header and quoted strings (UCI Bank Marketing) as strings.

  Returns:
    ``pandas.DataFrame`` of str columns named by the header (no value is turned into NaN).

  Raises:
    ValueError: a row with more fields than the header.
  """
  try:
    return pd.read_csv(stream, sep=delimiter, dtype=str, keep_default_na=False,
                       encoding="utf-8-sig")
  except ValueError as e:
    raise ValueError(f"the records could not be read ({str(e)[:200]}). Is this the original "
                     "file?") from None


def encode_records(frame, *, numeric, categorical, drop=()):
  """Turns string records into a float64 matrix: numeric columns as they are, categoricals one-hot.

  Columns come out in file order; each categorical expands in place into its levels that occur
  in ``frame`` (in the documented order of ``categorical[column]``), so the encoding depends only
  on the file, and no all-zero column is created for a level that never occurs.

  Args:
    frame: ``pandas.DataFrame`` of strings (``read_records``).
    numeric: names of numeric columns.
    categorical: {name: documented levels} of categorical columns.
    drop: names of columns to leave out.

  Returns:
    (x, names): float64 [n, d] and the d feature names.
  """
  blocks, names = [], []
  for column in frame.columns:
    if column in drop:
      continue
    values = frame[column]
    if column in numeric:
      try:
        blocks.append(values.to_numpy(np.float64)[:, None])
      except ValueError as e:
        raise ValueError(f"numeric column {column!r} has a non-numeric entry ({e}).") from None
      names.append(column)
    elif column in categorical:
      levels = [level for level in categorical[column] if level in set(values)]
      codes = pd.Categorical(values, categories=levels).codes
      if np.any(codes < 0):
        unknown = sorted(set(values) - set(categorical[column]))
        raise ValueError(f"column {column!r} has the values {unknown[:5]}, which are not among its "
                         f"documented levels {list(categorical[column])}. Is this the original "
                         "file?")
      blocks.append(np.eye(len(levels))[codes])
      names.extend(f"{column}={level}" for level in levels)
    else:
      raise ValueError(f"unexpected column {column!r}; known columns: "
                       f"{sorted(set(numeric) | set(categorical))}. Is this the original file?")
  return np.concatenate(blocks, axis=1), tuple(names)
