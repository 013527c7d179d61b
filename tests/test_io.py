"""Model files: bit-identical round trips, PRNG-configuration independence, clear refusals."""

import hashlib
import json
import os
import pickle
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import qsg_jax
from qsg_jax import estimators
from qsg_jax import io
from qsg_jax.errors import ChecksumError
from tests import _cv_data

_SMALL = dict(num_steps=64, num_frequencies=8, unlabeled_batch_size=16)


def _data(n=240, seed=0):
  rng = np.random.default_rng(seed)
  x = rng.random((n, 3))
  y = (x[:, 0] + 0.3 * np.sin(5 * x[:, 1]) > 0.6).astype(int)
  return x.astype(np.float32), y


# A schedule callable (not picklable as a lambda) must not stop the model from being saved.
# Both fixtures train with this one function object (a static argument of the compiled
# training program), on the same shapes, so they share one compilation.
_SCHEDULE = lambda step: 0.5 / (1.0 + 0.01 * step)


@pytest.fixture(scope="module")
def result():
  x, y = _data()
  return qsg_jax.fit(x[:60], y[:60], x[60:], key=3, step_size=_SCHEDULE, **_SMALL)


@pytest.fixture(scope="module")
def estimator():
  x, y = _data()
  y_semi = np.where(np.arange(y.size) < 60, y, -1)
  # lam fixed: a schedule needs eta lam < 1 (the data-driven lam may be up to 8). The other
  # hyper-parameters fixed too: the round trip, not the automatic choice, is tested here.
  return estimators.QSGS2AUC(learning_rate=_SCHEDULE, lam=1e-3, length_scale=0.5,
                             labeled_weight=0.5, random_state=1, unlabeled_label=-1,
                             **_SMALL).fit(x * 100, y_semi)


def test_fit_result_round_trip_is_bit_identical(result, tmp_path):
  x, _ = _data(seed=1)
  io.save(result, tmp_path / "model.npz")
  loaded = io.load(tmp_path / "model.npz")
  assert isinstance(loaded, io.FrozenModel)
  expected = qsg_jax.decision_function(result, x)
  np.testing.assert_array_equal(loaded.decision_function(x), expected)
  np.testing.assert_array_equal(loaded.predict(x), qsg_jax.predict(result, x))


def test_direct_fit_result_round_trip_gives_equal_scores(tmp_path):
  x, y = _data()
  result = qsg_jax.fit(x[:60], y[:60], x[60:], key=3, solver="direct", num_landmarks=50)
  path = tmp_path / "direct.npz"
  io.save(result, path)
  loaded = io.load(path)
  assert isinstance(loaded, io.FrozenNystrom) and io.input_dim(loaded) == 3
  x_new, _ = _data(seed=1)
  np.testing.assert_array_equal(loaded.decision_function(x_new),
                                qsg_jax.decision_function(result, x_new))
  np.testing.assert_array_equal(loaded.predict(x_new), qsg_jax.predict(result, x_new))
  assert pickle.loads(pickle.dumps(loaded)).landmarks.shape == (50, 3)
  with np.load(path) as contents:
    meta = json.loads(str(contents["metadata"]))
  assert meta["model_kind"] == "nystrom" and meta["format_version"] == io.FORMAT_VERSION == 3
  _rewrite(path, lambda arrays, meta: meta.update(model_kind="fourier"))
  with pytest.raises(ChecksumError, match="metadata"):
    io.load(path)
  corrected = qsg_jax.fit(x[:60], y[:60], x[60:], solver="direct", num_landmarks=50,
                          split_lam=1.0)   # the shapes above: the same compiled programs
  with pytest.raises(ValueError, match="per-split corrections g_j of a fit with split_lam"):
    io.save(corrected, path)


