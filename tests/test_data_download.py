"""Tests of downloading into the user cache against a local HTTP server on 127.0.0.1, of the
errors when a file cannot be had, and of unknown dataset names. Nothing here touches the internet.
"""

import bz2
import hashlib
import http.server
import io
import lzma
import socket
import threading
import zipfile

import numpy as np
import pytest

from qsg_jax import data
from qsg_jax.data import catalog
from qsg_jax.data import download
from qsg_jax.data import files
from qsg_jax.data import registry

ACCEL = catalog.ACCELEROMETER_FILE


@pytest.fixture(autouse=True)
def _isolated_environment(tmp_path, monkeypatch):
  monkeypatch.setenv("QSG_JAX_CACHE", str(tmp_path / "cache"))
  monkeypatch.setenv("QSG_JAX_DOWNLOAD", "0")
  monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
  for name in ("QSG_JAX_DATA", "QSG_JAX_URL_UCI", "QSG_JAX_URL_LIBSVM", "QSG_JAX_URL_CODALAB"):
    monkeypatch.delenv(name, raising=False)


class _Server:
  """A loopback HTTP server in a thread serving ``routes`` {path: bytes}; logs every request."""

  def __init__(self):
    self.routes = {}
    self.lengths = {}   # {path: Content-Length to announce} (a transfer cut short)
    self.requests = []
    outer = self

    class Handler(http.server.BaseHTTPRequestHandler):

      def do_GET(self):  # pylint: disable=invalid-name
        outer.requests.append(self.path)
        body = outer.routes.get(self.path)
        if body is None:
          self.send_error(404)
          return
        self.send_response(200)
        self.send_header("Content-Length", str(outer.lengths.get(self.path, len(body))))
        self.end_headers()
        self.wfile.write(body)

      def log_message(self, *args):
        pass

    self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/"
    self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.05,), daemon=True)
    self._thread.start()

  def close(self):
    self._httpd.shutdown()
    self._httpd.server_close()
    self._thread.join()


@pytest.fixture
def server():
  s = _Server()
  yield s
  s.close()


def _zip(members):
  buffer = io.BytesIO()
  with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as z:
    for name, content in members.items():
      z.writestr(name, content)
  return buffer.getvalue()


@pytest.fixture
def accelerometer_csv(shared_data_dir):
  with lzma.open(shared_data_dir / ACCEL.subdir / (ACCEL.name + ".xz")) as f:
    return f.read()


def _all_files(folder):
  return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_zip_download_end_to_end(server, accelerometer_csv, tmp_path, shared_data_dir):
  (tmp_path / "empty").mkdir()   # an existing, empty data_dir
  server.routes["/" + ACCEL.path] = _zip({ACCEL.name: accelerometer_csv, "readme.txt": b"x"})
  ds = data.load("accelerometer", data_dir=tmp_path / "empty", download=True,
                 urls={"uci": server.url})
  reference = data.load("accelerometer", data_dir=shared_data_dir, cache=False)
  np.testing.assert_array_equal(ds.x, reference.x)
  np.testing.assert_array_equal(ds.y, reference.y)
  cache = files.user_cache_dir()
  installed = cache / ACCEL.subdir / ACCEL.name
  assert installed.read_bytes() == accelerometer_csv
  assert not [p for p in _all_files(cache) if p.endswith(".part")]  # No temporary file left.
  assert files.verified_sha256(installed) == ACCEL.sha256
  # Found in the cache from now on: no second request, even with downloads off.
  data.load("accelerometer", data_dir=tmp_path / "empty", download=False, cache=False)
  assert server.requests == ["/" + ACCEL.path]


