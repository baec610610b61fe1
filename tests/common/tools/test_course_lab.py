"""./course lab: 127.0.0.1 only, a fresh token no user config can empty, kept out of `ps`, and the URL to open printed.

Which environment ``./course lab`` runs in: under ``./course test`` the real one (``./course`` has just installed
this checkout's wheel there, so its set-up step has nothing to do: the CPU path a learner takes). Run by hand from
a work tree, ``./course`` would reinstall that shared environment's wheel from the work tree; there the test gives
it a temporary environment root whose ``tpu-lab-<key>`` names this environment (the path ``./course setup --tpu``
leaves on a TPU VM), so the same launcher runs without installing anything.
"""
import os
import pty
import re
import select
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from course_lab import announcement, lab_url, tunnel_commands
from course_testing import ROOT

URL = re.compile(r"^\s*(http://127\.0\.0\.1:(\d+)/lab\?token=(\S+))\s*$", re.MULTILINE)


def course_env(tmp_path):
    """./course's environment: a user config that would switch authentication off, and the environment root."""
    config = tmp_path / "jupyter-config"
    config.mkdir()
    off = ("c.IdentityProvider.token = ''\nc.ServerApp.token = ''\nc.ServerApp.password = ''\n"
           "c.PasswordIdentityProvider.hashed_password = ''\nc.PasswordIdentityProvider.password_required = False\n")
    for name in ("jupyter_server_config.py", "jupyter_lab_config.py", "jupyter_config.py"):
        (config / name).write_text(off)
    env = {k: v for k, v in os.environ.items() if k not in ("JUPYTER_TOKEN", "JUPYTER_TOKEN_FILE")}
    env.update({"HOME": str(tmp_path), "JUPYTER_CONFIG_DIR": str(config), "JUPYTER_TOKEN": "",
                "TPU_COURSE_ENV_ROOT": str(Path(sys.prefix).parent)})
    if not os.environ.get("TPU_COURSE_TEST_RUN"):  # by hand from a work tree: install nothing into the shared one
        root = tmp_path / "env-root"
        root.mkdir()
        key = Path(sys.prefix).name.rsplit("-", 1)[-1]  # env-tf-<key>: the TensorFlow environment runs the lab
        (root / f"tpu-lab-{key}").write_text(sys.prefix + "\n")
        env["TPU_COURSE_ENV_ROOT"] = str(root)
    return env


def status(url):
    try:
        return urllib.request.urlopen(url, timeout=30).status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("arg", ["--ip=0.0.0.0", "--ServerApp.token=", "--IdentityProvider.token=''",
                                 "--IdentityProvider.token=mine", "--PasswordIdentityProvider.hashed_password=x",
                                 "--sock=/tmp/lab.sock"])
def test_lab_refuses_to_open_up(tmp_path, arg):
    proc = subprocess.run(["bash", str(ROOT / "course"), "lab", arg], env=course_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0 and "refusing" in proc.stderr, proc.stderr


def test_the_printed_url_and_tunnel_name_the_same_port():
    url = lab_url("http://127.0.0.1:8890/", "/lab", "a-b_c")
    assert url == "http://127.0.0.1:8890/lab?token=a-b_c"
    text = announcement(url, 8890)
    assert URL.search(text).group(1) == url
    for command in tunnel_commands(8890):
        assert "-N -L 8890:localhost:8890" in command and command in text


def read_until(fd, pattern, proc, seconds):
    """What the pseudo-terminal showed until `pattern` appears (the match), the process ends or time runs out."""
    out = b""
    deadline = time.time() + seconds
    while time.time() < deadline:
        ready, _, _ = select.select([fd], [], [], 1.0)
        if ready:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the terminal closed: the process is gone
                break
            out += chunk
            text = out.decode(errors="replace")
            if b"creating the pinned environment" in out:
                pytest.fail("./course lab started building an environment: this test needs the one it runs in")
            found = pattern.search(text)
            if found:
                return found, text
        elif proc.poll() is not None:
            break
    return None, out.decode(errors="replace")


def test_lab_prints_a_url_that_logs_in_with_a_fresh_token_nobody_else_sees(tmp_path):
    busy = socket.socket()  # the port asked for is taken: Jupyter binds another one, and the URL must name that one
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    asked = busy.getsockname()[1]
    controller, terminal = pty.openpty()
    env = {**course_env(tmp_path), "JUPYTER_TOKEN": "a-stale-token-from-the-shell"}  # not this session's token
    proc = subprocess.Popen(["bash", str(ROOT / "course"), "lab", f"--port={asked}"], env=env,
                            stdin=terminal, stdout=terminal, stderr=terminal, start_new_session=True)
    os.close(terminal)
    try:
        done, text = read_until(controller, re.compile("Control-C twice stops"), proc, 300)  # its announcement's end
        found = URL.search(text)
        assert done and found, "./course lab printed no URL to open:\n" + text[-3000:]
        url, port, token = found.group(1), int(found.group(2)), found.group(3)
        assert port != asked, f"port {asked} was taken, yet the URL names it"
        assert text.count(f"-N -L {port}:localhost:{port}") == 2, "the tunnel commands name the port in the URL"
        api = f"http://127.0.0.1:{port}/api/status"
        assert status(api) == 403, "without the token: refused, although the user's config asks for none"
        assert status(f"{api}?token={token}") == 200
        assert token != env["JUPYTER_TOKEN"] and status(f"{api}?token={env['JUPYTER_TOKEN']}") == 403, "a fresh token"
        assert status(url) == 200, "the printed URL opens the lab as it is"
        processes = subprocess.run(["ps", "axeww", "-o", "pid,args"], capture_output=True, text=True).stdout
        assert str(proc.pid) in processes and token not in processes, "the token is in no command line or environment"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)  # Jupyter stops its kernels and exits on SIGTERM
        try:
            proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
            os.close(controller)
            busy.close()


def test_lab_stops_instead_of_printing_a_url_when_a_config_lets_anyone_in(tmp_path):
    """The launcher's own check: a server that answers without the token is stopped, and no URL is printed."""
    env = course_env(tmp_path)
    (Path(env["JUPYTER_CONFIG_DIR"]) / "jupyter_server_config.py").write_text(
        "from jupyter_server.auth.identity import IdentityProvider, User\n\n"
        "class LetEveryoneIn(IdentityProvider):\n"
        "    def get_user(self, handler):\n"
        "        return User('anyone')\n\n"
        "c.ServerApp.identity_provider_class = LetEveryoneIn\n")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.run(["bash", str(ROOT / "course"), "lab", f"--port={port}"], env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "answered 200 without the token" in proc.stderr and not URL.search(proc.stdout)
