"""A failed runner's disk words (:func:`pytest_hermes_kernel.transports.detached.disk_words`)."""

from __future__ import annotations

from pytest_hermes_kernel.transports.detached import disk_words


def test_a_full_disk_is_named_and_its_line_is_not_shown_as_log() -> None:
    text, words = disk_words("Traceback ...\nHERMES-DISK-FREE 12", "/tmp/k", "the container's disk", "Hint: free it")
    assert text == "Traceback ..."
    assert words == "the container's disk has 12 KiB free at /tmp/k: the kernel's files cannot be written there. Hint: free it"


def test_a_disk_with_room_or_no_df_says_nothing() -> None:
    assert disk_words("log line\nHERMES-DISK-FREE 900000", "/k", "d", "h") == ("log line", "")
    assert disk_words("log line", "/k", "d", "h") == ("log line", "")  # a host without df or awk
    assert disk_words("HERMES-DISK-FREE x", "/k", "d", "h") == ("HERMES-DISK-FREE x", "")
