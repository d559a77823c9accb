"""The open registry: sources found through the entry-point group `reprise.sources`, each checked, a
broken one named in one line and skipped while the others keep working."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from reprise.core.sources.registry import (
    NOT_REGISTERED,
    EntryPoint,
    LoadFailure,
    entry_points,
    id_argument,
    load,
    registry,
    short_id,
)
from reprise.core.sources.spec import SourceSpec

from .plug_ins import plug_in as _plug_in
from .plug_ins import spec_module as _spec_module

BUILT_IN = ("fractal", "claude", "codex", "gemini")


def test_the_built_in_sources_are_found_through_the_entry_point_group():
    found = registry()
    assert found.names == BUILT_IN
    assert found.failures == ()
    assert [spec.mark for spec in found.specs] == ["F", "C", "X", "G"]
    assert all(found.origins[name].startswith("reprise ") for name in BUILT_IN)


def test_a_plug_in_with_a_good_spec_loads_in_its_order(tmp_path, monkeypatch):
    _plug_in(tmp_path, {"plug": "reprise_plug_good:SPEC"}, {"reprise_plug_good": _spec_module(order=15)})
    monkeypatch.syspath_prepend(str(tmp_path))
    found = registry()
    assert found.names == ("fractal", "claude", "plug", "codex", "gemini")
    assert found.failures == ()
    assert found.origins["plug"] == "reprise_plug 0.3.0"
    assert isinstance(found.get("plug"), SourceSpec)


@pytest.mark.parametrize(("module", "text", "reason"), [
    ("reprise_plug_missing", None, "ModuleNotFoundError: No module named 'reprise_plug_missing'"),
    ("reprise_plug_raises", "raise RuntimeError('no yaml here')\n", "RuntimeError: no yaml here"),
    ("reprise_plug_not_spec", "SPEC = {'name': 'plug'}\n",
     "a bad spec: reprise_plug_not_spec:SPEC is a dict, not a SourceSpec"),
    ("reprise_plug_pattern", _spec_module(id_pattern=".+"), "a bad spec: its id pattern accepts '.'"),
    ("reprise_plug_compile", _spec_module(id_pattern="[a-"), "a bad spec: its id pattern does not compile"),
    ("reprise_plug_named", _spec_module(name="other"), "a bad spec: its spec is named 'other', not 'plug'"),
    ("reprise_plug_shape", _spec_module(name="Plug!"), "a bad spec: its name 'Plug!' is not a source name"),
    ("reprise_plug_mark", _spec_module(mark="C"), "a bad spec: its mark 'C' is taken by Claude Code"),
    ("reprise_plug_lower", _spec_module(mark="p"), "a bad spec: its mark 'p' is not one capital letter"),
])
def test_a_source_that_does_not_load_is_named_in_one_line_and_the_others_load(tmp_path, monkeypatch, module,
                                                                              text, reason):
    _plug_in(tmp_path, {"plug": f"{module}:SPEC"}, {} if text is None else {module: text})
    monkeypatch.syspath_prepend(str(tmp_path))
    found = registry()
    assert found.names == BUILT_IN
    (failure,) = found.failures
    assert (failure.name, failure.origin) == ("plug", "reprise_plug 0.3.0")
    assert failure.reason.startswith(reason)
    assert "\n" not in failure.line
    assert failure.line.startswith('the source "plug" (reprise_plug 0.3.0) did not load: ')
    assert failure.line.endswith("; the other sources work")


def test_a_name_taken_by_a_built_in_source_is_refused_and_the_built_in_one_kept(tmp_path, monkeypatch):
    _plug_in(tmp_path, {"claude": "reprise_plug_taken:SPEC"},
             {"reprise_plug_taken": _spec_module(name="claude", mark="Q")})
    monkeypatch.syspath_prepend(str(tmp_path))   # first on the path: still loaded after Reprise's own
    found = registry()
    assert found.names == BUILT_IN and found.get("claude").label == "Claude Code"
    assert [failure.reason for failure in found.failures] == ["a bad spec: the name is taken by reprise 0.1.0"]


def test_the_first_distribution_of_a_name_on_the_path_wins(tmp_path):
    _plug_in(tmp_path / "a", {"plug": "first:SPEC"}, {})
    _plug_in(tmp_path / "b", {"plug": "second:SPEC"}, {})
    found = entry_points([str(tmp_path / "a"), str(tmp_path / "b"), *sys.path])
    assert [entry.value for entry in found if entry.name == "plug"] == ["first:SPEC"]
    assert found[0].own   # Reprise's own come first


def test_an_install_without_the_group_says_how_to_register_reprises_sources(tmp_path):
    stale = tmp_path / "reprise-0.1.0.dist-info"
    stale.mkdir()
    (stale / "entry_points.txt").write_text("[console_scripts]\nreprise = reprise.tui.cli:main\n")
    found = load(entry_points([str(tmp_path), *sys.path]))
    assert found.names == ()
    assert [failure.line for failure in found.failures] == [NOT_REGISTERED]
    assert load([]).failures == (LoadFailure("", "reprise", NOT_REGISTERED),)


def test_a_source_loads_from_any_distribution_once_reprises_own_are_there():
    own = [EntryPoint(name, f"reprise.core.sources.{name}.spec:SPEC", "reprise 0.1.0", True) for name in BUILT_IN]
    assert load(own).names == BUILT_IN


def test_short_ids_follow_each_spec():
    uuid7 = "019a2b3c-4d5e-7f60-8a9b-0c1d2e3f4a5b"
    assert short_id("codex", uuid7) == "…2e3f4a5b" and id_argument("codex", uuid7) == "2e3f4a5b"
    assert short_id("claude", uuid7) == "019a2b3c…" and id_argument("claude", uuid7) == "019a2b3c"
    assert short_id("fractal", "short") == "short"
    assert short_id("not-loaded", uuid7) == "019a2b3c…"


def test_a_session_ref_names_its_source_and_checks_only_the_names_shape():
    from reprise.core.errors import InvalidIdError
    from reprise.core.paths import OwnPaths, SessionRef, workspace_key

    key = workspace_key("/home/dev/p")
    with pytest.raises(TypeError):
        SessionRef(key, "abc")   # type: ignore[call-arg]
    assert SessionRef(key, "abc", "sqlite-test").source == "sqlite-test"   # any registered name's shape
    for bad in ("", "Claude", "a/b", "x" * 33, "1st", "a\x00"):
        with pytest.raises(InvalidIdError):
            SessionRef(key, "abc", bad)
    ref = SessionRef(key, "abc", "plug")
    assert OwnPaths(Path("/data"), "plug").meta_file(ref) == Path(f"/data/workspaces/{key}/reprise/meta/plug/abc.json")


def test_doctor_names_a_source_the_fast_scan_cannot_see(tmp_path, monkeypatch):
    """A distribution in a zip on the path is found by importlib.metadata, not by the direct scan:
    `missed_by_scan` (what doctor reports) names it."""
    import zipfile

    from reprise.core.sources.registry import missed_by_scan

    archive = tmp_path / "plug.zip"
    with zipfile.ZipFile(archive, "w") as zipped:
        zipped.writestr("reprise_zipped-0.2.dist-info/METADATA", "Metadata-Version: 2.1\nName: reprise_zipped\n"
                        "Version: 0.2\n")
        zipped.writestr("reprise_zipped-0.2.dist-info/entry_points.txt", "[reprise.sources]\nzipped = z:SPEC\n")
    assert missed_by_scan() == []
    monkeypatch.syspath_prepend(str(archive))
    assert [(entry.name, entry.origin) for entry in missed_by_scan()] == [("zipped", "reprise_zipped 0.2")]
