"""Type stub of the reading thread's extension (``_cframe_reader.pyx``)."""

AVAILABLE: bool
PEER_CLOSED: int
CANCELLED: int

class FrameRead:
    """Bytes ``start`` to ``end`` of ``buffer`` received from socket ``fd`` on a thread of
    their own."""

    def __init__(
        self,
        fd: int,
        buffer: object,
        start: int,
        end: int,
        notify_fd: int,
        lowat_max: int = ...,
    ) -> None: ...
    def start(self) -> None: ...
    @property
    def started(self) -> bool: ...
    @property
    def done(self) -> bool: ...
    def finish(self) -> tuple[int, int]: ...
    def cancel(self) -> None: ...
