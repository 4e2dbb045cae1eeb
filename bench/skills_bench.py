"""Skills: time to build a run's ``## Skills`` section with 100 skills installed.

What a run pays before its first model call: discovery over every source (workspace, installed,
bundled), front matter parsing, gating and rendering of the bounded ``<available_skills>`` block.
Two cases: cold (the parse cache cleared before each build, as after a gateway restart or when
every file changed) and warm (unchanged files, only ``stat`` calls and gating). Also the total
install time per skill through the full pipeline (stage, scan, hash, rename).

    .venv/bin/python bench/skills_bench.py [--skills 100] [--rounds 200]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

# Run as a script, this file's directory is on sys.path but the repository root is not.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import machine_facts  # after the sys.path line above
from homarus.agents import setup
from homarus.config.schema import HomarusConfig
from homarus.sessions.keys import parse_session_key
from homarus.skills import discovery
from homarus.skills.install import install_skill

BODY = "# Steps\n" + "".join(f"{i}. Do step {i} carefully and check the result.\n" for i in range(1, 40))


def _write(src: Path, i: int) -> Path:
    d = src / f"skill-{i:03d}"
    d.mkdir(parents=True)
    req = "requires:\n  bins: [sh]\n  env: [HOME]\n" if i % 3 == 0 else ""
    (d / "SKILL.md").write_text(
        f"---\nname: skill-{i:03d}\ndescription: Skill number {i}, how to do task {i} step by step, "
        f"with the checks that matter.\n{req}---\n\n{BODY}",
        encoding="utf-8",
    )
    (d / "notes.md").write_text("reference notes\n" * 20)
    return d


def _ms(samples: list[float]) -> tuple[float, float]:
    s = sorted(samples)
    return statistics.median(s) * 1000, s[int(len(s) * 0.95) - 1] * 1000


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--skills", type=int, default=100)
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        state, ws = root / "state", root / "ws"
        ws.mkdir()
        installs: list[float] = []
        for i in range(args.skills):
            src = _write(root / "src", i)
            t0 = time.perf_counter()
            result = asyncio.run(install_skill(src, state))
            installs.append(time.perf_counter() - t0)
            assert result.ok, result.refused
        cfg = HomarusConfig()
        key = parse_session_key("agent:main:main")
        cases: dict[str, list[float]] = {"cold (parse cache cleared)": [], "warm (files unchanged)": []}
        chars = listed = 0
        for name, samples in cases.items():
            for _ in range(args.rounds):
                if name.startswith("cold"):
                    discovery._parse_cached.cache_clear()
                t0 = time.perf_counter()
                out = setup.skills_prompt(cfg, key, ws, state, None, {"read"})
                samples.append(time.perf_counter() - t0)
                assert out is not None and out.text is not None
                chars, listed = len(out.text), len(out.included)
    facts = machine_facts()
    print(f"{args.skills} installed skills + 3 bundled; prompt block {chars:,} chars, {listed} listed\n")
    print("| case | median ms | p95 ms |")
    print("| --- | --- | --- |")
    for name, samples in cases.items():
        med, p95 = _ms(samples)
        print(f"| prompt build, {name} | {med:.2f} | {p95:.2f} |")
    med, p95 = _ms(installs)
    print(f"| install one skill (stage, scan, hash, rename) | {med:.2f} | {p95:.2f} |")
    print(f"\n{facts.get('cpus')} CPUs ({facts.get('cpu_model')}), Python {facts.get('python')}")


if __name__ == "__main__":
    main()
