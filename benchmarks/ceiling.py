"""The broker's serve ceiling: how fast it hands out a topic to a client that does no work.

A bare Fetch loop over one blocking connection per partition leader (one connection on a
single-node cluster), asking for every partition at once with the consumer's default sizes
(``fetch.max.bytes`` 52428800, ``max.partition.fetch.bytes`` 1048576, ``fetch.max.wait.ms``
500, ``fetch.min.bytes`` 1), reading only the 61-byte header of each record batch: its base
offset, length, last offset delta and record count. No record is decoded, no CRC checked, no
fetch session used. What this loop reaches is the most any client can get out of the broker on
this machine; ``consume.py`` prints every client's rate as a fraction of it.

    python benchmarks/ceiling.py --bootstrap 127.0.0.1:9092 --topic t --partitions 8 \\
        --records 1000000

The topic must hold at least ``--records`` records from offset 0 on (``consume.py`` writes it).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import socket
import struct
import sys
import time
from typing import Any

# Run as a script, the repository's package comes first (not an installed copy).
sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from kafkaconsumer.protocol.api import ApiKey, decode_response, encode_request  # noqa: E402

# The Java consumer's defaults (ConsumerConfig).
FETCH_MAX_BYTES = 52428800
PARTITION_MAX_BYTES = 1048576
FETCH_MAX_WAIT_MS = 500
FETCH_MIN_BYTES = 1

# v12: the last version with topic names (no topic-id lookup needed), flexible encoding.
_FETCH_VERSION = 12
_METADATA_VERSION = 9
_SIZE = struct.Struct(">i")
# Record batch v2 header: baseOffset int64, batchLength int32, partitionLeaderEpoch int32,
# magic int8, crc uint32, attributes int16, lastOffsetDelta int32, ... recordCount int32 at 57.
_BATCH_HEAD = struct.Struct(">qi")
_LAST_DELTA = struct.Struct(">i")
_BATCH_HEADER_SIZE = 61
_CONTROL_FLAG = 0x20


class _Conn:
    """One blocking connection: send a request, read its whole response frame."""

    def __init__(self, host: str, port: int, timeout_s: float) -> None:
        self.sock = socket.create_connection((host, port), timeout=timeout_s)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._cid = 0
        self._buf = bytearray(1 << 20)

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> None:
        self._cid += 1
        self.sock.sendall(encode_request(api_key, version, self._cid, "ceiling", body))

    def receive(self, api_key: int, version: int) -> dict[str, Any]:
        size = _SIZE.unpack(self._read_exact(4))[0]
        if size > len(self._buf):
            self._buf = bytearray(size)
        view = memoryview(self._buf)[:size]
        got = 0
        while got < size:
            n = self.sock.recv_into(view[got:])
            if n == 0:
                raise ConnectionError("broker closed the connection")
            got += n
        cid, body = decode_response(api_key, version, view)
        if cid != self._cid:
            raise ConnectionError(f"correlation id {cid}, expected {self._cid}")
        return body

    def _read_exact(self, n: int) -> bytes:
        out = b""
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            out += chunk
        return out

    def close(self) -> None:
        self.sock.close()


def _split_bootstrap(bootstrap: str) -> tuple[str, int]:
    host, _, port = bootstrap.split(",")[0].strip().rpartition(":")
    return host.strip("[]"), int(port)


def _leaders(
    bootstrap: str, topics: list[str], timeout_s: float
) -> dict[int, tuple[str, int, list[tuple[str, int]]]]:
    """``{node: (host, port, [(topic, partition), ...])}`` for ``topics``."""
    conn = _Conn(*_split_bootstrap(bootstrap), timeout_s)
    try:
        conn.send(
            ApiKey.METADATA,
            _METADATA_VERSION,
            {"topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False},
        )
        md = conn.receive(ApiKey.METADATA, _METADATA_VERSION)
    finally:
        conn.close()
    brokers = {b["node_id"]: (b["host"], b["port"]) for b in md["brokers"]}
    out: dict[int, tuple[str, int, list[tuple[str, int]]]] = {}
    for t in md["topics"]:
        if t["error_code"]:
            raise SystemExit(f"metadata for {t['name']}: error {t['error_code']}")
        for p in t["partitions"]:
            node = p["leader_id"]
            host, port = brokers[node]
            out.setdefault(node, (host, port, []))[2].append((t["name"], p["partition_index"]))
    return out


def count_batches(raw: Any) -> tuple[int, int]:
    """(records, next offset) from the complete batches of ``raw`` (headers only)."""
    records = 0
    next_offset = -1
    pos = 0
    end = len(raw)
    while end - pos >= _BATCH_HEADER_SIZE:
        base, length = _BATCH_HEAD.unpack_from(raw, pos)
        if pos + 12 + length > end:
            break  # a truncated last batch: fetched again from its start next time
        if not raw[pos + 22] & _CONTROL_FLAG:
            records += _SIZE.unpack_from(raw, pos + 57)[0]
        next_offset = base + _LAST_DELTA.unpack_from(raw, pos + 23)[0] + 1
        pos += 12 + length
    return records, next_offset


def measure(
    bootstrap: str,
    topic: str,
    records: int,
    *,
    max_bytes: int = FETCH_MAX_BYTES,
    partition_max_bytes: int = PARTITION_MAX_BYTES,
    timeout_s: float = 300.0,
    passes: int = 1,
    keep: list[tuple[str, int, int, bytes]] | None = None,
) -> dict[str, Any]:
    """Fetch ``records`` records of ``topic`` (a comma-separated list of topics) from offset 0,
    ``passes`` times over the same connections; returns the rate and CPU used (``records`` in
    the result counts every pass). One pass over a million small records lasts a few tens of
    milliseconds, too short for a steady rate. ``keep`` collects ``(topic, partition,
    fetch offset, records bytes)`` of every partition's data (``floor.py``; the copies make
    that run's timing meaningless)."""
    if passes < 1:
        raise ValueError("passes must be at least 1")
    leaders = _leaders(bootstrap, topic.split(","), timeout_s)
    conns = {node: _Conn(host, port, timeout_s) for node, (host, port, _) in leaders.items()}
    offsets = {node: dict.fromkeys(parts, 0) for node, (_, _, parts) in leaders.items()}
    n = fetches = nbytes = 0
    usage0 = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    deadline = start + timeout_s
    pass_end = records
    try:
        while n < records * passes:
            if time.perf_counter() > deadline:
                raise SystemExit(
                    f"ceiling: only {n} of {records * passes} records in {timeout_s} s"
                )
            if n >= pass_end:  # a pass is done: the next one reads the same records again
                pass_end += records
                for node_offsets in offsets.values():
                    for key in node_offsets:
                        node_offsets[key] = 0
            for node, conn in conns.items():
                by_topic: dict[str, list[dict[str, int]]] = {}
                for (t, p), off in offsets[node].items():
                    by_topic.setdefault(t, []).append(
                        {
                            "partition": p,
                            "fetch_offset": off,
                            "partition_max_bytes": partition_max_bytes,
                        }
                    )
                conn.send(
                    ApiKey.FETCH,
                    _FETCH_VERSION,
                    {
                        "max_wait_ms": FETCH_MAX_WAIT_MS,
                        "min_bytes": FETCH_MIN_BYTES,
                        "max_bytes": max_bytes,
                        "isolation_level": 0,
                        "session_id": 0,
                        "session_epoch": -1,
                        "topics": [{"topic": t, "partitions": ps} for t, ps in by_topic.items()],
                        "forgotten_topics_data": [],
                        "rack_id": "",
                    },
                )
            for node, conn in conns.items():
                body = conn.receive(ApiKey.FETCH, _FETCH_VERSION)
                fetches += 1
                if body["error_code"]:
                    raise SystemExit(f"fetch error {body['error_code']}")
                for t in body["responses"]:
                    for p in t["partitions"]:
                        key = (t["topic"], p["partition_index"])
                        if p["error_code"]:
                            raise SystemExit(
                                f"fetch error {p['error_code']} on partition {p['partition_index']}"
                            )
                        raw = p["records"]
                        if raw is None:
                            continue
                        nbytes += len(raw)
                        if keep is not None:
                            keep.append((key[0], key[1], offsets[node][key], bytes(raw)))
                        got, next_offset = count_batches(raw)
                        n += got
                        if next_offset >= 0:
                            offsets[node][key] = next_offset
        elapsed = time.perf_counter() - start
    finally:
        for conn in conns.values():
            conn.close()
    usage1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (usage1.ru_utime - usage0.ru_utime) + (usage1.ru_stime - usage0.ru_stime)
    return {
        "client": "ceiling",
        "records": n,
        "elapsed_s": elapsed,
        "cpu_s": cpu,
        "fetches": fetches,
        "bytes": nbytes,
        "connections": len(conns),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--bootstrap", required=True)
    ap.add_argument("--topic", required=True, help="a topic, or several comma-separated")
    ap.add_argument("--records", type=int, required=True)
    ap.add_argument("--partitions", type=int, help="ignored: read from the metadata")
    ap.add_argument("--timeout", type=float, default=300.0)
    ap.add_argument(
        "--passes", type=int, default=1, help="read the records this many times (default 1)"
    )
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    args = ap.parse_args()
    result = measure(
        args.bootstrap, args.topic, args.records, timeout_s=args.timeout, passes=args.passes
    )
    if args.json:
        print(json.dumps(result))
        return
    rate = result["records"] / result["elapsed_s"]
    print(
        f"ceiling: {result['records']:,} records in {result['elapsed_s']:.3f} s = "
        f"{rate:,.0f} records/s, {result['fetches']} fetches over {result['connections']} "
        f"connection(s), {result['bytes'] / result['elapsed_s'] / 1e6:.0f} MB/s, "
        f"client CPU {result['cpu_s'] * 1e6 / max(1, result['records']):.3f} us/record"
    )


if __name__ == "__main__":
    main()
