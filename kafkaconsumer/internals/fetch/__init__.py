"""Fetching, in the shape of Java's ``consumer.internals`` fetch classes.

- ``fetcher``: :class:`~.fetcher.Fetcher` (Java ``Fetcher`` / ``AbstractFetch``) builds Fetch
  requests per broker over fetch sessions (``fetch_session``), on the second connection after a
  seek, and turns responses into :class:`~.completed_fetch.CompletedFetch` pieces.
- ``fetch_buffer``: :class:`~.fetch_buffer.FetchBuffer` queues those pieces between the thread
  that reads the responses and the user's thread.
- ``fetch_collector``: :class:`~.fetch_collector.FetchCollector` hands buffered records out on
  the user's thread (positions, ``max.poll.records``, pausing), decoded by a
  :class:`~.decoders.RecordDecoder`: record objects (``decoders``) or Arrow
  (``arrow_decoder``, imported only by ``poll_arrow()``).
- ``offset_fetcher``: ListOffsets and OffsetForLeaderEpoch (resets, validation, lookups).
- ``fetch_config``: the fetch-related configuration, read once.
- Share groups (KIP-932): ``share_consume_request_manager`` (ShareFetch and ShareAcknowledge per
  broker, Java ``ShareConsumeRequestManager``) over ``share_session_handler`` (share sessions
  and their epochs), ``share_completed_fetch`` (acquired ranges mapped onto decoded records,
  delivery counts, gaps) and ``acknowledgements`` (``AcknowledgeType``, acknowledgement batches).
"""
