"""S-package: the wheel builds offline (python3 -m build --no-isolation
--wheel, Debian's python3-build and python3-setuptools), installs into a
clean venv (--system-site-packages: psycopg from Debian, no index), and the
15-line worker of docs/clients/python.md runs from it."""
from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

from conftest import HERE

PROJECT = HERE.parent
DOC = PROJECT.parent.parent / "docs" / "clients" / "python.md"


def worker_example() -> str:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## A worker in 15 lines", 1)[1]
    m = re.search(r"```python\n(.*?)```", section, re.S)
    assert m, "no python block under 'A worker in 15 lines'"
    code = m.group(1)
    assert len(code.strip().splitlines()) <= 15, "the worker in 15 lines has more"
    return code


def test_S_package(dsn: str, tmp_path: pathlib.Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(PROJECT, src, ignore=shutil.ignore_patterns("tests", "build", "dist", "*.egg-info",
                                                                "__pycache__", ".mypy_cache", ".pytest_cache"))
    env = dict(os.environ, PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("PYTHONPATH", None)
    build = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--wheel", "--outdir",
                            str(tmp_path / "dist"), str(src)], capture_output=True, text=True, env=env,
                           timeout=120)
    assert build.returncode == 0, build.stdout[-2000:] + build.stderr[-2000:]
    wheels = list((tmp_path / "dist").glob("pg_coord-0.4.0-py3-none-any.whl"))
    assert len(wheels) == 1, list((tmp_path / "dist").iterdir())
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    inst = subprocess.run([py, "-m", "pip", "install", "--no-index", str(wheels[0])],
                          capture_output=True, text=True, env=env, timeout=120)
    assert inst.returncode == 0, inst.stdout[-2000:] + inst.stderr[-2000:]
    where = subprocess.run([py, "-c", "import pg_coord, os; print(os.path.dirname(pg_coord.__file__))"],
                           capture_output=True, text=True, env=env, cwd=tmp_path, check=True).stdout.strip()
    assert where.startswith(str(venv)), where
    assert os.path.exists(os.path.join(where, "py.typed"))
    run = subprocess.run([py, "-c", worker_example()], capture_output=True, text=True, cwd=tmp_path,
                         env=dict(env, PGDATABASE=dsn.split("=", 1)[1]), timeout=60)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "done" in run.stdout


def test_typed(tmp_path: pathlib.Path) -> None:
    """The package is typed (py.typed): mypy --strict (Debian's python3-mypy)
    finds nothing in it, with pyproject.toml's settings."""
    r = subprocess.run([sys.executable, "-m", "mypy", "--config-file", str(PROJECT / "pyproject.toml"),
                        "--cache-dir", str(tmp_path / "mypy_cache"), "-p", "pg_coord"],
                       cwd=PROJECT / "src", capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
