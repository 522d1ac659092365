"""Type stub of the reading thread's extension (``_cframe_reader.pyx``)."""

AVAILABLE: bool
PEER_CLOSED: int
CANCELLED: int
NEEDS_BUFFER: int

class FrameRead:
    """Bytes ``start`` to ``end`` of ``buffer`` received from socket ``fd`` on a thread of
    their own."""

    buffer: object
    whole_response: bool

    def __init__(
        self,
        fd: int,
        buffer: object,
        start: int,
        end: int,
        notify_fd: int,
        lowat_max: int = ...,
        whole_response: bool = ...,
    ) -> None: ...
    def start(self) -> None: ...
    @property
    def started(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    @property
    def receiving(self) -> bool: ...
    def finish(self) -> tuple[int, int]: ...
    def cancel(self) -> None: ...
    @property
    def size(self) -> int: ...
    @property
    def size_bytes_read(self) -> int: ...
