"""The library's log, read back: each :class:`~nrt_emu.Device` points the runtime's ``NRT`` log
lines at a file of its own (``NEURON_RT_LOG_LOCATION_NRT``), so the message of a failed call —
the ERROR line the library writes for it — becomes the message of the
:class:`~nrt_emu.NrtError`. Every line read is also written to ``sys.stderr``, where it would
have gone, so nothing the library says is lost.

Lines are in libnrt's layout (docs/c-api.md §7): date, time, ``pid:tid``, level,
``module:function`` padded to 40 columns, message. The last ERROR line of each thread is kept
until that thread asks for it, so concurrent callers get their own message.
"""

import os
import re
import sys
import threading
from typing import Dict, Optional, Tuple

_LINE = re.compile(r"^\S+ \S+ +\d+:(\d+) +([A-Z]+) +[A-Z]+:(.*)$")


class LogTap:
    """Reads the log file ``path`` from where it last stopped."""

    def __init__(self, path: Optional[str], mirror: bool = True):
        self.path = path
        self.mirror = mirror
        self._offset = 0
        self._partial = b""
        self._last_error: Dict[int, Tuple[str, str]] = {}
        self._lock = threading.Lock()

    def drain(self) -> None:
        """Reads the lines written since the last call."""
        if self.path is None:
            return
        with self._lock:
            try:
                size = os.stat(self.path).st_size
            except OSError:
                return
            if size <= self._offset:
                return
            with open(self.path, "rb") as f:
                f.seek(self._offset)
                data = self._partial + f.read(size - self._offset)
            self._offset = size
            *lines, self._partial = data.split(b"\n")
            for raw in lines:
                line = raw.decode("utf-8", "replace")
                if self.mirror:
                    sys.stderr.write(line + "\n")
                m = _LINE.match(line)
                if m and m.group(2) == "ERROR":
                    self._last_error[int(m.group(1))] = (m.group(3), line)

    def error_of(self, function: str, status: str) -> str:
        """The message of this thread's last ERROR line, if it came from ``function``."""
        self.drain()
        with self._lock:
            entry = self._last_error.pop(threading.get_native_id(), None)
        if self.path is None:
            return "the library logged the reason (NEURON_RT_LOG_LOCATION_NRT is not a file here)"
        if entry is None or not entry[0].startswith(function):
            return "the library logged no message for this call"
        message = entry[0][len(function) :].strip()
        prefix = status + ": "
        return message[len(prefix) :] if message.startswith(prefix) else message
