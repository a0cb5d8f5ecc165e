"""The GitHub Actions workflows: valid YAML, and they run the README's commands."""

import re
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"


def load(name: str) -> dict:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    assert isinstance(data, dict), f"{name} is not a YAML mapping"
    # YAML 1.1 reads the key `on` as True; GitHub reads it as "on"
    data["on"] = data.pop(True, data.get("on"))
    return data


def commands(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


@pytest.mark.parametrize("name", ["pages.yml", "tests.yml", "newest.yml"])
def test_workflow_shape(name):
    data = load(name)
    assert data.get("name") and data["on"], f"{name}: needs a name and triggers"
    assert data["jobs"], f"{name}: no jobs"
    for job_name, job in data["jobs"].items():
        assert job.get("runs-on"), f"{name}/{job_name}: no runs-on"
        assert job.get("steps"), f"{name}/{job_name}: no steps"
        for step in job["steps"]:
            assert ("uses" in step) != ("run" in step), f"{name}/{job_name}: {step}"
            if "uses" in step:
                assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", step["uses"]), step["uses"]


def test_pages_builds_with_the_readme_command_and_publishes_the_site():
    data = load("pages.yml")
    assert data["on"]["push"]["branches"] == ["main"]
    assert data["permissions"] == {"contents": "read", "pages": "write", "id-token": "write"}
    build, deploy = data["jobs"]["build"], data["jobs"]["deploy"]
    assert "make book" in commands(build)
    upload = [s for s in build["steps"] if s.get("uses", "").startswith(
        "actions/upload-pages-artifact@")]
    assert upload and upload[0]["with"]["path"] == "_build/html"
    assert deploy["needs"] == "build"
    assert any(s.get("uses", "").startswith("actions/deploy-pages@") for s in deploy["steps"])


def test_pull_requests_run_every_check():
    data = load("tests.yml")
    assert "pull_request" in data["on"]
    assert "bash .ci/run" in commands(data["jobs"]["test"])


def test_the_workflows_use_the_readme_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_once_a_week_every_check_runs_with_the_newest_allowed_versions():
    data = load("newest.yml")
    cron = data["on"]["schedule"][0]["cron"].split()
    assert len(cron) == 5 and cron[2] == "*" and cron[3] == "*" and cron[4] != "*"  # weekly
    job = data["jobs"]["test"]
    assert job["env"]["CONSTRAINTS"] == "/dev/null"
    assert "bash .ci/run" in commands(job)
    makefile = (ROOT / "Makefile").read_text()
    assert "CONSTRAINTS ?= constraints.txt" in makefile and "-c $(CONSTRAINTS)" in makefile
    dry = subprocess.run(["make", "-n", "-B", ".venv/.installed", "CONSTRAINTS=/dev/null"],
                         cwd=ROOT, capture_output=True, text=True)
    assert "-c /dev/null" in dry.stdout and "-c constraints.txt" not in dry.stdout
