"""Arguments the Rust builder would take without a word are refused, naming the
argument: flags that are not bools, an exporter or directory given to telemetry that
is disabled, and backend names that are empty or long."""

import pytest

import telering


@pytest.mark.parametrize("option", ["enabled", "capture_telemetry", "early_flush"])
@pytest.mark.parametrize("value", ["off", "False", "", 1, 0, None, 1.0])
def test_a_flag_is_true_or_false_only(option, value):
    with pytest.raises(TypeError, match=f"^{option} must be True or False, not "):
        telering.Telemetry("agent", **{option: value})


def test_a_string_flag_never_turns_telemetry_on(tdir):
    with pytest.raises(TypeError, match=r"enabled must be True or False, not str 'off'"):
        telering.Telemetry("agent", enabled="off", dir=tdir)
    assert list(tdir.iterdir()) == []


@pytest.mark.parametrize("enabled", [False, True])
def test_an_unknown_exporter_is_refused_whether_or_not_telemetry_is_enabled(enabled, tdir):
    with pytest.raises(ValueError, match="exporter=kafka is not a known exporter; use one of: buffer"):
        telering.Telemetry("agent", enabled=enabled, exporter="kafka", dir=tdir)
    with pytest.raises(ValueError, match="kafka is not a known exporter"):
        telering.Telemetry("agent", enabled=enabled, exporter=["buffer", "kafka"], dir=tdir)
    assert list(tdir.iterdir()) == []


def test_a_known_exporter_and_usable_dir_are_fine_while_disabled(tdir):
    missing = tdir / "not" / "yet"
    with telering.Telemetry("agent", exporter="csv", dir=missing) as t:
        assert t.mode == "disabled"
    # Disabled telemetry creates nothing.
    assert not missing.exists()
    with telering.Telemetry("agent", capture_telemetry=True, exporter="buffer", dir=tdir):
        pass


def test_an_unusable_dir_is_refused_while_disabled_and_nothing_is_created(tdir):
    blocker = tdir / "file"
    blocker.write_text("x")
    dangling = tdir / "dangling"
    dangling.symlink_to(tdir / "gone")
    cases = [
        ("/proc/nope", "dir=/proc/nope cannot be created: /proc is on the kernel's proc file system"),
        ("/sys/nope/deeper", "on the kernel's sysfs file system"),
        (blocker, "is not a directory"),
        (blocker / "sub", "is below " + str(blocker) + ", which is not a directory"),
        (dangling, "dangling link"),
    ]
    for path, text in cases:
        with pytest.raises(ValueError) as info:
            telering.Telemetry("agent", dir=path)
        assert text in str(info.value), (path, str(info.value))
        assert str(info.value).startswith("dir="), str(info.value)
    assert sorted(p.name for p in tdir.iterdir()) == ["dangling", "file"]
    assert blocker.read_text() == "x"


@pytest.mark.parametrize(
    "name, text",
    [
        ("", 'backend name "" is empty'),
        ("u" * 300, "is 300 bytes long; at most 64"),
        ("é" * 33, "is 66 bytes long; at most 64"),
        ("UCX\x1b]0;x\x07", r"has the control character \u{1b} at byte 3"),
        ("a\nb", r"has the control character \u{a} at byte 1"),
    ],
)
def test_a_backend_name_is_1_to_64_bytes_without_control_characters(name, text):
    with telering.Telemetry("agent", capture_telemetry=True) as t:
        with pytest.raises(ValueError) as info:
            t.backend(name)
        assert text in str(info.value)
        assert "\x1b" not in str(info.value) and "\n" not in str(info.value)
        assert t.backend("u" * 64).add_telemetry_event("ok", 1) is not None
