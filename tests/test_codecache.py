"""The compiled methods of dataclasses, kept across starts: served from the file when it has them,
compiled as before when it does not, and a bad file is never trusted or fatal."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from homarus import codecache

SRC = Path(__file__).resolve().parents[1] / "src"

MODULE = """
from __future__ import annotations
import dataclasses

@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 0

@dataclasses.dataclass(order=True)
class Named:
    name: str
    tags: list[str] = dataclasses.field(default_factory=list)
"""

PROBE = """
import json, sys, dataclasses
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from homarus import codecache
codecache.install(Path(sys.argv[1]))
import sample
p = sample.Point(1)
n = sample.Named("a")
try:
    p.x = 5
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
print(json.dumps({
    "repr": repr(p), "eq": p == sample.Point(1, 0), "hash": hash(p) == hash(sample.Point(1)),
    "frozen": frozen, "order": sample.Named("a") < sample.Named("b"), "named": repr(n),
    **codecache.stats(),
}))
"""


def _probe(cache: Path, modules: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(cache), str(modules)], env=env, capture_output=True, text=True, check=True
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def _build(cache: Path, modules: Path) -> int:
    script = "import sys; sys.path.insert(0, sys.argv[2]); from pathlib import Path; from homarus import codecache; "
    script += "print(codecache.build('samplepkg', Path(sys.argv[1])))"
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script, str(cache), str(modules)], env=env, capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip())


def _modules(tmp_path: Path) -> Path:
    root = tmp_path / "mods"
    (root / "samplepkg").mkdir(parents=True)
    (root / "samplepkg" / "__init__.py").write_text("", encoding="utf-8")
    (root / "samplepkg" / "shapes.py").write_text(MODULE, encoding="utf-8")
    (root / "sample.py").write_text(MODULE, encoding="utf-8")  # the same classes, imported by the probe
    return root


def test_methods_come_from_the_file_and_behave_as_compiled(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    cache = tmp_path / "cache.bin"
    cold = _probe(cache, modules)  # no file yet: every method compiled as before
    assert cold["hits"] == 0 and cold["misses"] >= 8
    assert _build(cache, modules) >= cold["misses"]
    warm = _probe(cache, modules)
    assert warm["misses"] == 0 and warm["hits"] == cold["misses"]
    for key in ("repr", "eq", "hash", "frozen", "order", "named"):
        assert warm[key] == cold[key], key
    assert warm["repr"] == "Point(x=1, y=0)" and warm["frozen"] is True and warm["order"] is True


def test_a_changed_class_compiles_anew(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    cache = tmp_path / "cache.bin"
    _build(cache, modules)
    (modules / "sample.py").write_text(MODULE.replace("y: int = 0", "y: int = 0\n    z: int = 7"), encoding="utf-8")
    changed = _probe(cache, modules)
    assert changed["repr"] == "Point(x=1, y=0, z=7)"  # the new source, not the cached one
    assert changed["misses"] > 0 and changed["hits"] > 0  # Named is unchanged and still served


def test_a_rebuild_keeps_only_what_the_sources_create(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    cache = tmp_path / "cache.bin"
    first = _build(cache, modules)
    shapes = modules / "samplepkg" / "shapes.py"
    shapes.write_text(MODULE.replace("y: int = 0", "y: int = 0\n    z: int = 7"), encoding="utf-8")
    assert _build(cache, modules) == first  # the old Point's methods are gone, the new ones in
    (modules / "sample.py").write_text(shapes.read_text(encoding="utf-8"), encoding="utf-8")
    assert _probe(cache, modules)["misses"] == 0


def test_a_foreign_or_damaged_file_is_ignored(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    cache = tmp_path / "cache.bin"
    _build(cache, modules)
    good = cache.read_bytes()
    for bad in (b"HMDC\x00\x00\r\n" + good[8:], good[:40], b"", good[:8] + b"\xff" * 64):
        cache.write_bytes(bad)
        result = _probe(cache, modules)
        assert result["hits"] == 0 and result["repr"] == "Point(x=1, y=0)"
    cache.unlink()
    assert _probe(cache, modules)["hits"] == 0


def test_a_file_others_may_write_is_not_trusted(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    cache = tmp_path / "cache.bin"
    _build(cache, modules)
    assert _probe(cache, modules)["hits"] > 0
    cache.chmod(0o666)
    assert _probe(cache, modules)["hits"] == 0
    cache.chmod(0o620)
    assert _probe(cache, modules)["hits"] == 0


def test_the_package_file_is_beside_its_bytecode() -> None:
    path = codecache.cache_path()
    assert path.parent.name == "__pycache__" and path.parent.parent.name == "homarus"
    assert sys.implementation.cache_tag in path.name


RELEASE_PROBE = """
import json, sys, dataclasses
from pathlib import Path
sys.path.insert(0, sys.argv[2])
from homarus import codecache
codecache.install(Path(sys.argv[1]))
import sample
served = codecache.stats()
codecache.release()
after = {"exec_shadowed": "exec" in vars(dataclasses), **codecache.stats()}

@dataclasses.dataclass
class Later:
    a: int

print(json.dumps({"served": served, "after": after, "later": repr(Later(3)), "final": codecache.stats()}))
"""


def test_release_lets_the_entries_go_and_later_classes_compile_as_python_does(tmp_path: Path) -> None:
    modules = _modules(tmp_path)
    cache = tmp_path / "cache.bin"
    _build(cache, modules)
    env = {**os.environ, "PYTHONPATH": str(SRC), "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", RELEASE_PROBE, str(cache), str(modules)],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(out.stdout)
    assert report["served"]["hits"] > 0 and report["served"]["entries"] > 0
    assert report["after"] == {"exec_shadowed": False, "hits": report["served"]["hits"], "misses": 0, "entries": 0}
    assert report["later"] == "Later(a=3)"  # compiled by the dataclasses module itself: not counted
    assert report["final"] == {"hits": report["served"]["hits"], "misses": 0, "entries": 0}
