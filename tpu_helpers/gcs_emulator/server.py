"""`LocalGCS`: fake-gcs-server behind a loopback TLS proxy, so TensorFlow's own ``gs://`` reaches it (docs/history.md)."""
import atexit
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from tpu_helpers._compat import fake_gcs_server_binary
from tpu_helpers.core.tempdirs import course_temp_dir

from .certs import make_certificates, public_ca_bundle
from .proxy import DIRECT_HOSTS, EMULATED_HOSTS

TEST_TOKEN = "tpu-course-local-gcs"  # the bearer token TensorFlow sends (GOOGLE_AUTH_TOKEN_FOR_TESTING)
_ENV_KEYS = ("https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
             "GOOGLE_AUTH_TOKEN_FOR_TESTING", "NO_GCE_CHECK", "TPU_COURSE_LOCAL_GCS")
_PROJECT, _STARTUP_S = "tpu-course-local", 30.0
_ACTIVE: "LocalGCS | None" = None
_LOCK = threading.RLock()


def active() -> "LocalGCS | None":
    """The emulator serving this process, if one is running."""
    return _ACTIVE if _ACTIVE is not None and _ACTIVE.running else None


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: the kernel sends the child SIGTERM when this process dies (a killed kernel, a failed test run)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _open_no_proxy(url: str, method: str = "GET", data: bytes | None = None, timeout: float = 5.0) -> tuple[int, bytes]:
    """A request to fake-gcs-server on loopback, ignoring every *_proxy variable: (status, body)."""
    headers = {"Content-Type": "application/json"} if data else {}
    req = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.build_opener(urllib.request.ProxyHandler({})).open(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class LocalGCS:
    """fake-gcs-server (objects in memory) + a loopback TLS proxy for TensorFlow's ``gs://``; one per process."""

    def __init__(self) -> None:
        self._state: Path | None = None
        self._server: subprocess.Popen | None = None
        self._proxy: subprocess.Popen | None = None
        self.http_port: int | None = None  # fake-gcs-server's, on 127.0.0.1
        self.proxy_port: int | None = None
        self.ca_cert = self.ca_bundle = None  # our CA; ours + the bundle in force before (CURL_CA_BUNDLE)
        self._saved_env: dict[str, str | None] = {}
        self._read_only: set[str] = set()

    @property
    def running(self) -> bool:
        return all(p is not None and p.poll() is None for p in (self._server, self._proxy))

    def start(self) -> "LocalGCS":
        """Start the emulator, or return the one this process already runs (a re-run cell)."""
        global _ACTIVE
        with _LOCK:
            current = active()
            if current is not None:
                current._export_env()  # re-assert the variables in case something cleared them
                return current
            if _ACTIVE is not None:  # a previous emulator died (e.g. killed): clean it up first
                _ACTIVE.stop()
            self._launch()
            _ACTIVE = self
            return self

    def _launch(self) -> None:
        self._state = Path(course_temp_dir("gcs", remove_at_exit=False))  # stop() removes it, at exit too
        try:
            self.ca_cert, cert, key = make_certificates(self._state, EMULATED_HOSTS)
            self.ca_bundle = self._state / "ca-bundle.pem"
            self.ca_bundle.write_text(self.ca_cert.read_text() + "\n"
                                      + public_ca_bundle(os.environ.get("CURL_CA_BUNDLE")))
            self._write_policy()
            self._start_server()
            self._start_proxy(cert, key)  # it prints its port once it listens with our certificate
        except BaseException:
            self._kill()
            raise
        self._export_env()
        atexit.register(self.stop)

    def _popen(self, cmd: list[str], log: Any, **kwargs: Any) -> subprocess.Popen:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stderr=log,
                                preexec_fn=_die_with_parent if sys.platform == "linux" else None, **kwargs)

    def _start_server(self) -> None:
        log_path = self._state / "fake-gcs-server.log"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        url = f"http://127.0.0.1:{port}"
        with open(log_path, "ab") as log:
            # the memory backend keeps the "folder/" marker objects that tf.io.gfile.makedirs writes
            self._server = self._popen([fake_gcs_server_binary(), "-scheme", "http", "-host", "127.0.0.1", "-port",
                                        str(port), "-backend", "memory", "-external-url", url, "-public-host",
                                        "storage.googleapis.com", "-log-level", "warn"], log, stdout=log)
        deadline = time.monotonic() + _STARTUP_S
        while time.monotonic() < deadline and self._server.poll() is None:
            try:
                if _open_no_proxy(f"{url}/storage/v1/b", timeout=1.0)[0] == 200:
                    self.http_port = port
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("fake-gcs-server did not start on 127.0.0.1. Its log:\n"
                           + log_path.read_text(errors="replace")[-2000:])

    def _start_proxy(self, cert: Path, key: Path) -> None:
        config = {"cert": str(cert), "key": str(key), "upstream_port": self.http_port,
                  "policy": str(self._state / "policy.json")}
        (self._state / "proxy.json").write_text(json.dumps(config))
        with open(self._state / "proxy.log", "ab") as log:
            # -I: isolated mode, so the script's folder cannot shadow a standard-library module
            self._proxy = self._popen([sys.executable, "-I", "-u", str(Path(__file__).with_name("proxy.py")),
                                       str(self._state / "proxy.json")], log, stdout=subprocess.PIPE)
        line = self._proxy.stdout.readline().decode().strip()  # the child prints its port once it listens
        if not line.isdigit():
            self._proxy.wait(timeout=5)
            raise RuntimeError("the emulator's TLS proxy did not start. Its log:\n"
                               + (self._state / "proxy.log").read_text(errors="replace")[-2000:])
        self.proxy_port = int(line)

    def stop(self) -> None:
        """Stop both processes, restore the environment, delete temporary data. Safe to call twice."""
        global _ACTIVE
        with _LOCK:
            self._restore_env()
            self._kill()
            if _ACTIVE is self:
                _ACTIVE = None

    def _kill(self) -> None:
        for proc in (self._proxy, self._server):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
            if proc is not None and proc.stdout:
                proc.stdout.close()
        self._server = self._proxy = None
        if self._state is not None:
            shutil.rmtree(self._state, ignore_errors=True)
            self._state = None

    @property
    def env(self) -> dict[str, str]:
        """The variables that point TensorFlow's ``gs://`` (and the ``curl`` command) at this emulator."""
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        # keep the caller's NO_PROXY entries, except any that would send Google's hosts around the proxy
        existing = (os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or "").split(",")
        keep = [h.strip() for h in existing if h.strip() and "google" not in h and h.strip() != "*"]
        no_proxy = ",".join(dict.fromkeys(["127.0.0.1", "localhost", "::1", *DIRECT_HOSTS, *keep]))
        import certifi

        saved = self._saved_env or {k: os.environ.get(k) for k in _ENV_KEYS}
        # requests' own order: REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, certifi (never our CA)
        requests_bundle = saved.get("REQUESTS_CA_BUNDLE") or saved.get("CURL_CA_BUNDLE") or certifi.where()
        return {
            "https_proxy": proxy, "HTTPS_PROXY": proxy, "no_proxy": no_proxy, "NO_PROXY": no_proxy,
            "CURL_CA_BUNDLE": str(self.ca_bundle), "REQUESTS_CA_BUNDLE": requests_bundle,
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": TEST_TOKEN, "NO_GCE_CHECK": "true", "TPU_COURSE_LOCAL_GCS": proxy,
        }

    def _export_env(self) -> None:
        values = self.env
        self._saved_env = self._saved_env or {k: os.environ.get(k) for k in _ENV_KEYS}
        os.environ.update(values)

    def _restore_env(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}

    def _api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if not self.running:
            raise RuntimeError("the local GCS emulator is not running: call start() first")
        status, raw = _open_no_proxy(f"http://127.0.0.1:{self.http_port}{path}", method,
                                     json.dumps(body).encode() if body is not None else None)
        return status, raw.decode(errors="replace")

    def create_bucket(self, name: str, *, read_only: bool = False) -> str:
        """Create bucket `name` if it is missing; return ``"gs://name"``. ``read_only=True``: writes get GCS's ``403``."""
        name = name.removeprefix("gs://").strip("/")
        if self._api("GET", f"/storage/v1/b/{name}")[0] == 404:
            status, body = self._api("POST", f"/storage/v1/b?project={_PROJECT}", {"name": name})
            if status not in (200, 201):
                raise RuntimeError(f"creating bucket {name!r} failed: HTTP {status} {body}")
        (self._read_only.add if read_only else self._read_only.discard)(name)
        self._write_policy()
        return f"gs://{name}"

    def _write_policy(self) -> None:  # the proxy reads it at every write request
        tmp = self._state / "policy.json.tmp"
        tmp.write_text(json.dumps({"read_only": sorted(self._read_only)}))
        os.replace(tmp, self._state / "policy.json")
