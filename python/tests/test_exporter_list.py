"""A Python agent's exporter list: an exporter listed twice (in any case) and an empty
entry are refused before anything starts, naming the variable, the keyword or the
configuration file's key; a plug-in that cannot be loaded is said why, and a missing
one with the built-in exporters and the folder searched."""

import os
import re

import pytest

import telering


def env(tdir, exporter, **more):
    return {
        "NIXL_TELEMETRY_ENABLE": "y",
        "NIXL_TELEMETRY_DIR": str(tdir),
        "NIXL_TELEMETRY_EXPORTER": exporter,
        **more,
    }


@pytest.mark.parametrize(
    "exporter, entries",
    [("buffer,buffer", "1 and 2"), ("Buffer,csv,BUFFER", "1 and 3")],
)
def test_an_exporter_listed_twice_is_refused_naming_it(tdir, exporter, entries):
    named = "buffer is listed twice in NIXL_TELEMETRY_EXPORTER=%s (entries %s" % (exporter, entries)
    with pytest.raises(ValueError, match="^" + re.escape(named)):
        telering.Telemetry.from_env("py-twice", env=env(tdir, exporter))
    # Given as a keyword, a str or a list: the keyword is named.
    for given in (exporter, exporter.split(",")):
        with pytest.raises(ValueError, match=re.escape(named.replace("NIXL_TELEMETRY_EXPORTER=", "exporter="))):
            telering.Telemetry("py-twice", enabled=True, dir=tdir, exporter=given)
    assert os.listdir(tdir) == [], "nothing started"


def test_an_exporter_listed_twice_in_the_configuration_file_names_its_key(tmp_path, tdir, monkeypatch):
    cfg = tmp_path / "nixl.cfg"
    cfg.write_text("NIXL_TELEMETRY_EXPORTER = ['nop', 'NOP']\n")
    monkeypatch.setenv("NIXL_CONFIG_FILE", str(cfg))
    for name in [n for n in os.environ if n.startswith("NIXL_TELEMETRY_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("NIXL_TELEMETRY_ENABLE", "y")
    want = "configuration file %s, key NIXL_TELEMETRY_EXPORTER: nop is listed twice in NIXL_TELEMETRY_EXPORTER=nop,NOP" % cfg
    with pytest.raises(ValueError, match="^" + re.escape(want)):
        telering.Telemetry.from_env("py-file")


@pytest.mark.parametrize("exporter, position", [("buffer,,csv", 2), ("csv,", 2), (",csv", 1), ("buffer, ,csv", 2)])
def test_an_empty_entry_in_the_exporter_list_is_refused_naming_its_position(tdir, exporter, position):
    named = "NIXL_TELEMETRY_EXPORTER=%s has an empty entry at position %d" % (exporter, position)
    with pytest.raises(ValueError, match="^" + re.escape(named)):
        telering.Telemetry.from_env("py-empty", env=env(tdir, exporter))
    keyword = named.replace("NIXL_TELEMETRY_EXPORTER=", "exporter=")
    with pytest.raises(ValueError, match="^" + re.escape(keyword)):
        telering.Telemetry("py-empty", enabled=True, dir=tdir, exporter=exporter)
    assert os.listdir(tdir) == [], "nothing started"


def test_a_plugin_that_cannot_be_loaded_says_why(tmp_path, tdir):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    with pytest.raises(ValueError) as missing:
        telering.Telemetry.from_env("py-plugin", env=env(tdir, "buffer,kafka", NIXL_PLUGIN_DIR=str(plugins)))
    text = str(missing.value)
    assert text.startswith("NIXL_TELEMETRY_EXPORTER=kafka is neither a built-in exporter (buffer, csv, nop, "), text
    searched = "NIXL_PLUGIN_DIR=%s was searched for libtelemetry_exporter_kafka.so: No such file or directory" % plugins
    assert searched in text, text

    junk = plugins / "libtelemetry_exporter_junk.so"
    junk.write_bytes(b"")
    # An exporter that cannot start is a RuntimeError, as for any exporter.
    with pytest.raises(RuntimeError) as short:
        telering.Telemetry.from_env("py-plugin", env=env(tdir, "junk", NIXL_PLUGIN_DIR=str(plugins)))
    assert "exporter plug-in %s cannot be loaded: file too short" % junk in str(short.value), str(short.value)
    assert os.listdir(tdir) == [], "nothing started"
