"""``homarus.entry_points``: the installed distributions' entry points, without importing
``importlib.metadata`` when no distribution declares the group asked for."""

from __future__ import annotations

import importlib.metadata
import inspect
import sys
import zipfile
from pathlib import Path

import pydantic.plugin._schema_validator as schema_validator

from homarus.entry_points import declared_groups, entry_points
from tests.conftest import python_output


def _dist(root: Path, name: str, text: str | None) -> None:
    root.mkdir(parents=True, exist_ok=True)
    info = root / name
    info.mkdir()
    if text is not None:
        (info / "entry_points.txt").write_text(text, encoding="utf-8")


def test_the_groups_are_the_sections_with_an_entry_of_each_distributions_entry_points(tmp_path: Path) -> None:
    site = tmp_path / "site"
    _dist(site, "a-1.0.dist-info", "[console_scripts]\na = a:main\n\n[homarus.plugins]\na = a.plugin\n")
    _dist(site, "b-2.0.egg-info", "[ pydantic ]\nb = b:plugin\n")
    _dist(site, "c-1.0.dist-info", None)  # declares nothing
    _dist(site, "not-metadata", "[ignored]\n")
    _dist(site, "e-1.0.dist-info", "[gui_scripts]\n\n# none\n")  # an empty section is no group (neonize's)
    egg = tmp_path / "d-1.0.egg"  # an unpacked egg on the path keeps its metadata inside
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[egg.group]\nd = d:main\n", encoding="utf-8")
    paths = [str(site), str(egg), str(tmp_path / "missing")]
    assert declared_groups(paths) == frozenset({"console_scripts", "homarus.plugins", "pydantic", "egg.group"})


def test_an_archive_on_the_path_leaves_the_answer_to_importlib_metadata(tmp_path: Path) -> None:
    archive = tmp_path / "bundle.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("x-1.0.dist-info/entry_points.txt", "[homarus.plugins]\nx = x\n")
    assert declared_groups([str(archive)]) is None


def test_on_this_interpreters_path_the_groups_are_importlib_metadatas() -> None:
    assert declared_groups() == frozenset(importlib.metadata.entry_points().groups)


def test_a_declared_group_is_read_by_importlib_metadata() -> None:
    expected = importlib.metadata.entry_points(group="homarus.channel_configs")
    assert [ep.value for ep in entry_points("homarus.channel_configs")] == [ep.value for ep in expected]
    assert "telegram" in [ep.name for ep in expected]


def test_an_undeclared_group_is_answered_without_importlib_metadata() -> None:
    out = python_output(
        "import sys\n"
        "from homarus.entry_points import entry_points\n"
        "print(entry_points('homarus.no-such-group'), 'importlib.metadata' in sys.modules)"
    )
    assert out.split() == ["()", "False"]


def test_with_no_pydantic_plugin_installed_pydantic_never_scans_for_one() -> None:
    out = python_output(
        "import sys\n"
        "from homarus.entry_points import skip_pydantic_plugin_scan\n"
        "skipped = skip_pydantic_plugin_scan()\n"
        "from pydantic import BaseModel\n"
        "class M(BaseModel):\n"
        "    x: int\n"
        "print(skipped, M(x=1).x, 'importlib.metadata' in sys.modules, skip_pydantic_plugin_scan())"
    )
    assert out.split() == ["True", "1", "False", "False"]  # the second call finds it done


def test_an_installed_pydantic_plugin_is_left_to_pydantic(tmp_path: Path) -> None:
    _dist(tmp_path, "p-1.0.dist-info", "[pydantic]\np = p:plugin\n")
    out = python_output(
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "from homarus.entry_points import skip_pydantic_plugin_scan\n"
        "print(skip_pydantic_plugin_scan(), 'pydantic.plugin._loader' in sys.modules)"
    )
    assert out.split() == ["False", "False"]


def test_pydantic_still_asks_its_plugin_loader_for_get_plugins() -> None:
    """What ``skip_pydantic_plugin_scan`` answers for: an upgrade of pydantic that asks elsewhere
    fails here (the gateway would then load importlib.metadata again, not misbehave)."""
    source = inspect.getsource(schema_validator.create_schema_validator)
    assert "from ._loader import get_plugins" in source
    assert "pydantic.plugin._loader" in sys.modules
