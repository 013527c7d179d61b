"""Tests of reading the original files: shapes and label counts from MANIFEST.md, checksums,
the verification and parsed-array caches, and the parsers of the sets that are not bundled."""

import dataclasses
import gzip
import lzma
import os

import numpy as np
import pytest

from qsg_jax import data
from qsg_jax.data import catalog
from qsg_jax.data import files
from qsg_jax.data import formats
from qsg_jax.data import registry


ACCEL_SUBDIR = catalog.ACCELEROMETER_FILE.subdir


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path, monkeypatch):
  monkeypatch.setenv("QSG_JAX_CACHE", str(tmp_path / "cache"))
  monkeypatch.setenv("QSG_JAX_DOWNLOAD", "0")


# name, x shape, label counts (binary: [negatives, positives]), test shape, test label counts;
# all from ../shared/data/MANIFEST.md.
BUNDLED = [
    ("skin", (245_057, 3), [194_198, 50_859], None, None),
    ("cod_rna", (59_535, 8), [39_690, 19_845], None, None),
    ("ijcnn1", (49_990, 22), [45_137, 4_853], (91_701, 22), [82_989, 8_712]),
    ("bank_marketing", (41_188, None), [36_548, 4_640], None, None),
    ("accelerometer", (31_991, 6), [31_420, 571], None, None),
]


@pytest.mark.parametrize("name, shape, counts, test_shape, test_counts", BUNDLED)
def test_bundled_binary_sets_match_manifest(shared_data_dir, name, shape, counts, test_shape,
                                            test_counts):
  ds = data.load(name, data_dir=shared_data_dir)
  assert ds.name == name and ds.task == "binary" and ds.num_classes == 2
  assert ds.x.dtype == np.float64 and ds.x.shape[0] == shape[0]
  if shape[1] is not None:
    assert ds.x.shape[1] == shape[1]
  assert len(ds.feature_names) == ds.x.shape[1] and np.isfinite(ds.x).all()
  np.testing.assert_array_equal(np.bincount(ds.y), counts)
  if test_shape is None:
    assert ds.x_test is None and ds.y_test is None
  else:
    assert ds.x_test.shape == test_shape
    np.testing.assert_array_equal(np.bincount(ds.y_test), test_counts)


def test_bank_marketing_encoding(shared_data_dir):
  ds = data.load("bank_marketing", data_dir=shared_data_dir)
  names = ds.feature_names
  assert "duration" not in names and "y" not in names
  numeric = [n for n in names if "=" not in n]
  assert len(numeric) == 9  # The 10 numeric inputs but duration.
  assert {n.split("=")[0] for n in names if "=" in n} == set(catalog.BANK_CATEGORICAL)
  one_hot = ds.x[:, ["=" in n for n in names]]
  assert set(np.unique(one_hot)) == {0.0, 1.0}
  # Each of the 10 categorical columns contributes exactly one 1 per row.
  np.testing.assert_array_equal(one_hot.sum(axis=1), 10.0)
  assert ds.x[0, names.index("age")] == 56 and ds.x[0, names.index("job=housemaid")] == 1


def test_sgemm_parses_once_then_loads_from_the_parsed_cache(shared_data_dir, monkeypatch):
  ds = data.load("sgemm", data_dir=shared_data_dir)
  assert ds.task == "regression" and ds.x.shape == (241_600, 14) and ds.y.shape == (241_600,)
  assert ds.feature_names[:3] == ("MWG", "NWG", "KWG") and ds.num_classes is None
  # Target = mean of Run1..Run4; the manifest gives the runtime range 13.25..3397.08 ms.
  assert 13.25 <= ds.y.min() and ds.y.max() <= 3397.08
  np.testing.assert_allclose(ds.y[:2], [np.mean([115.26, 115.87, 118.55, 115.8]),
                                        np.mean([78.13, 78.25, 79.25, 79.19])])
  labels, _ = data.discretize_equal_frequency(ds.y, 5)
  assert np.all(np.abs(np.bincount(labels) - 241_600 / 5) < 50)

  def no_parsing(*args, **kwargs):
    raise AssertionError("the second load parsed the file again")

  monkeypatch.setattr(formats, "read_table", no_parsing)
  monkeypatch.setattr(files, "HashingReader", no_parsing)
  again = data.load("sgemm", data_dir=shared_data_dir)
  np.testing.assert_array_equal(again.x, ds.x)
  np.testing.assert_array_equal(again.y, ds.y)
  assert again.feature_names == ds.feature_names


@pytest.fixture
def accelerometer_copy(shared_data_dir, tmp_path):
  """Plain (decompressed) copy of the accelerometer csv in a flat data dir, and its bytes."""
  with lzma.open(shared_data_dir / "accelerometer_gyro" /
                 "accelerometer_gyro_mobile_phone_dataset.csv.xz") as f:
    content = f.read()
  folder = tmp_path / "data"
  folder.mkdir()
  path = folder / catalog.ACCELEROMETER_FILE.name
  path.write_bytes(content)
  return path, content


