"""The pytest plugin (entry point ``hermes_kernel``).

One feature per module, each a plugin of its own that ``-p no:NAME`` turns off:

* ``pytest_hermes_kernel.plugin.settings``: options, ini keys, env vars, marker registration
* ``pytest_hermes_kernel.plugin.ini_keys``: a misspelled ``hermes_*`` ini key is a usage error with a did-you-mean
* ``pytest_hermes_kernel.plugin.markers``: every ``hermes_*`` marker checked before its test runs
* ``pytest_hermes_kernel.plugin.report``: header, outcome tracking, terminal summary, xdist merge
* ``pytest_hermes_kernel.plugin.fixtures``: ``hermes_transport``, ``hermes_kernel[_factory]``, ``hermes_registry``
* ``pytest_hermes_kernel.plugin.module_transports``: the transport a module's tests share for their marker's options
* ``pytest_hermes_kernel.plugin.prompt``: ``hermes_registry``'s idle clock stands still at the debugger prompt
* ``pytest_hermes_kernel.plugin.faults``: fault markers and the ``hermes_faults`` fixture
* ``pytest_hermes_kernel.plugin.scenarios``: collects the TOML scenario catalog (``pytest fixtures/``)
* ``pytest_hermes_kernel.plugin.story``: a failing test's report tells each of its kernels' story
* ``pytest_hermes_kernel.plugin.image_errors``: a missing or unbuildable image: a short report, no traceback
* ``pytest_hermes_kernel.plugin.keep``: ``--hermes-keep-failed``: a failed test's kernels outlive pytest
* ``pytest_hermes_kernel.plugin.leakcheck``: the leak checker (registered only when enabled)
* ``pytest_hermes_kernel.plugin.signals``: SIGTERM tears the run down like Ctrl-C
* ``pytest_hermes_kernel.plugin.crashes``: xdist, controller: a crashed worker's kernels are reaped
* ``pytest_hermes_kernel.plugin.xdist_split``: xdist, worker: a failure for state a shared kernel lacks names the split

Everything that imports pytest lives in this subpackage; the kernel core never does.

Every pytest start where the package is installed loads these modules, so at module level they
import only what a run that starts no kernel needs (settings, marker checks, the leak checker);
the kernel core, the fault path, the catalog and the post-mortem records are imported inside the
fixtures and hooks that use them (``tests/plugin/test_plugin_imports.py``).

May import: everything below it (kernel, containers, transports, faults, leaks, catalog, api);
never the contract suite (a sibling: both sit on top).
"""

pytest_plugins = [
    "pytest_hermes_kernel.plugin.settings",
    "pytest_hermes_kernel.plugin.markers",  # before ini_keys, which imports it (pytest 8.0-8.3: PytestAssertRewriteWarning)
    "pytest_hermes_kernel.plugin.ini_keys",
    "pytest_hermes_kernel.plugin.report",
    "pytest_hermes_kernel.plugin.faults",  # before fixtures, which imports it (else: PytestAssertRewriteWarning)
    "pytest_hermes_kernel.plugin.story",  # before fixtures too, which imports it
    "pytest_hermes_kernel.plugin.image_errors",
    "pytest_hermes_kernel.plugin.keep",  # and this one
    "pytest_hermes_kernel.plugin.prompt",  # and this one
    "pytest_hermes_kernel.plugin.module_transports",  # before fixtures, which imports it
    "pytest_hermes_kernel.plugin.fixtures",
    "pytest_hermes_kernel.plugin.leakcheck",
    "pytest_hermes_kernel.plugin.scenarios",
    "pytest_hermes_kernel.plugin.signals",
    "pytest_hermes_kernel.plugin.crashes",
    "pytest_hermes_kernel.plugin.xdist_split",
]