def test_corrupt_download_is_rejected_and_leaves_no_file(server, accelerometer_csv, tmp_path,
                                                         monkeypatch):
  (tmp_path / "empty").mkdir()   # an existing, empty data_dir
  corrupt = accelerometer_csv.replace(b"-0.496517", b"-0.496518", 1)
  server.routes["/" + ACCEL.path] = _zip({ACCEL.name: corrupt})
  monkeypatch.setenv("QSG_JAX_URL_UCI", server.url)  # The environment override.
  with pytest.raises(data.ChecksumError, match=r"the download of accelerometer_gyro_mobile_phone"
                     r"_dataset\.csv from http://127\.0\.0\.1:\d+/static/public/755/.* has sha256 "
                     r"[0-9a-f]{64}, expected 058717dc.*it was rejected and nothing was written"):
    data.load("accelerometer", data_dir=tmp_path / "empty", download=True)
  assert server.requests == ["/" + ACCEL.path]
  assert _all_files(files.user_cache_dir()) == []
  with pytest.raises(data.DataNotFoundError):
    data.load("accelerometer", data_dir=tmp_path / "empty", download=False)


def test_plain_download_skips_the_optional_test_file(server, shared_data_dir, tmp_path):
  (tmp_path / "empty").mkdir()   # an existing, empty data_dir
  with lzma.open(shared_data_dir / "cod_rna" / "cod-rna.xz") as f:
    server.routes["/binary/cod-rna"] = f.read()
  ds = data.load("cod_rna", data_dir=tmp_path / "empty", download=True,
                 urls={"libsvm": server.url})
  assert ds.x.shape == (59_535, 8) and ds.x_test is None
  assert server.requests == ["/binary/cod-rna"]  # cod-rna.t (optional) was not requested.


def test_bz2_container_and_atomic_install(server, tmp_path):
  content = b"+1 1:0.5\n-1 2:1.5\n"
  spec = files.FileSpec("tiny", "tiny", hashlib.sha256(content).hexdigest(), "libsvm",
                        "binary/tiny.bz2", container="bz2")
  server.routes["/binary/tiny.bz2"] = bz2.compress(content)
  paths = download.fetch([spec], dest_root=tmp_path / "dest", urls={"libsvm": server.url})
  assert paths[spec] == tmp_path / "dest" / "tiny" / "tiny"
  assert paths[spec].read_bytes() == content
  assert _all_files(tmp_path / "dest") == ["tiny/tiny"]
  # A truncated bz2 stream fails before anything is installed.
  server.routes["/binary/tiny.bz2"] = bz2.compress(content)[:-10]
  paths[spec].unlink()
  with pytest.raises(download.DownloadError, match=r"the download of tiny from http://127\.0\.0\.1"
                     r":\d+/binary/tiny\.bz2 failed or is truncated \(EOFError"):
    download.fetch([spec], dest_root=tmp_path / "dest", urls={"libsvm": server.url})
  assert _all_files(tmp_path / "dest") == []


def test_a_transfer_cut_short_installs_nothing(server, tmp_path):
  content = b"1,2,3,4\n" * 1000
  spec = files.FileSpec("cut.csv", "cut", hashlib.sha256(content).hexdigest(), "uci", "cut.csv")
  server.routes["/cut.csv"] = content
  server.lengths["/cut.csv"] = len(content) + 100          # the connection closes early
  with pytest.raises(OSError, match="IncompleteRead|Connection broken|ChunkedEncoding"):
    download.fetch([spec], dest_root=tmp_path / "dest", urls={"uci": server.url})
  assert _all_files(tmp_path / "dest") == []               # no partial file, no scratch folder


def test_one_zip_download_serves_two_members(server, tmp_path):
  train, test = b"1,2\n", b"3,4\n"
  specs = [files.FileSpec(name, "pair", hashlib.sha256(body).hexdigest(), "uci", "p/pair.zip",
                          container="zip") for name, body in (("a.csv", train), ("b.csv", test))]
  server.routes["/p/pair.zip"] = _zip({"pair/a.csv": train, "pair/b.csv": test})
  paths = download.fetch(specs, dest_root=tmp_path, urls={"uci": server.url})
  assert [paths[s].read_bytes() for s in specs] == [train, test]
  assert server.requests == ["/p/pair.zip"]