def test_verification_is_cached_by_path_size_and_mtime(accelerometer_copy, monkeypatch):
  path, _ = accelerometer_copy
  first = data.load("accelerometer", data_dir=path.parent, cache=False)
  assert files.verified_sha256(path) == catalog.ACCELEROMETER_FILE.sha256

  def no_hashing(*args, **kwargs):
    raise AssertionError("a verified file was hashed again")

  with monkeypatch.context() as patch:
    patch.setattr(files, "HashingReader", no_hashing)
    second = data.load("accelerometer", data_dir=path.parent, cache=False)
  np.testing.assert_array_equal(first.x, second.x)
  os.utime(path, ns=(1, 1))  # A changed mtime invalidates the record.
  assert files.verified_sha256(path) is None


@pytest.mark.parametrize("cut", ["line", "mid_line"])
def test_truncated_plain_copy_fails_the_checksum(accelerometer_copy, cut):
  path, content = accelerometer_copy
  end = content.rindex(b"\n", 0, len(content) // 2) + 1
  path.write_bytes(content[:end] if cut == "line" else content[:end + 7])
  with pytest.raises(data.ChecksumError) as info:
    data.load("accelerometer", data_dir=path.parent)
  message = str(info.value)
  assert str(path) in message and catalog.ACCELEROMETER_FILE.sha256 in message
  assert "sha256 mismatch" in message and "Delete it and copy it again" in message
  assert "static/public/755" in message  # Names the public source.
  assert not (files.user_cache_dir() / "parsed").exists()  # Nothing was cached.


def test_truncated_xz_copy_is_reported_as_corrupt(shared_data_dir, tmp_path):
  source = shared_data_dir / "cod_rna" / "cod-rna.xz"
  target = tmp_path / "cod_rna" / "cod-rna.xz"
  target.parent.mkdir()
  target.write_bytes(source.read_bytes()[:60_000])
  with pytest.raises(data.ChecksumError, match=r"cod-rna\.xz could not be decompressed to the "
                     r"end .* truncated or corrupt \(expected uncompressed sha256 65b7cc"):
    data.load("cod_rna", data_dir=tmp_path)


def test_altered_content_fails_the_checksum_even_if_it_parses(accelerometer_copy):
  path, content = accelerometer_copy
  path.write_bytes(content.replace(b"-0.496517", b"-0.496518", 1))
  with pytest.raises(data.ChecksumError, match="sha256 mismatch"):
    data.load("accelerometer", data_dir=path.parent)


def test_streamed_sha256_of_a_compressed_file_matches_the_manifest(shared_data_dir):
  path = shared_data_dir / ACCEL_SUBDIR / (catalog.ACCELEROMETER_FILE.name + ".xz")
  assert files.sha256_of_file(path) == catalog.ACCELEROMETER_FILE.sha256


def test_data_dir_takes_precedence_and_env_var_is_searched(accelerometer_copy, tmp_path,
                                                           monkeypatch, shared_data_dir):
  path, _ = accelerometer_copy
  monkeypatch.setenv("QSG_JAX_DATA", str(shared_data_dir))
  roots = files.search_roots(path.parent)
  assert roots[:2] == [path.parent, shared_data_dir]
  assert files.locate(catalog.ACCELEROMETER_FILE, path.parent) == path  # Flat layout, plain.
  assert files.locate(catalog.ACCELEROMETER_FILE, tmp_path / "empty") == (
      shared_data_dir / "accelerometer_gyro" / (catalog.ACCELEROMETER_FILE.name + ".xz"))


# --- Sets that are not bundled: the parsers on tiny fixtures in the original formats -----------


def _load_fixture(name, folder, contents):
  """Loads registry set ``name`` from fixture ``contents`` {file name: bytes} (checksums off)."""
  spec = registry._REAL_SPECS[name]
  unchecked = tuple(dataclasses.replace(f, sha256=None) for f in spec.files)
  for f in unchecked:
    if f.name in contents:
      (folder / f.subdir).mkdir(parents=True, exist_ok=True)
      (folder / f.subdir / f.name).write_bytes(contents[f.name])
  return registry.load_real(dataclasses.replace(spec, files=unchecked), data_dir=folder,
                            download=False)


def test_dota2_format(tmp_path):
  heroes = [0] * 113
  heroes[0], heroes[5] = 1, -1
  row = lambda label: ",".join(map(str, [label, 223, 2, 2] + heroes)).encode()
  ds = _load_fixture("dota2", tmp_path, {"dota2Train.csv": row(-1) + b"\n" + row(1) + b"\n",
                                         "dota2Test.csv": row(1) + b"\n"})
  assert ds.x.shape == (2, 116) and ds.x_test.shape == (1, 116) and len(ds.feature_names) == 116
  np.testing.assert_array_equal(ds.y, [0, 1])
  np.testing.assert_array_equal(ds.x[0, :5], [223, 2, 2, 1, 0])


def test_libsvm_format_with_missing_features_and_optional_test(tmp_path):
  content = b"2 1:0.5 54:1\n1 3:2.5\n"
  ds = _load_fixture("covtype", tmp_path, {"covtype.libsvm.binary": content})
  assert ds.x.shape == (2, 54) and ds.x_test is None
  np.testing.assert_array_equal(ds.y, [1, 0])  # Raw label 2 is positive.
  assert ds.x[0, 0] == 0.5 and ds.x[0, 53] == 1.0 and ds.x[1, 2] == 2.5 and ds.x[1].sum() == 2.5
  # cod-rna.t is optional: used when present, skipped (not downloaded) when absent.
  ds = _load_fixture("cod_rna", tmp_path, {"cod-rna": b"-1 1:1 8:2\n1 2:3\n"})
  assert ds.x.shape == (2, 8) and ds.x_test is None
  ds = _load_fixture("cod_rna", tmp_path, {"cod-rna.t": b"1 1:4\n"})
  assert ds.x_test.shape == (1, 8) and ds.y_test.tolist() == [1]
  with pytest.raises(ValueError, match=r"labels \[-1.0, 3.0\] are not within"):
    _load_fixture("cod_rna", tmp_path, {"cod-rna": b"-1 1:1\n3 1:2\n"})


def test_regression_formats(tmp_path):
  ds = _load_fixture("road3d", tmp_path, {"3D_spatial_network.txt": (
      b"144552912,9.3498486,56.7408757,17.0527715809003\n"
      b"144552912,9.3501884,56.7406785,17.614840964001\n")})
  assert ds.task == "regression" and ds.x.shape == (2, 3)
  np.testing.assert_allclose(ds.y, [17.0527715809003, 17.614840964001])
  ds = _load_fixture("yolanda", tmp_path, {
      "yolanda_train.data": b" ".join([b"1.5"] * 100) + b"\n" + b" ".join([b"2"] * 100) + b"\n",
      "yolanda_train.solution": b"10.5\n-3\n"})
  assert ds.x.shape == (2, 100) and ds.y.tolist() == [10.5, -3.0]
  # Three rows: all in the train part (the official split puts rows 463,716.. in the test part).
  year_rows = [",".join([str(1990 + i)] + [str(i)] * 90) for i in range(3)]
  ds = _load_fixture("year", tmp_path, {"YearPredictionMSD.txt": "\n".join(year_rows).encode()})
  assert ds.x.shape == (3, 90) and ds.y.tolist() == [1990.0, 1991.0, 1992.0]
  assert ds.x_test.shape == (0, 90)


def test_gzip_compressed_file_in_flat_layout(tmp_path):
  (tmp_path / "3D_spatial_network.txt.gz").write_bytes(gzip.compress(b"1,2,3,4\n5,6,7,8\n"))
  spec = registry._REAL_SPECS["road3d"]
  ds = registry.load_real(spec, data_dir=tmp_path, download=False)
  np.testing.assert_array_equal(ds.x, [[1, 2, 3], [5, 6, 7]])
  np.testing.assert_array_equal(ds.y, [4, 8])


def test_nan_in_features_is_rejected_at_load_time(tmp_path):
  with pytest.raises(ValueError, match=r"road3d x contains 1 NaN or infinite values in 1 rows "
                     r"\(first at row 1\)"):
    _load_fixture("road3d", tmp_path, {"3D_spatial_network.txt": b"1,2,3,4\n1,nan,3,4\n"})
  with pytest.raises(ValueError, match="has 3 columns, expected 4"):
    _load_fixture("road3d", tmp_path, {"3D_spatial_network.txt": b"1,2,3\n"})


def test_check_finite_and_make_dataset_errors():
  with pytest.raises(ValueError, match=r"x contains 2 NaN or infinite values in 1 rows"):
    data.check_finite("x", np.array([[1.0, 2.0], [np.inf, np.nan]]))
  with pytest.raises(ValueError, match="must be 0/1 for a binary task"):
    data.make_dataset("d", "binary", np.ones((2, 1)), [0, 2])
  with pytest.raises(ValueError, match="task must be one of"):
    data.make_dataset("d", "multiclass", np.ones((2, 1)), [0, 1])
  with pytest.raises(ValueError, match=r"x_test has shape \(1, 2\); expected \[n_test, 1\]"):
    data.make_dataset("d", "binary", np.ones((2, 1)), [0, 1], x_test=np.ones((1, 2)), y_test=[1])
