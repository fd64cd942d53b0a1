"""``liz init NAME --from PATH`` writes a project that a fresh virtualenv installs, with liz
taken from this checkout (only the index's packages come over the network), and whose
``liz`` then runs."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from liz.cli.distribution import DISTRIBUTION
from tests.serve_process import run_liz as liz

pytestmark = pytest.mark.slow

ROOT = Path(__file__).parent.parent


def test_a_fresh_venv_installs_the_project_from_this_checkout_and_its_liz_runs(
    tmp_path: Path,
) -> None:
    made = liz("init", "shop", "--from", str(ROOT), env={}, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tmp_path / "shop"
    dependencies = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    assert dependencies["dependencies"] == [f"{DISTRIBUTION} @ {ROOT.resolve().as_uri()}"]
    assert str(ROOT.resolve()) in (project / "README.md").read_text()
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    installed = subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "-e", str(project)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    chat = subprocess.run(
        [str(venv / "bin" / "liz"), "chat", "app:app", "--scripted"],
        cwd=project,
        input="hello\n",
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert chat.returncode == 0, chat.stderr
    assert 'shop> [scripted reply] You said: "hello"' in chat.stdout


def test_init_names_the_package_index_name_by_default(tmp_path: Path) -> None:
    made = liz("init", "shop", env={}, cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    project = tomllib.loads((tmp_path / "shop" / "pyproject.toml").read_text())
    (requirement,) = project["project"]["dependencies"]
    assert requirement.startswith(f"{DISTRIBUTION}>=")
    assert f"as `{DISTRIBUTION}`" in (tmp_path / "shop" / "README.md").read_text()


def test_init_from_a_folder_that_is_not_liz_is_one_line(tmp_path: Path) -> None:
    made = liz("init", "shop", "--from", str(tmp_path), env={}, cwd=tmp_path)
    assert made.returncode == 2
    assert made.stderr.startswith("error: --from") and len(made.stderr.splitlines()) == 1
    assert not (tmp_path / "shop").exists()
