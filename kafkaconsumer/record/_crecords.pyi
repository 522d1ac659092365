"""Type stub of the Cython record decoder (``_crecords.pyx``); it mirrors ``_pyrecords``.

``tests/record/test_record_typing.py`` checks that every public name of the built extension is
declared here and that both record classes satisfy the ``ConsumerRecord`` protocol.
"""

from collections.abc import Iterable, Mapping
from typing import Any, ClassVar

from kafkaconsumer.record._common import DecodeResult

class ConsumerRecord:
    """One record as handed to the user (Java ``ConsumerRecord``)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    leader_epoch: int | None
    serialized_key_size: int
    serialized_value_size: int
    __hash__: ClassVar[None]  # type: ignore[assignment]

    def __init__(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        timestamp_type: int,
        key: Any,
        value: Any,
        headers: list[tuple[str, bytes | None]] | None,
        leader_epoch: int | None,
        serialized_key_size: int,
        serialized_value_size: int,
    ) -> None: ...
    @property
    def headers(self) -> list[tuple[str, bytes | None]]: ...
    @headers.setter
    def headers(self, value: list[tuple[str, bytes | None]]) -> None: ...
    def as_tuple(self) -> tuple[Any, ...]: ...

class ShareConsumerRecord(ConsumerRecord):
    """A record delivered to a share consumer: a ``ConsumerRecord`` plus ``delivery_count``."""

    delivery_count: int

    def __init__(self, record: Any, delivery_count: int) -> None: ...

def share_records(
    records: list[Any], start: int, stop: int, delivery_count: int
) -> list[ShareConsumerRecord]: ...
def decode_fetched_records(
    data: bytes | bytearray | memoryview | None,
    topic: str,
    partition: int,
    fetch_offset: int,
    *,
    check_crcs: bool = True,
    read_committed: bool = False,
    aborted_transactions: Iterable[Mapping[str, int]] | None = None,
) -> DecodeResult: ...
def next_offset_after_batches(data: bytes | bytearray | memoryview) -> int | None: ...
