"""Routes from Python: exact per-route totals from many threads, the bound, and
arguments refused by name."""

import threading

import pytest
import telering
from telering import Recorded


def test_route_transfers_and_errors_sum_exactly_per_route():
    with telering.Telemetry("py-routes", enabled=True, exporter="nop") as t:
        vram = t.route("write", "UCX", "VRAM", "vram_seg", "decode-0")
        file = t.route("read", "POSIX", "DRAM", "FILE")
        assert vram != file
        assert t.route("WRITE", "UCX", "VRAM", "VRAM", "decode-0") == vram

        def work():
            for i in range(500):
                assert t.add_route_xfer_stats(vram, 40 + i % 3, 1 << 20, 3, 4) == Recorded.WRITTEN
                assert t.add_route_xfer_stats(file, 900, 4096, 5) == Recorded.WRITTEN

        threads = [threading.Thread(target=work) for _ in range(4)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        assert t.update_route_error_count(vram, "NIXL_ERR_REMOTE_DISCONNECT") == Recorded.WRITTEN
        t.flush()
        w = t.route_totals(vram)
        assert (w["bytes"], w["transfers"], w["descriptors"]) == (2000 << 20, 2000, 8000)
        assert w["errors"] == {"NIXL_ERR_REMOTE_DISCONNECT": 1}
        r = t.route_totals(file)
        assert (r["bytes"], r["transfers"], r["descriptors"], r["xfer_time_us"]) == (2000 * 4096, 2000, 2000, 2000 * 900)
        assert r["errors"] == {}


def test_bad_route_arguments_are_refused_by_name():
    with telering.Telemetry("py-bad-routes", enabled=True, exporter="nop") as t:
        with pytest.raises(ValueError, match="operation"):
            t.route("sideways", "UCX", "DRAM", "DRAM")
        with pytest.raises(ValueError, match="remote_mem"):
            t.route("read", "UCX", "DRAM", "GPU")
        with pytest.raises(ValueError, match="peer name is 65 bytes"):
            t.route("read", "UCX", "DRAM", "DRAM", "x" * 65)
        with pytest.raises(ValueError, match="route 7"):
            t.add_route_xfer_stats(7, 1, 1, 1)