def test_files_written_before_the_direct_solver_keep_loading(result, tmp_path):
  """Format 2 (and 1) files carry no model_kind: they hold Fourier models."""
  x, _ = _data(seed=1)
  path = tmp_path / "model.npz"
  io.save(result, path)
  with np.load(path) as contents:
    meta = json.loads(str(contents["metadata"]))
  assert meta["model_kind"] == "fourier" and meta["format_version"] == 2

  def as_version(version):
    def change(arrays, meta):
      del meta["model_kind"], meta["metadata_sha256"]
      meta["format_version"] = version
      if version >= 2:
        meta["metadata_sha256"] = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()
                                                 ).hexdigest()
    return change

  for version in (1, 2):
    io.save(result, path)
    _rewrite(path, as_version(version))
    np.testing.assert_array_equal(io.load(path).decision_function(x),
                                  qsg_jax.decision_function(result, x))


def test_estimator_round_trip_pickle_and_file(estimator, tmp_path):
  x, _ = _data(seed=2)
  x = x * 100
  expected = estimator.decision_function(x)
  io.save(estimator, tmp_path / "est.npz")
  with pytest.warns(UserWarning, match=r"parameters \['learning_rate'\] could not be stored"):
    loaded = io.load(tmp_path / "est.npz")
  assert type(loaded) is estimators.QSGS2AUC and loaded.learning_rate == "auto"  # schedule: default
  np.testing.assert_array_equal(loaded.decision_function(x), expected)
  np.testing.assert_array_equal(loaded.predict(x), estimator.predict(x))
  assert loaded.get_params()["random_state"] == 1
  unpickled = pickle.loads(pickle.dumps(estimator.set_params(learning_rate=0.5)))
  np.testing.assert_array_equal(unpickled.decision_function(x), expected)


def test_predictions_do_not_depend_on_the_prng_configuration(result, estimator, tmp_path):
  """Frequencies are stored, so flipping jax_threefry_partitionable changes nothing after fit."""
  x, _ = _data(seed=3)
  io.save(result, tmp_path / "model.npz")
  pickled = pickle.dumps(estimator)
  expected, expected_est = qsg_jax.decision_function(result, x), estimator.decision_function(x)
  before = jax.config.jax_threefry_partitionable
  try:
    jax.config.update("jax_threefry_partitionable", not before)
    regenerated = qsg_jax.decision_function(result, x)   # the key path does change
    np.testing.assert_array_equal(io.load(tmp_path / "model.npz").decision_function(x), expected)
    np.testing.assert_array_equal(pickle.loads(pickled).decision_function(x), expected_est)
  finally:
    jax.config.update("jax_threefry_partitionable", before)
  assert not np.array_equal(regenerated, expected)


def _rewrite(path, change):
  with np.load(path) as contents:
    arrays = {name: contents[name] for name in contents.files}
  meta = json.loads(str(arrays["metadata"]))
  change(arrays, meta)
  arrays["metadata"] = np.asarray(json.dumps(meta))
  with open(path, "wb") as file:
    np.savez(file, **arrays)


