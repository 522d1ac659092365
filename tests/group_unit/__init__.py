"""Unit tests of the group pieces: assignors, consumer protocol encoding, heartbeat, listener."""
