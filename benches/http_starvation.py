#!/usr/bin/env python3
"""Hostile clients against a /metrics endpoint, and how real scrapes fare meanwhile.

    http_starvation.py URL slowloris SOCKETS SECONDS
    http_starvation.py URL wrk CONNECTIONS SECONDS

`slowloris`: SOCKETS connections each send one more byte of a never-ending request
head every second (reconnecting whenever the server closes one), while a scraper
fetches URL every 0.5 s. `wrk`: `wrk -t2 -cCONNECTIONS` floods URL while `curl`
scrapes every 0.75 s. Prints how many scrapes got 200 within 1 s, how many got
another status, and how many failed or were slower. See BENCHMARKS.md.
"""
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request


def scrape_urllib(url):
    start = time.monotonic()
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        status = e.code
    except Exception as e:  # noqa: BLE001 - any failure is a failed scrape
        status = type(e).__name__
    return status, time.monotonic() - start


def scrape_curl(url):
    start = time.monotonic()
    out = subprocess.run(
        ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "10", url],
        capture_output=True, text=True, check=False,
    )
    return out.stdout or "error", time.monotonic() - start


def slowloris(host, port, sockets, stop):
    head = b"GET /metrics HTTP/1.1\r\nX-Slow: "

    def open_one():
        try:
            s = socket.create_connection((host, port), timeout=5)
            s.setblocking(False)
            return [s, 0]
        except OSError:
            return None

    conns = [open_one() for _ in range(sockets)]
    while not stop.is_set():
        for i, c in enumerate(conns):
            if c is None:
                conns[i] = open_one()
                continue
            s, sent = c
            byte = head[sent:sent + 1] or b"a"
            try:
                if s.recv(4096) is not None:
                    raise OSError("answered or closed")
            except BlockingIOError:
                pass
            except OSError:
                s.close()
                conns[i] = open_one()
                continue
            try:
                s.send(byte)
                c[1] += 1
            except OSError:
                s.close()
                conns[i] = open_one()
        stop.wait(1.0)
    for c in conns:
        if c:
            c[0].close()


def main():
    url, mode, count, seconds = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    parts = urllib.parse.urlsplit(url)
    stop = threading.Event()
    if mode == "slowloris":
        attacker = threading.Thread(
            target=slowloris, args=(parts.hostname, parts.port, count, stop))
        scrape, interval = scrape_urllib, 0.5
    else:
        attacker = threading.Thread(target=lambda: subprocess.run(
            ["wrk", "-t2", f"-c{count}", f"-d{int(seconds)}s", url],
            capture_output=True, check=False))
        scrape, interval = scrape_curl, 0.75
    attacker.start()
    time.sleep(1.0)  # let the attack build up before the first real scrape
    results = []
    end = time.monotonic() + seconds - 1.0
    while time.monotonic() < end:
        start = time.monotonic()
        results.append(scrape(url))
        time.sleep(max(0.0, interval - (time.monotonic() - start)))
    stop.set()
    attacker.join()
    ok = sum(1 for s, t in results if str(s) == "200" and t <= 1.0)
    slow = sum(1 for s, t in results if str(s) == "200" and t > 1.0)
    other = {}
    for s, _ in results:
        if str(s) != "200":
            other[str(s)] = other.get(str(s), 0) + 1
    worst = max((t for _, t in results), default=0.0)
    print(f"{mode} {count} for {seconds:.0f}s: {len(results)} scrapes, {ok} ok within 1 s, "
          f"{slow} ok but slower, others {other}, slowest {worst:.2f} s")


if __name__ == "__main__":
    main()
