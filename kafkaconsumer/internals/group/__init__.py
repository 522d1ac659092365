"""Group membership: one member class per group protocol, over a shared membership base.

``group_member`` is the base every member extends (coordinator discovery, requests to the
coordinator, the group lock, close); ``consumer_group_member`` adds what a consumer needs
whatever its protocol (listener calls and KIP-983 through
``consumer_rebalance_listener_invoker``, commits through ``commit_request_manager``, the
metadata watch). The classic protocol's member is ``consumer_coordinator`` over
``abstract_coordinator`` (JoinGroup/SyncGroup/Heartbeat, client-side assignors), with its
heartbeat thread in ``heartbeat_thread`` and the session and poll-interval timers of
``heartbeat``; the KIP-848 consumer protocol's is
``consumer_protocol_coordinator``, with its state machine in ``consumer_membership_manager``
and its heartbeat thread in ``consumer_heartbeat_request_manager``.

``consumer_delegate_creator`` picks a consumer's member class from ``group.protocol``, as Java's
``ConsumerDelegateCreator`` picks a consumer delegate.
"""

from __future__ import annotations
