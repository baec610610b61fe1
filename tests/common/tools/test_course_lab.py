"""./course lab listens on 127.0.0.1 with a token, whatever the user's Jupyter config says (issue 18)."""
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from course_testing import ROOT


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def course_env(tmp_path):
    env_root = Path(sys.prefix).parent  # this environment (~/.cache/tpu-course/env-<key>) lives in the root
    config = tmp_path / "jupyter-config"
    config.mkdir()
    # a user config that would switch authentication off
    (config / "jupyter_server_config.py").write_text("c.IdentityProvider.token = ''\nc.ServerApp.token = ''\n")
    return {**os.environ, "HOME": str(tmp_path), "JUPYTER_CONFIG_DIR": str(config),
            "TPU_COURSE_ENV_ROOT": str(env_root)}


def status(url):
    try:
        return urllib.request.urlopen(url, timeout=5).status
    except urllib.error.HTTPError as e:
        return e.code


@pytest.mark.parametrize("arg", ["--ip=0.0.0.0", "--ServerApp.token=", "--IdentityProvider.token=''"])
def test_lab_refuses_to_open_up(tmp_path, arg):
    proc = subprocess.run(["bash", str(ROOT / "course"), "lab", arg], env=course_env(tmp_path), capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode != 0 and "refusing" in proc.stderr


def test_lab_asks_for_a_token_even_when_the_user_config_says_none(tmp_path):
    port = free_port()
    env = {**course_env(tmp_path), "JUPYTER_TOKEN": "a-test-token"}  # ./course lab uses it instead of a random one
    log = open(tmp_path / "lab.log", "w")
    proc = subprocess.Popen(["bash", str(ROOT / "course"), "lab", f"--port={port}", "--ServerApp.port_retries=0"],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while time.time() < deadline and proc.poll() is None:
            try:
                code = status(f"http://127.0.0.1:{port}/api/contents")
                break
            except (urllib.error.URLError, ConnectionError, OSError):
                time.sleep(0.5)
        else:
            pytest.fail("./course lab did not start: " + (tmp_path / "lab.log").read_text()[-2000:])
        assert code == 403  # no token: refused, although the user's config asks for none
        assert status(f"http://127.0.0.1:{port}/api/contents?token=a-test-token") == 200
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()
