"""Run one bench file under two Python interpreters, one after the other, and print the
ratios of their figures as JSON.

    python benchmarks/compare.py BENCH.py --a PYTHON_A --b PYTHON_B [--a-path src] \
        [-- ARGS FOR THE BENCH ...]
    python benchmarks/compare.py --quick        # a self-check: overhead.py under this Python twice

``--a`` is usually this project (``--a-path src`` puts the checkout first on its
``PYTHONPATH``) and ``--b`` the reference (say, a venv with the published lovia). The bench
must print one JSON object on stdout. Every number found at the same place in both outputs
gives ``a / b`` (below 1: A is faster, for times); a W2 list of points is keyed by its ``N``.
Settings, environment and calibration figures are left out of the ratios but kept in
``a`` and ``b``.

On a shared, noisy machine one pair of runs can be off by 2x either way. ``--rounds N``
runs the pair N times, alternating which goes first (A B, B A, ...), takes each figure's
ratio within its round, and reports the median ratio per figure, with the lowest and highest
in ``ratio_range``; ``a`` and ``b`` then hold every round's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SKIP = {"config", "env", "calibration", "started", "version", "framework", "mode"}


def run(python: str, bench: str, args: list[str], path: str | None) -> dict[str, Any]:
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [python, bench, *args], capture_output=True, text=True, env=env, check=False
    )
    if done.returncode != 0:
        sys.stderr.write(done.stderr[-4000:])
        raise SystemExit(f"{python} {bench} failed with exit code {done.returncode}")
    out = done.stdout
    found: dict[str, Any] = json.loads(out[out.index("{") :])
    return found


def flatten(value: Any, prefix: str = "") -> dict[str, float]:
    """Numeric leaves by dotted path; a list of dicts with ``N`` is keyed by it."""
    out: dict[str, float] = {}
    if isinstance(value, bool):
        return out
    if isinstance(value, (int, float)):
        out[prefix] = float(value)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not prefix and key in SKIP:
                continue
            out.update(flatten(item, f"{prefix}.{key}" if prefix else str(key)))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            label = f"N={item['N']}" if isinstance(item, dict) and "N" in item else str(i)
            out.update(flatten(item, f"{prefix}[{label}]"))
    return out


def ratios(a: dict[str, Any], b: dict[str, Any]) -> dict[str, float | None]:
    fa, fb = flatten(a), flatten(b)
    return {key: (round(fa[key] / fb[key], 3) if fb[key] else None) for key in fa if key in fb}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("bench", nargs="?", help="the bench file (default: overhead.py, --quick)")
    ap.add_argument("--a", default=sys.executable, help="interpreter A (default: this one)")
    ap.add_argument("--b", default=sys.executable, help="interpreter B (default: this one)")
    ap.add_argument("--a-path", default=None, help="prepended to PYTHONPATH for A only")
    ap.add_argument("--b-path", default=None, help="prepended to PYTHONPATH for B only")
    ap.add_argument("--quick", action="store_true", help="pass --quick to the bench")
    ap.add_argument("--rounds", type=int, default=1, help="pairs of runs, alternating (median)")
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1 :] if "--" in argv else []  # for the bench
    args = ap.parse_args(argv[: argv.index("--")] if "--" in argv else argv)
    bench = args.bench or str(HERE / "overhead.py")
    if args.quick or not args.bench:
        extra = ["--quick", *extra] if "--quick" not in extra else extra
    if args.rounds < 1:
        ap.error("--rounds must be 1 or more")
    rounds: list[tuple[dict[str, Any], dict[str, Any]]] = []
    for k in range(args.rounds):
        if k % 2 == 0:
            a = run(args.a, bench, extra, args.a_path)
            b = run(args.b, bench, extra, args.b_path)
        else:
            b = run(args.b, bench, extra, args.b_path)
            a = run(args.a, bench, extra, args.a_path)
        rounds.append((a, b))
    if args.rounds == 1:
        a, b = rounds[0]
        result = {
            "bench": Path(bench).name,
            "args": extra,
            "a": {"python": args.a, "figures": a},
            "b": {"python": args.b, "figures": b},
            "ratios_a_over_b": ratios(a, b),
        }
    else:
        result = {
            "bench": Path(bench).name,
            "args": extra,
            "rounds": args.rounds,
            "a": {"python": args.a, "figures": [a for a, _ in rounds]},
            "b": {"python": args.b, "figures": [b for _, b in rounds]},
            **combined([ratios(a, b) for a, b in rounds]),
        }
    print(json.dumps(result, indent=1))


def combined(per_round: list[dict[str, float | None]]) -> dict[str, Any]:
    """The median ratio of each figure over the rounds, and its lowest and highest."""
    median: dict[str, float | None] = {}
    spread: dict[str, list[float]] = {}
    for key in per_round[0]:
        clean = [v for v in (r.get(key) for r in per_round) if v is not None]
        median[key] = round(statistics.median(clean), 3) if clean else None
        if clean:
            spread[key] = [min(clean), max(clean)]
    return {"ratios_a_over_b": median, "ratio_range": spread}


if __name__ == "__main__":
    main()
