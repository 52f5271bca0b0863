"""Found by a breaker helper (the host out of resources, 2026-12-06): an upload to a docker kernel
whose engine's disk was full failed with ``FileTransferError: new.bin could not be copied: the
kernel's container 0123456789ab cannot be reached (500 Server Error ... no space left on
device)``: the container was there and running, its disk full. It now says the container has no
room for it, with the engine's disk-full hint; the file it would have replaced is kept.

The engine is one this test starts itself (:mod:`tests.engines`), its data root a small tmpfs
filled once the kernel runs.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.errors import FileTransferError
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport
from tests.engines import EngineUnavailable, engine_on_a_small_disk, fill_disk

#: MiB of the engine's data root: the kit's image loads (~175 MB unpacked, its tar beside it while it loads).
DATA_MIB = 450


@pytest.mark.hermes_allow_leaks("this test's engine is stopped in its teardown")
def test_an_upload_onto_a_full_container_disk_says_the_disk_is_full(docker_ready: None, first_docker_engine: str,
                                                                     tmp_path: Path) -> None:
    (tmp_path / "a.bin").write_bytes(b"a" * 300_000)
    try:
        with engine_on_a_small_disk(first_docker_engine, DATA_MIB) as engine:
            transport = make_transport("docker", docker_host=engine.url, run_id=f"full-upload-{os.getpid()}")
            try:
                kernel = start_kernel(transport)
                assert kernel.execute("import os\nos.mkdir('keep')\nopen('keep/x', 'w').write('old')").status == "ok"
                fill_disk(os.path.join(engine.root, "data", "filler"), room_bytes=100_000)
                for destination in ("new.bin", "keep/x"):
                    with pytest.raises(FileTransferError) as info:
                        kernel.upload(tmp_path / "a.bin", destination)
                    text = str(info.value)
                    assert info.value.path == destination, text
                    assert "no space left on device" in text and "the docker engine's disk is full" in text, text
                    assert "cannot be reached" not in text, text
                listing = kernel.execute("sorted(os.listdir('.')), os.listdir('keep'), open('keep/x').read()")
                assert listing.status == "ok", listing
                kernel.shutdown()
            finally:
                close_transport(transport)
                forget_closed_transports()  # its engine is stopped below: later leak checks cannot ask it
    except EngineUnavailable as exc:
        pytest.skip(str(exc))
    assert "'new.bin'" not in (listing.value or "") and listing.value.endswith("['x'], 'old')"), listing.value
    assert not engine.left, f"the engine left behind: {engine.left}"