def test_truncated_corrupted_and_future_files_are_refused(result, tmp_path):
  path = tmp_path / "model.npz"
  io.save(result, path)
  data = path.read_bytes()
  (tmp_path / "truncated.npz").write_bytes(data[:len(data) // 2])
  with pytest.raises(ChecksumError, match="truncated or corrupted"):
    io.load(tmp_path / "truncated.npz")
  (tmp_path / "empty.npz").write_bytes(b"")
  with pytest.raises(ChecksumError, match="truncated or corrupted"):
    io.load(tmp_path / "empty.npz")

  def flip(arrays, meta):
    arrays["coef"] = arrays["coef"].copy()
    arrays["coef"][0, 0] += 1.0
  _rewrite(path, flip)
  with pytest.raises(ChecksumError, match="'coef' is missing or differs from the sha256"):
    io.load(path)

  io.save(result, path)
  _rewrite(path, lambda arrays, meta: meta.update(format_version=io.FORMAT_VERSION + 1))
  with pytest.raises(ValueError, match=r"reads versions 1\.\.\d .* Upgrade qsg_jax"):
    io.load(path)
  np.savez(tmp_path / "other.npz", a=np.zeros(3))
  with pytest.raises(ChecksumError, match="no readable metadata"):
    io.load(tmp_path / "other.npz")
  with pytest.raises(FileNotFoundError):
    io.load(tmp_path / "missing.npz")


def test_save_refuses_what_it_cannot_store(tmp_path):
  with pytest.raises(TypeError, match="save takes a FitResult, a FrozenModel, a FrozenNystrom or"):
    io.save({"coef": 1}, tmp_path / "x.npz")
  with pytest.raises(Exception, match="not fitted"):
    io.save(estimators.QS3ORAO(), tmp_path / "x.npz")
  model = io.FrozenModel(np.zeros((2, 4, 3), np.float32), np.zeros((2, 8), np.float32),
                         np.float32(1.0), np.zeros(1, np.float32), 1, 64)
  (tmp_path / "sub").mkdir()
  with pytest.raises(IsADirectoryError, match=r"it is a directory; pass a file name"):
    io.save(model, tmp_path / "sub")
  with pytest.raises(IsADirectoryError, match=r"it is a directory"):
    io.save(model, str(tmp_path / "other") + "/")
  with pytest.raises(ValueError, match=r"path is empty; pass a file name"):
    io.save(model, "")                  # was a FileNotFoundError naming the temporary file
  with pytest.raises(TypeError, match=r"path must be a file name \(str, bytes or os.PathLike\); "
                     r"received int 3"):
    io.save(model, 3)
  (tmp_path / "sub").rmdir()
  assert not list(tmp_path.iterdir())   # nothing half-written left behind
  io.save(model, os.fsencode(tmp_path / "b.npz"))   # bytes, as load takes them
  np.testing.assert_array_equal(io.load(os.fsencode(tmp_path / "b.npz")).coef, model.coef)


def test_sgemm_default_model_file_size(tmp_path):
  """T = 1024 blocks of m = 32 frequencies in d = 14 (sgemm): about 2 MiB."""
  t, m, d = 1024, 32, 14
  model = io.FrozenModel(np.zeros((t, m, d), np.float32), np.zeros((t, 2 * m), np.float32),
                         np.float32(1.0), np.zeros(3, np.float32), 8, 4096)
  io.save(model, tmp_path / "sgemm.npz")
  size = (tmp_path / "sgemm.npz").stat().st_size
  assert 2.0e6 < size < 2.2e6, size


def test_model_files_record_the_version_and_refuse_edited_metadata(result, estimator, tmp_path):
  path = tmp_path / "model.npz"
  io.save(result, path)
  with np.load(path) as contents:
    meta = json.loads(str(contents["metadata"]))
  assert meta["written_by"]["qsg_jax"] == qsg_jax.__version__ != "unknown"
  for change in (dict(block_group=2), dict(kind="QS3ORAO"), dict(predict_chunk=1)):
    io.save(result, path)
    _rewrite(path, lambda arrays, meta: meta.update(change))
    with pytest.raises(ChecksumError, match=r"metadata \(kind, block_group, .*edited or corrupted"):
      io.load(path)
  io.save(estimator, path)
  _rewrite(path, lambda arrays, meta: meta.update(kind="FrozenModel"))
  with pytest.raises(ChecksumError, match="metadata"):
    io.load(path)


def test_load_names_what_it_was_given_instead_of_a_model_file(result, tmp_path):
  with pytest.raises(IsADirectoryError, match="is a directory; pass the model file"):
    io.load(tmp_path)
  (tmp_path / "model.json").write_text(json.dumps({"coef": [1, 2]}))
  with pytest.raises(ValueError, match=r"not a qsg_jax model file \(it looks like JSON or text\)"):
    io.load(tmp_path / "model.json")
  io.save(result, tmp_path / "model.npz")
  loaded = io.load(tmp_path / "model.npz")   # a FrozenModel: it scores itself
  with pytest.raises(TypeError, match=r"received a FrozenModel, which scores itself: "
                     r"model.decision_function\(x\)"):
    qsg_jax.decision_function(loaded, np.zeros((2, result.num_features), np.float32))
  _rewrite(tmp_path / "model.npz", lambda arrays, meta: meta.update(format_version="2"))
  with pytest.raises(ValueError, match="has model format version '2'; this qsg_jax"):
    io.load(tmp_path / "model.npz")


def test_model_files_keep_numpy_typed_parameters_and_name_a_missing_folder(tmp_path):
  x, _, y_semi = _cv_data.semi_ordinal()
  model = estimators.QS3ORAO(unlabeled_label=-1, length_scale=np.float32(1.5),
                             labeled_weight=np.array([0.3, 0.6]), random_state=np.int64(7),
                             lam=jnp.float32(1e-3), learning_rate=1.0, **_SMALL).fit(x, y_semi)
  io.save(model, tmp_path / "m.npz")
  loaded = io.load(tmp_path / "m.npz")
  params = loaded.get_params()
  assert params["labeled_weight"] == [0.3, 0.6] and params["random_state"] == 7
  assert params["length_scale"] == pytest.approx(1.5) and params["lam"] == pytest.approx(1e-3)
  refit = lambda: estimators.QS3ORAO(**params).fit(x, y_semi).decision_function(x)
  np.testing.assert_array_equal(refit(), refit())
  with pytest.raises(FileNotFoundError, match=r"its folder .*nowhere' does not exist"):
    io.save(model, tmp_path / "nowhere" / "m.npz")


def _older(arrays, meta):
  """A model file as written before training_metrics_ and the classes' dtype were stored."""
  for name in [name for name in arrays if name.startswith("training_metrics")]:
    del arrays[name], meta["sha256"][name]
  for key in ("training_metrics", "classes_dtype", "metadata_sha256"):
    meta.pop(key, None)
  meta["metadata_sha256"] = hashlib.sha256(json.dumps(meta, sort_keys=True).encode()).hexdigest()


def test_estimator_files_keep_training_metrics_and_text_classes(estimator, tmp_path):
  """Sweep Z4: the documented training_metrics_ was missing after load (AttributeError), and
  text classes of a pandas y (objects) came back as '<U4', so predict's dtype changed. Both
  as fitted, for either solver; files written before them still load (metrics empty)."""
  pd = pytest.importorskip("pandas")
  x, y, _ = _cv_data.semi_ordinal()
  names = np.array(["low", "mid", "high"])
  labels = pd.Series(pd.Categorical(names[y], categories=list(names), ordered=True))
  direct = estimators.QS3ORAO(length_scale=1.0, lam=1e-3, labeled_weight=0.5,
                              random_state=0).fit(x, labels)
  assert direct.classes_.dtype == object and direct.solver_ == "direct"
  path = tmp_path / "model.npz"
  for model, points in ((estimator, _data(seed=2)[0] * 100), (direct, x)):
    for older in (False, True):
      io.save(model, path)
      if older:
        _rewrite(path, _older)
      with warnings.catch_warnings():   # the fixture's schedule: not stored (said on load)
        warnings.filterwarnings("ignore", r"parameters \['learning_rate'\]", UserWarning)
        loaded = io.load(path)
      metrics = {} if older else model.training_metrics_
      assert loaded.training_metrics_.keys() == metrics.keys()
      for name, value in metrics.items():
        restored = loaded.training_metrics_[name]
        assert type(restored) is type(value) and np.asarray(restored).dtype == np.asarray(
            value).dtype, name
        np.testing.assert_array_equal(restored, value)
      np.testing.assert_array_equal(loaded.classes_, model.classes_)
      assert loaded.classes_.dtype == (model.classes_.dtype if not older else
                                       np.asarray(model.classes_.tolist()).dtype)
      predicted = loaded.predict(points)
      np.testing.assert_array_equal(predicted, model.predict(points))
      assert older or predicted.dtype == model.predict(points).dtype
