"""``make lab`` (the README's command to run the chapters locally) starts a JupyterLab server
that serves the chapters."""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _get(url: str) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, b""


def test_make_lab_serves_the_chapters(tmp_path):
    port, token = _free_port(), "mlm-test-token"
    args = (f"--no-browser --ServerApp.port={port} --ServerApp.ip=127.0.0.1 "
            f"--IdentityProvider.token={token}")
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path), "JUPYTER_CONFIG_DIR":
           str(tmp_path / "config")}
    proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                            start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline, status = time.time() + 120, None
        while time.time() < deadline and proc.poll() is None:
            try:
                status, body = _get(f"{base}/api/contents/walkthrough_1_hide.ipynb?token={token}")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        assert status == 200, f"no chapter served (status {status}, make exit {proc.poll()})"
        chapter = json.loads(body)
        assert chapter["type"] == "notebook"
        assert chapter["content"]["cells"][1]["source"].startswith("# Step 1")
        status, page = _get(f"{base}/lab?token={token}")
        assert status == 200 and b"JupyterLab" in page
        status, _ = _get(f"{base}/api/contents/walkthrough_1_hide.ipynb")  # no token: refused
        assert status == 403
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
