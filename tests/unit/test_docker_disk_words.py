"""The docker runner log's disk words (:func:`pytest_hermes_kernel.transports.docker.probes.disk_words`)."""

from __future__ import annotations

from pytest_hermes_kernel.transports.docker.probes import disk_words


def test_a_full_disk_is_named_and_its_line_is_not_shown_as_log() -> None:
    text, words = disk_words("Traceback ...\nHERMES-DISK-FREE 12", "/tmp/hermes-kernels")
    assert text == "Traceback ..."
    assert words.startswith("the container's disk has 12 KiB free at /tmp/hermes-kernels") and "disk is full" in words


def test_a_disk_with_room_or_no_df_says_nothing() -> None:
    assert disk_words("log line\nHERMES-DISK-FREE 900000", "/k") == ("log line", "")
    assert disk_words("log line", "/k") == ("log line", "")  # an image without df or awk
    assert disk_words("HERMES-DISK-FREE x", "/k") == ("HERMES-DISK-FREE x", "")
