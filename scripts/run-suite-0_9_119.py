"""Run lovia 0.9.119's own test suite, from its source distribution, against this project.

    .venv/bin/python scripts/run-suite-0_9_119.py SDIST_DIR [PATH ...]
    .venv/bin/python scripts/run-suite-0_9_119.py --download [PATH ...]

SDIST_DIR is the unpacked ``lovia-0.9.119`` source distribution; ``--download`` fetches it with
pip into ``.cache/`` (once), as ``scripts/run_examples.py --download`` does. PATH names what to
run, relative to its ``tests`` folder (default: everything but ``web``, whose groups are in
docs/compat.md's web section).

Its tests are copied to a temporary folder, never into this repository, and run there with this
project's ``src`` first on the path. One change is made to the copy: its conftest imports a
private helper of 0.9.119 (``lovia.providers._windows.clear_endpoint_cache``, a cache this
project does not have) for every test, so that import is made optional. One test is left out:
``test_cli_entry.py::test_web_forwards_args_and_prog`` patches 0.9.119's private
``lovia.web.__main__.main``, so here it starts a real server and never returns.

The script prints, per folder of that suite, how many tests passed, failed, errored (a module
that cannot be imported counts once, as an error) and were skipped, then the failing test ids
(``--list``), and exits 0. docs/compat.md says why each failing group fails.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache"
PRIVATE_IMPORT = "from lovia.providers._windows import clear_endpoint_cache\n"
OPTIONAL_IMPORT = (
    "try:\n"
    "    from lovia.providers._windows import clear_endpoint_cache\n"
    "except ImportError:  # not in this lovia (run-suite-0_9_119.py)\n\n"
    "    def clear_endpoint_cache():\n"
    "        pass\n"
)
LEFT_OUT = ["tests/test_cli_entry.py::test_web_forwards_args_and_prog"]

# Records each test's outcome (collection errors included) to the file LOVIA_SUITE_OUT names.
RECORDER = """
import json, os

_OUT = {}


def pytest_collectreport(report):
    if report.failed:
        _OUT[report.nodeid] = "error"


def pytest_runtest_logreport(report):
    seen = _OUT.get(report.nodeid)
    if report.when == "setup":
        if report.failed:
            _OUT[report.nodeid] = "error"
        elif report.skipped:
            _OUT[report.nodeid] = "skipped"
    elif report.when == "call":
        _OUT[report.nodeid] = "skipped" if report.skipped else report.outcome
    elif report.failed and seen != "failed":
        _OUT[report.nodeid] = "error"


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        with open(os.environ["LOVIA_SUITE_OUT"], "w") as f:
            json.dump(_OUT, f)
"""


def download_sdist() -> Path:
    """0.9.119's unpacked source distribution (fetched with pip, once)."""
    folder = CACHE / "lovia-0.9.119"
    if (folder / "tests").is_dir():
        return folder
    with tempfile.TemporaryDirectory() as tmp:
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:"]
        subprocess.run([*pip, "lovia==0.9.119", "-d", tmp], check=True)
        (sdist,) = Path(tmp).glob("lovia-0.9.119.tar.gz")
        with tarfile.open(sdist) as tar:
            tar.extractall(CACHE, filter="data")
    if not (folder / "tests").is_dir():
        raise SystemExit("the downloaded distribution has no tests folder")
    return folder


def folder_of(nodeid: str) -> str:
    path = nodeid.split("::", 1)[0]
    parent = str(Path(path).parent)
    return parent if path.endswith(".py") else path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("sdist", nargs="?", type=Path, help="the unpacked 0.9.119 sdist")
    parser.add_argument("paths", nargs="*", help="what to run, relative to its tests folder")
    parser.add_argument("--download", action="store_true", help="fetch 0.9.119's sdist")
    parser.add_argument("--workers", default="2", help="pytest-xdist workers (0: none)")
    parser.add_argument("--list", action="store_true", help="also print the failing test ids")
    args = parser.parse_args()
    if args.download:
        if args.sdist is not None:
            args.paths.insert(0, str(args.sdist))
        sdist = download_sdist()
    elif args.sdist is None:
        parser.error("give the unpacked sdist folder, or --download")
    else:
        sdist = args.sdist
    with tempfile.TemporaryDirectory(prefix="lovia-suite-") as tmp:
        work = Path(tmp)
        shutil.copytree(sdist / "tests", work / "tests")
        shutil.copy(sdist / "pytest.ini", work / "pytest.ini")
        conftest = work / "tests" / "conftest.py"
        conftest.write_text(conftest.read_text().replace(PRIVATE_IMPORT, OPTIONAL_IMPORT))
        (work / "suite_recorder.py").write_text(RECORDER)
        out = work / "outcomes.json"
        targets = [f"tests/{p}" for p in args.paths] or ["tests", "--ignore=tests/web"]
        cmd = [sys.executable, "-m", "pytest", *targets, "-q", "-p", "no:cacheprovider"]
        cmd += ["-p", "suite_recorder", *(f"--deselect={t}" for t in LEFT_OUT)]
        if args.workers != "0":
            cmd += ["-n", args.workers]
        env = dict(os.environ, LOVIA_SUITE_OUT=str(out))
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), str(work)])
        done = subprocess.run(cmd, cwd=work, env=env, capture_output=True, text=True, check=False)
        if not out.is_file():
            sys.stderr.write(done.stdout[-4000:] + done.stderr[-4000:])
            raise SystemExit("pytest did not run the suite (its output is above)")
        outcomes: dict[str, str] = json.loads(out.read_text())
    table: dict[str, Counter[str]] = defaultdict(Counter)
    for nodeid, outcome in outcomes.items():
        table[folder_of(nodeid)][outcome] += 1
    table["all"] = sum(table.values(), Counter())
    kinds = ["passed", "failed", "error", "skipped"]
    print(json.dumps({d: {k: table[d][k] for k in kinds} for d in sorted(table)}, indent=1))
    if args.list:
        for nodeid, outcome in sorted(outcomes.items()):
            if outcome in ("failed", "error"):
                print(outcome, nodeid)
    return 0


if __name__ == "__main__":
    sys.exit(main())
