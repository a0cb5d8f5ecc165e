"""``make lab`` (the README's command to run the chapters locally) serves the chapters and both
editions from one root, and they read right in a real JupyterLab, driven in Chromium.

Without jupyterlab-myst, JupyterLab renders Markdown as Colab and GitHub do: MyST stays raw. So
the editions are opened with the extension disabled (a temporary ``JUPYTER_CONFIG_DIR`` whose
``labconfig/page_config.json`` turns it off): an exercise is a heading, its solution (or, in the
student edition, a recall answer) is hidden until its summary is clicked, and no raw directive
is on the page. A source chapter is opened with the extension on, to pin down what it renders:
the exercises (numbered per notebook, not as the site numbers them) and the recall dropdowns,
but not the solutions' gating across cells: a solution's code cell stays a visible cell.
"""

import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "mlm-test-token"
CHAPTER = "worked_a_standard_mask.ipynb"  # exercises 9 and 10, three recall questions


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


class Lab:
    """``make lab`` on a free port, with its own Jupyter folders (MyST on or off)."""

    def __init__(self, tmp: Path, myst: bool):
        self.port = _free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        config = tmp / "config"
        (config / "labconfig").mkdir(parents=True)
        disabled = {} if myst else {"disabledExtensions": {"jupyterlab-myst": True}}
        (config / "labconfig" / "page_config.json").write_text(json.dumps(disabled))
        settings = tmp / "settings" / "@jupyterlab" / "notebook-extension"
        settings.mkdir(parents=True)  # every cell in the page, not only those in view
        (settings / "tracker.jupyterlab-settings").write_text('{"windowingMode": "none"}')
        args = (f"--no-browser --ServerApp.port={self.port} --ServerApp.ip=127.0.0.1 "
                f"--IdentityProvider.token={TOKEN}")
        env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp / "runtime"),
               "JUPYTER_CONFIG_DIR": str(config), "JUPYTERLAB_SETTINGS_DIR": str(tmp / "settings"),
               "JUPYTERLAB_WORKSPACES_DIR": str(tmp / "workspaces")}
        self.proc = subprocess.Popen(["make", "--no-print-directory", "lab", f"LAB_ARGS={args}"],
                                     cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env=env, start_new_session=True)
        deadline = time.time() + 120
        while time.time() < deadline and self.proc.poll() is None:
            try:
                if _get(f"{self.base}/api?token={TOKEN}")[0] == 200:
                    return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                time.sleep(0.5)
        self.close()
        raise AssertionError(f"make lab did not start (exit {self.proc.poll()})")

    def contents(self, path: str, token: bool = True) -> tuple[int, bytes]:
        return _get(f"{self.base}/api/contents/{path}" + (f"?token={TOKEN}" if token else ""))

    def close(self):
        os.killpg(self.proc.pid, signal.SIGTERM)
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("lab"), myst=False)
    yield server
    server.close()


def test_make_lab_serves_the_chapters_and_both_editions_from_one_root(lab):
    for folder in ("notebooks", "editions/notebooks", "editions/student"):
        status, body = lab.contents(f"{folder}/walkthrough_1_hide.ipynb")
        assert status == 200, f"{folder}: status {status}"
        chapter = json.loads(body)
        assert chapter["type"] == "notebook"
        title = 2 if folder == "editions/student" else 1  # after the Colab cell (and the note)
        assert chapter["content"]["cells"][title]["source"].startswith("# Step 1")
    status, page = _get(f"{lab.base}/lab?token={TOKEN}")
    assert status == 200 and b"JupyterLab" in page
    status, _ = lab.contents("notebooks/walkthrough_1_hide.ipynb", token=False)
    assert status == 403  # no token: refused


def _open(browser, lab: Lab, path: str):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{lab.base}/lab/tree/{path}?reset&token={TOKEN}")  # one tab only
    page.wait_for_selector(".jp-MarkdownCell h1", timeout=90000)  # the title, rendered
    page.wait_for_function("document.querySelectorAll('.jp-Cell').length > 20", timeout=30000)
    time.sleep(1)  # the last Markdown cells typeset
    return page, errors


def _hidden_until_clicked(details) -> str:
    """Click a <details>' summary; the text it showed. Fails if it was shown before."""
    body = details.locator("summary ~ *").first
    details.scroll_into_view_if_needed()
    assert not body.is_visible(), "shown before its summary is clicked"
    details.locator("summary").click()
    body.wait_for(state="visible", timeout=5000)
    return details.inner_text()


def test_the_notebook_edition_reads_right_without_myst(lab, chromium):
    page, errors = _open(chromium, lab, f"editions/notebooks/{CHAPTER}")
    text = page.inner_text(".jp-Notebook")
    assert page.locator(".jp-RenderedMarkdown h3", has_text="Exercise 9").count() == 1
    assert "```{" not in text and ":label:" not in text and "{doc}" not in text
    solution = page.locator("details", has_text="Solution to Exercise 9")
    assert solution.count() == 1
    shown = _hidden_until_clicked(solution)
    assert "def my_slot_loss" in shown and "Correct" in shown  # the code and its output
    recall = page.locator("details", has_text="Why exponentiate")
    assert "Scores can be negative" in _hidden_until_clicked(recall)
    assert not errors, errors
    page.close()


def test_the_student_edition_reads_right_without_myst(lab, chromium):
    page, errors = _open(chromium, lab, f"editions/student/{CHAPTER}")
    text = page.inner_text(".jp-Notebook")
    assert page.locator(".jp-RenderedMarkdown h3", has_text="Exercise 10").count() == 1
    assert "```{" not in text and "Solution to" not in text
    assert "np.exp(z).sum()" not in text  # the solution's code is nowhere
    recall = page.locator("details", has_text="Does the loss rise or fall")
    assert "It falls" in _hidden_until_clicked(recall)
    assert not errors, errors
    page.close()


def test_what_jupyterlab_myst_renders_in_a_source_chapter(chromium, tmp_path):
    lab = Lab(tmp_path, myst=True)
    try:
        page, errors = _open(chromium, lab, f"notebooks/{CHAPTER}")
        text = page.inner_text(".jp-Notebook").replace("\xa0", " ")
        assert "```{" not in text and ":label:" not in text  # every directive rendered
        assert "Exercise 1" in text and "Exercise 2" in text  # numbered in the notebook alone
        assert "Start of Solution to Exercise 1" in text  # the gate, rendered as a marker...
        code = page.locator(".jp-CodeCell", has_text="m = s.max()")
        assert code.count() == 1 and code.first.is_visible()  # ...but the solution still shows
        recall = page.locator("details", has_text="Why exponentiate")
        assert recall.count() >= 1  # a dropdown admonition is folded
        link = page.locator(".jp-MarkdownCell a", has_text="notation")
        assert link.count() >= 1  # {doc} becomes a link
        assert not errors, errors
        page.close()
    finally:
        lab.close()
