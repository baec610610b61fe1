"""``./course lab``: JupyterLab on 127.0.0.1 with a fresh token, checked, and the URL a learner opens as it is.

* **The token never leaves this process.** It is made here at every start and set on the server after every
  configuration file has been read, so it is neither on the command line (which every user of the machine sees in
  ``ps``) nor in the environment (which the kernels inherit). Jupyter keeps it only in its own runtime file
  (``jpserver-<pid>.json``, readable by its owner only), as for any Jupyter server.
* **No configuration can switch authentication off.** jupyter_server reads ``JUPYTER_TOKEN`` / ``JUPYTER_TOKEN_FILE``
  only as the *default* of ``IdentityProvider.token`` (``_token_default`` in ``jupyter_server/auth/identity.py``),
  so a user config with ``c.IdentityProvider.token = ''`` (or ``c.ServerApp.token = ''``, an empty password) wins
  over them; a value set on the running server after configuration wins over every file.
* **Checked before it is announced.** Once the server listens, this process asks its own ``/api/status``: without
  the token it must answer 403, with it 200; otherwise the server stops with a message. Only then are the URL (the
  port Jupyter actually bound: it tries others when the asked one is taken) and the SSH tunnel command printed.

``./course`` runs it with the environment's Python, ``--ip=127.0.0.1 --no-browser`` and the notebooks folder; the
other arguments go to Jupyter (``./course lab --port=8890``).
"""
from __future__ import annotations

import logging
import os
import secrets
import sys

LOOPBACK = ("127.0.0.1", "localhost")


def fresh_token() -> str:
    """A new random token (256 bits, URL-safe)."""
    return secrets.token_urlsafe(32)


def lab_url(connection_url: str, path: str, token: str) -> str:
    """The URL to open: the server's address, the lab page and the token."""
    from urllib.parse import urlencode

    return connection_url.rstrip("/") + "/" + path.lstrip("/") + "?" + urlencode({"token": token})


def tunnel_commands(port: int) -> tuple[str, str]:
    """The SSH port forwards a learner runs on their own machine to reach ``port`` here: a Cloud TPU VM's, any host's."""
    import getpass
    import socket

    forward = f"-N -L {port}:localhost:{port}"
    return (f"gcloud compute tpus tpu-vm ssh my-tpu --zone=us-central1-a -- {forward}",
            f"ssh {forward} {getpass.getuser()}@{socket.gethostname()}")


def announcement(url: str, port: int) -> str:
    """What ./course lab prints once the server has passed its token check."""
    tpu_vm, other = tunnel_commands(port)
    return (f"\ncourse: JupyterLab is ready. Open this URL in your browser (it holds this session's token):\n\n"
            f"    {url}\n\n"
            f"course: from your own machine, forward port {port} first (not needed on this machine itself, or if your\n"
            f"        ssh session already has -L {port}:localhost:{port}):\n"
            f"    a Cloud TPU VM (your TPU's name and zone): {tpu_vm}\n"
            f"    any other machine:                        {other}\n"
            f"course: Control-C twice stops the server and its kernels.\n")


class _QuietRefusal(logging.Filter):
    """Drops the server's own log lines about the check's refused request (a 403 the learner need not see)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        return not ("/api/status" in message or "Forbidden" in message)


async def check_and_announce(serverapp, token: str, failures: list[str], note: str = "") -> None:
    """Ask the running server's /api/status without and with the token; print the URL only if 403 then 200."""
    from tornado.httpclient import AsyncHTTPClient

    status = serverapp.connection_url.rstrip("/") + "/api/status"
    client = AsyncHTTPClient()
    quiet = _QuietRefusal()
    serverapp.log.addFilter(quiet)
    try:
        without = (await client.fetch(status, raise_error=False, request_timeout=60)).code
        with_token = (await client.fetch(status + "?token=" + token, raise_error=False, request_timeout=60)).code
    except OSError as e:  # the server did not come up on that address
        without = with_token = f"no answer ({e})"
    finally:
        serverapp.log.removeFilter(quiet)
    if (without, with_token) != (403, 200):
        failures.append(f"course: the server answered {without} without the token and {with_token} with it "
                        "(expected 403 and 200): a configuration (jupyter_server_config.py, jupyter_lab_config.py "
                        "or JUPYTER_CONFIG_DIR) overrides its authentication; stopping it")
        serverapp.stop()
        return
    default = serverapp.default_url[len(serverapp.base_url):]
    print(announcement(lab_url(serverapp.connection_url, default, token), serverapp.port) + note, flush=True)


def main(argv: list[str]) -> int:
    """Start JupyterLab with a fresh token that no configuration can empty; 1 if it would not be protected."""
    # a JUPYTER_TOKEN of the caller's shell is not this session's token, and the kernels need none
    os.environ.pop("JUPYTER_TOKEN", None)
    os.environ.pop("JUPYTER_TOKEN_FILE", None)
    from jupyterlab.labapp import LabApp

    serverapp = LabApp.initialize_server(argv=argv)
    if serverapp.sock or serverapp.ip not in LOOPBACK:
        print(f"course: ./course lab listens on 127.0.0.1 only, but the configuration asks for "
              f"{serverapp.sock or serverapp.ip!r}; remove that setting", file=sys.stderr)
        return 2
    note = ("course: your Jupyter configuration leaves the token empty (Jupyter's \"All authentication is disabled\" "
            "warning above); ./course lab replaced it with this session's token\n"
            if not serverapp.identity_provider.token else "")
    token = fresh_token()
    serverapp.identity_provider.token = token  # after every config file: an empty token or password there is moot
    failures: list[str] = []
    # runs once the IO loop has started, after the callback that binds the port (queued by initialize)
    serverapp.io_loop.add_callback(check_and_announce, serverapp, token, failures, note)
    serverapp.start()
    for line in failures:
        print(line, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
