"""The kernel runner: the program that runs where the kernel lives.

It owns everything on the far side of the channel: the wire codec (:mod:`.frames`, which the
host imports too: one codec), bounded output capture (:mod:`.capture`), the worker that holds
the namespace and runs cells (:mod:`.worker`) in the kernel's environment (:mod:`.environ`), the supervisor that owns the channel and the
worker (:mod:`.supervisor`, with :mod:`.attach`, :mod:`.cells`, :mod:`.worker_process`), the
``/proc`` and cgroup readers (:mod:`.procfs`), and the modes (:mod:`.serve`, :mod:`.relay`,
:mod:`.client`, dispatched by :mod:`.__main__`).

It imports only the standard library, never ``pytest_hermes_kernel`` (``tests/unit/test_layout.py``
checks it), and only relative imports among its own modules: it runs where the package is not
installed, as one zipapp file built from this directory (``transports/runner_zipapp.py``), in
which it is the package ``hermes_kernel_runner``. The same pytest-xdist rule holds for its
``remote.py``. Importing this package imports none of its modules.

It runs on Python 3.8 or newer (:data:`MIN_PYTHON`; the host needs 3.10): every mode imports
this package first, so an older interpreter exits here with one line on stderr naming both
versions (a start error then shows it), before any module of newer syntax is read. This file
stays Python 2 syntax for that.
"""

import sys

#: The oldest Python the runner runs on (a kernel's interpreter may differ from the host's).
MIN_PYTHON = (3, 8)

if sys.version_info < MIN_PYTHON:
    sys.stderr.write("the hermes kernel runner needs Python %d.%d or newer; %s is Python %s\n"
                     % (MIN_PYTHON + (sys.executable or "this interpreter", sys.version.split()[0])))
    sys.exit(1)
