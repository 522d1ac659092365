"""Type stub of the compiled Avro decoder (``_cavro.pyx``), used by ``formats.avro_columns``."""

from collections.abc import Callable
from typing import Any

import pyarrow as pa

class AvroDataError(ValueError):
    """The payload is not valid Avro binary of the writer schema."""

class Builder:
    """One Arrow column being built."""

    length: int
    arrow_type: pa.DataType
    def append_default(self, value: Any) -> int: ...
    def finish(self) -> pa.Array: ...
    def reset(self) -> None: ...

class FixedBuilder(Builder):
    kind: str
    def __init__(self, arrow_type: pa.DataType, kind: str) -> None: ...

class BinaryBuilder(Builder):
    text: bool
    def __init__(self, arrow_type: pa.DataType, text: bool) -> None: ...

class StructBuilder(Builder):
    children: list[Builder]
    def __init__(self, arrow_type: pa.DataType, children: list[Builder]) -> None: ...

class ListBuilder(Builder):
    child: Builder
    keys: Builder | None
    def __init__(
        self, arrow_type: pa.DataType, child: Builder, keys: Builder | None = None
    ) -> None: ...

class Node:
    """Reads one writer value and appends the reader's value."""

class LongNode(Node):
    def __init__(self, out: FixedBuilder) -> None: ...

class BoolNode(Node):
    def __init__(self, out: FixedBuilder) -> None: ...

class FloatNode(Node):
    def __init__(self, out: FixedBuilder, width: int) -> None: ...

class NullNode(Node):
    def __init__(self, out: Builder) -> None: ...

class BytesNode(Node):
    def __init__(self, out: BinaryBuilder) -> None: ...

class EnumNode(Node):
    def __init__(self, out: BinaryBuilder, symbols: list[bytes | None]) -> None: ...

class RecordNode(Node):
    def __init__(
        self, out: StructBuilder, steps: list[Node], defaults: list[tuple[Builder, Any]]
    ) -> None: ...

class UnionNode(Node):
    def __init__(self, out: Builder, branches: list[Node | None]) -> None: ...

class ArrayNode(Node):
    def __init__(self, out: ListBuilder, item: Node, keys: BinaryBuilder | None = None) -> None: ...

class SkipNode(Node):
    def __init__(self, kind: int, size: int = 0, parts: list[Node] | None = None) -> None: ...

def decode(
    plans: dict[int, Node],
    plain: Node | None,
    builders: list[Builder],
    payloads: list[Any],
    on_other: Callable[[int], None],
) -> None: ...
def append_value(builder: Builder, value: Any) -> None: ...
def append_null(builder: Builder) -> None: ...
