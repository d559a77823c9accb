import gc

from reprise.core.gc_pauses import no_gc_pauses


def test_a_pause_turns_collections_off_until_the_outermost_ends_and_resumed_turns_them_on_for_a_stretch():
    assert gc.isenabled()
    with no_gc_pauses() as outer:
        assert not gc.isenabled()
        with no_gc_pauses():
            assert not gc.isenabled()
        assert not gc.isenabled()
        with outer.resumed():
            assert gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_inside_a_program_that_turned_collections_off_leaves_them_off():
    gc.disable()
    try:
        with no_gc_pauses() as pause, pause.resumed():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_listing_runs_without_collections_and_leaves_them_on(tmp_path, isolated_paths, monkeypatch):
    from reprise.core.service import Service
    from tests import factories

    factories.write_session(isolated_paths, tmp_path, factories.session_bytes("one"))
    service = Service.from_environment(workspace=str(tmp_path))
    seen = []
    original = service.mark_folders_and_limits
    monkeypatch.setattr(service, "mark_folders_and_limits", lambda rows: (seen.append(gc.isenabled()), original(rows)))
    assert len(service.list_sessions().rows) == 1
    assert seen == [False] and gc.isenabled()
