"""What a probe's snapshot is: ``{identity: description}``, and how one names a part it could not look at."""

from __future__ import annotations

Snapshot = dict[str, str]

#: The key prefix of a snapshot entry that says a part could not be looked at:
#: ``UNCHECKED + what -> why`` (``what``: a probe's kind or a transport's :meth:`describe` line).
#: The checker reports such a part as not checked instead of reading it as empty.
UNCHECKED = "unchecked|"