def _closed_port_url():
  with socket.socket() as s:
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
  return f"http://127.0.0.1:{port}/"


def test_offline_error_names_file_places_and_source(tmp_path):
  (tmp_path / "mine").mkdir()   # an existing, empty data_dir
  url = _closed_port_url()
  with pytest.raises(data.DataNotFoundError) as info:
    data.load("dota2", data_dir=tmp_path / "mine", download=True, urls={"uci": url})
  message = str(info.value)
  assert "dota2Train.csv, dota2Test.csv" in message
  for place in (tmp_path / "mine" / "dota2" / "dota2Train.csv.xz",
                tmp_path / "mine" / "dota2Test.csv",
                files.user_cache_dir() / "dota2" / "dota2Train.csv"):
    assert str(place) in message
  assert f"{url}ml/machine-learning-databases/00367/dota2Dataset.zip (zip member " in message
  assert "Downloading failed: ConnectionError" in message and "QSG_JAX_DATA" in message


def test_download_off_error_names_the_public_source(tmp_path):
  with pytest.raises(data.DataNotFoundError, match=r"(?s)Searched for "
                     r"accelerometer_gyro_mobile_phone_dataset\.csv.*Public source: https://"
                     r"archive\.ics\.uci\.edu/static/public/755/accelerometer\+gyro\+mobile\+phone"
                     r"\+dataset\.zip \(zip member .*Automatic download is off"):
    data.load("accelerometer", data_dir=tmp_path)  # QSG_JAX_DOWNLOAD=0 (fixture).


def test_http_error_is_reported_as_not_found(server, tmp_path):
  with pytest.raises(data.DataNotFoundError, match=r"Downloading failed: HTTPError: 404 Client "
                     r"Error: Not Found for url: http://127\.0\.0\.1:\d+/ml/"):
    data.load("skin", data_dir=tmp_path, download=True, urls={"uci": server.url})
  assert _all_files(files.user_cache_dir()) == []


def test_download_switch(monkeypatch):
  monkeypatch.setenv("QSG_JAX_DOWNLOAD", "0")
  assert not download.download_enabled() and download.download_enabled(True)
  monkeypatch.setenv("QSG_JAX_DOWNLOAD", "1")
  assert download.download_enabled() and not download.download_enabled(False)
  monkeypatch.delenv("QSG_JAX_DOWNLOAD")
  assert download.download_enabled()
  with pytest.raises(ValueError, match="unknown download source 'ftp'"):
    download.base_url("ftp")


def test_unknown_dataset_lists_available_and_close_matches():
  with pytest.raises(ValueError, match=r"unknown dataset 'sgem'\. Did you mean 'sgemm'\? "
                     r"Available datasets: sgemm, skin, cod_rna, .*synthetic_binary\."):
    data.load("sgem")
  with pytest.raises(ValueError, match=r"unknown dataset 'mnist'\. Available datasets: sgemm"):
    data.load("mnist")


def test_registry_names_and_aliases():
  names = data.available()
  for name in ("sgemm", "skin", "cod_rna", "ijcnn1", "dota2", "bank_marketing", "accelerometer",
               "covtype", "road3d", "yolanda", "year", "era", "esl", "lev", "swd",
               "breast_cancer", "synthetic_ordinal", "synthetic_binary"):
    assert name in names
  assert data.available("embedded") == ("era", "esl", "lev", "swd", "breast_cancer")
  assert registry.get_entry("cod-rna").name == "cod_rna"
  assert registry.get_entry("Skin_NonSkin").name == "skin"
  assert "b545b908c203eaa4d0b78c88e3a7196857efc34da3b6da9be774f017f2b5e960" in data.describe(
      "sgemm")
  assert "none published (unverified)" in data.describe("year")
