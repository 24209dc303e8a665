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


def test_a_route_number_no_route_call_returned_is_refused_and_records_nothing():
    with telering.Telemetry.from_env("py-stale-routes", {"TELERING_ROUTES_MAX": "1"}, enabled=True, exporter="nop") as t:
        p1 = t.route("write", "UCX", "DRAM", "DRAM", "p1")
        t.route("write", "UCX", "DRAM", "DRAM", "p2")  # beyond the bound: folded
        # 0xE108: the write id of index 16, which no call returned; 0xE000: the read
        # twin of p1's index; 0xFFF0: the read `other`, never handed out here.
        for stale in (0xE108, p1 - 8, 0xFFF0):
            with pytest.raises(ValueError, match="route %d is no id" % stale):
                t.add_route_xfer_stats(stale, 1, 1, 1)
            with pytest.raises(ValueError, match="route %d is no id" % stale):
                t.update_route_error_count(stale, "NIXL_ERR_BACKEND")
            with pytest.raises(ValueError, match="route %d is no id" % stale):
                t.route_totals(stale)
        assert t.stats()["events_recorded"] == 0


def test_a_route_named_other_is_the_fold_route():
    with telering.Telemetry.from_env("py-other", {"TELERING_ROUTES_MAX": "1"}, enabled=True, exporter="nop") as t:
        user_other = t.route("write", "other", "DRAM", "DRAM", "other")
        t.route("write", "UCX", "DRAM", "DRAM", "p1")
        folded = t.route("write", "UCX", "DRAM", "DRAM", "p2")
        assert user_other == folded
        assert t.add_route_xfer_stats(user_other, 1, 100, 1) == Recorded.WRITTEN
        assert t.add_route_xfer_stats(folded, 1, 1, 1) == Recorded.WRITTEN
        t.flush()
        assert t.route_totals(folded)["bytes"] == 101


def test_a_nul_in_a_route_name_is_refused_as_c_cannot_pass_one():
    with telering.Telemetry("py-nul-routes", enabled=True, exporter="nop") as t:
        with pytest.raises(ValueError, match="route backend name contains a NUL byte at offset 3"):
            t.route("read", "UCX\0x", "DRAM", "DRAM")
        with pytest.raises(ValueError, match="route peer name contains a NUL byte at offset 0"):
            t.route("read", "UCX", "DRAM", "DRAM", "\0")


def test_route_values_of_u64_max_saturate_and_the_flush_delivers_every_event(tmp_path):
    with telering.Telemetry("py-ovf", enabled=True, exporter="buffer", dir=str(tmp_path)) as t:
        r = t.route("write", "UCX", "VRAM", "VRAM", "p")
        for _ in range(10):
            t.add_xfer_stats(5, True, 100, 1)
        for _ in range(2):
            assert t.add_route_xfer_stats(r, 2**64 - 1, 2**64 - 1, 2**64 - 1, 2**64 - 1) == Recorded.WRITTEN
        t.flush()
        totals = t.route_totals(r)
        assert (totals["bytes"], totals["descriptors"], totals["xfer_time_us"]) == (2**64 - 1,) * 3
        s = t.stats()
        assert (s["events_recorded"], s["events_exported"], s["exporter_dropped"]) == (48, 48, 0)
