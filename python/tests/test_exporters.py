"""Several exporters on one Python agent, each counted on its own, and an exporter
plug-in in C (examples/exporter-plugin, built with the system's C compiler) loaded
from NIXL_PLUGIN_DIR."""

import json
import os
import shutil
import subprocess

import pytest

import telering
from conftest import REPO

EVENTS = 100


def test_a_list_of_exporters_each_gets_every_event_and_counts_its_own(tmp_path):
    t = telering.Telemetry(
        "py-list", enabled=True, exporter=["buffer", "csv"], dir=tmp_path
    )
    assert t.exporter == "buffer,csv"
    assert os.fspath(t.ring_path) == os.fspath(tmp_path / "py-list")
    for v in range(1, EVENTS + 1):
        t.update_tx_bytes(v)
    t.close()
    each = t.exporter_stats()
    assert [e["name"] for e in each] == ["buffer", "csv"]
    for e in each:
        assert (e["events_delivered"], e["events_dropped"], e["exporter_failing"]) == (
            EVENTS,
            0,
            False,
        ), e
    assert each[1]["endpoint"] == os.fspath(tmp_path / "py-list.csv")
    rows = (tmp_path / "py-list.csv").read_text().count(",agent_tx_bytes,")
    assert rows == EVENTS


def test_an_exporter_option_that_is_no_list_of_str_is_a_type_error():
    with pytest.raises(TypeError, match="exporter must be a str or a list of str"):
        telering.Telemetry("py-bad", enabled=True, exporter=["buffer", 3])


def test_a_python_agent_loads_a_c_plugin_from_nixl_plugin_dir(tmp_path):
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    assert cc, "a C compiler is needed"
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    subprocess.run(
        [
            cc,
            "-shared",
            "-fPIC",
            "-O1",
            "-I",
            str(REPO / "adapters/std/include"),
            "-o",
            str(plugins / "libtelemetry_exporter_jsonl.so"),
            str(REPO / "examples/exporter-plugin/jsonl.c"),
        ],
        check=True,
    )
    out = tmp_path / "out"
    t = telering.Telemetry.from_env(
        "py-plugin",
        {
            "NIXL_TELEMETRY_ENABLE": "y",
            "NIXL_TELEMETRY_EXPORTER": "jsonl",
            "NIXL_TELEMETRY_DIR": str(out),
            "NIXL_PLUGIN_DIR": str(plugins),
        },
    )
    for v in range(1, EVENTS + 1):
        t.update_tx_bytes(v)
    t.close()
    lines = [json.loads(l) for l in (out / "py-plugin.jsonl").read_text().splitlines()]
    tx = [l["value"] for l in lines if l.get("name") == "agent_tx_bytes"]
    assert tx == list(range(1, EVENTS + 1))
    assert [e["name"] for e in t.exporter_stats()] == ["jsonl"]
