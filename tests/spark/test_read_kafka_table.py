"""``read_kafka_table`` (the driver-side read without Spark) on a real broker: its progress bar
on a terminal, and the by-timestamp JSON options."""

from __future__ import annotations

import io
import re
import time
from typing import Any

import pytest

pytest.importorskip("pyarrow")
rich_console = pytest.importorskip("rich.console")

from kafkaconsumer.spark.driver import read_kafka_table  # noqa: E402
from tests.helpers import unique_name  # noqa: E402

from .conftest import create_topic, produce, skip_on_tansu_offset_lookups  # noqa: E402

pytestmark = [pytest.mark.integration, pytest.mark.timeout(90)]


def test_progress_bar_shows_records_megabytes_rate_and_eta(broker: Any) -> None:
    skip_on_tansu_offset_lookups(broker)
    bs = broker.bootstrap_servers
    topic = unique_name("sp-progress")
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, None, b"x" * 1000, []) for i in range(3000)])
    out = io.StringIO()
    console = rich_console.Console(file=out, force_terminal=True, width=160)
    table = read_kafka_table(
        {"kafka.bootstrap.servers": bs, "subscribe": topic}, progress=True, console=console
    )
    assert table.num_rows == 3000
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", out.getvalue())
    assert re.search(r"3,?000/3,?000 records", text), text
    assert "3.0 MB" in text, text
    assert re.search(r"[\d,]+ records/s", text), text
    assert re.search(r"ETA \d+:\d\d:\d\d", text), text
    # Not a terminal and not asked for: no bar.
    quiet = io.StringIO()
    read_kafka_table(
        {"kafka.bootstrap.servers": bs, "subscribe": topic},
        progress=False,
        console=rich_console.Console(file=quiet, force_terminal=True),
    )
    assert quiet.getvalue() == ""


def test_offsets_by_timestamp_json(broker: Any) -> None:
    skip_on_tansu_offset_lookups(broker)
    bs = broker.bootstrap_servers
    topic = unique_name("sp-bytime")
    create_topic(bs, topic, 2)
    produce(bs, topic, [(i % 2, None, b"a%d" % i, []) for i in range(40)])
    time.sleep(0.05)  # the second half must carry a later timestamp than the first
    cut = int(time.time() * 1000)
    time.sleep(0.05)
    produce(bs, topic, [(i % 2, None, b"b%d" % i, []) for i in range(40)])
    future = cut + 3_600_000
    table = read_kafka_table(
        {
            "kafka.bootstrap.servers": bs,
            "subscribe": topic,
            # Partition 0 from the cut to the end (no record at the future timestamp: latest),
            # partition 1 from its start up to the cut.
            "startingOffsetsByTimestamp": f'{{"{topic}":{{"0":{cut},"1":0}}}}',
            "endingOffsetsByTimestamp": f'{{"{topic}":{{"0":{future},"1":{cut}}}}}',
        },
        progress=False,
    )
    got = sorted((r["partition"], r["offset"], r["value"]) for r in table.to_pylist())
    assert got == sorted(
        [(0, 20 + i, b"b%d" % (2 * i)) for i in range(20)]
        + [(1, i, b"a%d" % (2 * i + 1)) for i in range(20)]
    )
    with pytest.raises(Exception, match="must name every partition"):
        read_kafka_table(
            {
                "kafka.bootstrap.servers": bs,
                "subscribe": topic,
                "startingOffsetsByTimestamp": f'{{"{topic}":{{"0":{cut}}}}}',
            },
            progress=False,
        )
