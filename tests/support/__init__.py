"""Test-only support code: the scripted in-process fake broker (:mod:`tests.support.fake_broker`)."""
