"""Group membership, one module per Java class.

``abstract_coordinator`` and ``consumer_coordinator`` are the classic protocol's member
(JoinGroup/SyncGroup/Heartbeat, client-side assignors); ``consumer_membership_manager`` and
``consumer_heartbeat_request_manager`` the KIP-848 consumer protocol's state machine and its
heartbeat thread; ``heartbeat`` the classic protocol's session and poll-interval timers.
"""

from __future__ import annotations
