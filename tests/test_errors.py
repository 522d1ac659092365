"""The error model: every broker code is present with the facts the retry logic needs."""

from __future__ import annotations

import pytest

from kafkaconsumer import errors


def test_every_code_from_minus_one_to_the_current_maximum() -> None:
    table = errors.error_codes()
    assert sorted(table) == [-1] + list(range(1, 134))
    names = [cls.name for cls in table.values()]
    assert len(set(names)) == len(names)
    for code, cls in table.items():
        assert issubclass(cls, errors.BrokerResponseError)
        assert cls.errno == code
        assert cls.description and cls.__doc__


@pytest.mark.parametrize(
    ("code", "cls", "retriable", "invalid_metadata"),
    [
        (1, errors.OffsetOutOfRangeError, False, False),
        (3, errors.UnknownTopicOrPartitionError, True, True),
        (6, errors.NotLeaderOrFollowerError, True, True),
        (15, errors.CoordinatorNotAvailableError, True, False),
        (16, errors.NotCoordinatorError, True, False),
        (22, errors.IllegalGenerationError, False, False),
        (25, errors.UnknownMemberIdError, False, False),
        (27, errors.RebalanceInProgressError, False, False),
        (35, errors.UnsupportedVersionError, False, False),
        (70, errors.FetchSessionIdNotFoundError, True, False),
        (74, errors.FencedLeaderEpochError, True, True),
        (79, errors.MemberIdRequiredError, False, False),
        (82, errors.FencedInstanceIdError, False, False),
        (88, errors.UnstableOffsetCommitError, True, False),
    ],
)
def test_known_codes(code: int, cls: type, retriable: bool, invalid_metadata: bool) -> None:
    assert errors.for_code(code) is cls
    assert cls.retriable is retriable
    assert cls.invalid_metadata is invalid_metadata


def test_authentication_and_authorization_families() -> None:
    assert issubclass(errors.SaslAuthenticationFailedError, errors.SaslAuthenticationError)
    assert issubclass(errors.SaslAuthenticationError, errors.AuthenticationError)
    assert issubclass(errors.TopicAuthorizationFailedError, errors.AuthorizationError)
    assert issubclass(errors.ConfigError, ValueError)


def test_unknown_code_is_retriable_and_keeps_the_code() -> None:
    cls = errors.for_code(4242)
    assert cls.errno == 4242 and cls.retriable
    with pytest.raises(ValueError):
        errors.for_code(0)


def test_raise_for_code_carries_message_and_context() -> None:
    errors.raise_for_code(0)
    with pytest.raises(errors.OffsetOutOfRangeError) as info:
        errors.raise_for_code(1, "position 10 gone", partitions={"t-0": 10})
    assert info.value.partitions == {"t-0": 10}
    assert "position 10 gone" in str(info.value) and "OFFSET_OUT_OF_RANGE" in str(info.value)


def test_client_errors_say_where() -> None:
    err = errors.CorruptRecordError("bad crc", topic="t", partition=3, offset=42)
    assert (err.topic, err.partition, err.offset) == ("t", 3, 42)
    assert "partition 3" in str(err) and "offset 42" in str(err)
    big = errors.RecordTooLargeError("t", 1, 7, 2_000_000)
    assert "2000000" in str(big) and "max.partition.fetch.bytes" in str(big)


def test_generated_module_matches_the_table() -> None:
    # tools/gen_errors.py writes kafkaconsumer/_error_codes.py; editing either alone fails here.
    import subprocess
    import sys
    from pathlib import Path

    tool = Path(__file__).resolve().parent.parent / "tools" / "gen_errors.py"
    if not tool.exists():
        pytest.skip("not a source checkout (the tests run against an installed package)")
    proc = subprocess.run(
        [sys.executable, str(tool), "--check"], capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr


def test_generated_names_read_well() -> None:
    for cls in errors.error_codes().values():
        assert not cls.__name__.endswith(("ErrorError", "ExceptionError")), cls.__name__
    assert errors.for_code(-1) is errors.UnknownServerError
    assert errors.for_code(106) is errors.FetchSessionTopicIdError


def test_unknown_code_maps_to_one_stable_class() -> None:
    first = errors.for_code(4243)
    assert errors.for_code(4243) is first
    assert issubclass(first, errors.UnknownErrorCodeError)
    assert first.__name__ == "UnknownErrorCode4243Error"
    try:
        errors.raise_for_code(4243)
    except first as exc:  # an except clause written against the class catches later raises
        assert exc.errno == 4243
    assert errors.for_code(4244) is not first


def test_topic_authorization_failure_names_its_topics_one_way() -> None:
    many = errors.TopicAuthorizationFailedError("x", unauthorized_topics=["a", "b"])
    assert many.unauthorized_topics == frozenset({"a", "b"})
    # Call sites that only know one topic (metadata, admin) pass topic=; it counts too.
    one = errors.for_code(29)("metadata", topic="t")
    assert isinstance(one, errors.TopicAuthorizationFailedError)
    assert one.unauthorized_topics == frozenset({"t"})
    assert errors.TopicAuthorizationFailedError().unauthorized_topics == frozenset()


def test_everything_the_consumer_raises_is_exported() -> None:
    import kafkaconsumer

    public = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.KafkaError)
    }
    assert public <= set(errors.__all__)
    for name in (
        "IllegalStateError",
        "InvalidGroupIdError",
        "LogTruncationError",
        "TopicAuthorizationFailedError",
        "GroupAuthorizationFailedError",
        "FencedInstanceIdError",
        "WakeupError",
        "CommitFailedError",
        "UnknownTopicOrPartitionError",
        "AuthorizationError",
        "AuthenticationError",
    ):
        assert name in errors.__all__
        assert getattr(kafkaconsumer, name) is getattr(errors, name)
        assert name in kafkaconsumer.__all__
    from kafkaconsumer.internals.fetch.offset_fetcher import LogTruncationError

    assert LogTruncationError is errors.LogTruncationError
