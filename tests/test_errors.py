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
    assert info.value.partitions == {"t-0": 10}  # type: ignore[attr-defined]
    assert "position 10 gone" in str(info.value) and "OFFSET_OUT_OF_RANGE" in str(info.value)


def test_client_errors_say_where() -> None:
    err = errors.CorruptRecordError("bad crc", topic="t", partition=3, offset=42)
    assert (err.topic, err.partition, err.offset) == ("t", 3, 42)
    assert "partition 3" in str(err) and "offset 42" in str(err)
    big = errors.RecordTooLargeError("t", 1, 7, 2_000_000)
    assert "2000000" in str(big) and "max.partition.fetch.bytes" in str(big)
