"""The exceptions of the package: :class:`NrtError` for every failed ``NRT_STATUS`` call, and
:class:`InputError` for arrays that do not fit a model's inputs."""

from typing import Optional


class NrtError(Exception):
    """A libnrt call failed.

    ``status`` is the status name (``"NRT_INVALID"``), ``code`` its value, ``function`` the C
    function that returned it and ``message`` what the library said about it (its ERROR log
    line).
    """

    def __init__(self, status: str, code: int, message: str, function: Optional[str] = None):
        self.status = status
        self.code = code
        self.message = message
        self.function = function
        where = f"{function}: " if function else ""
        super().__init__(f"{where}{status} ({code}): {message}")

    def __reduce__(self):
        # Rebuilt from its fields when it crosses from a worker process.
        return (type(self), (self.status, self.code, self.message, self.function))


class InputError(NrtError, ValueError):
    """Arrays that do not fit a model's inputs (unknown or missing name, wrong dtype or shape),
    refused before any library call, with the status libnrt gives bad input:
    ``NRT_INVALID``."""

    def __init__(self, message: str, function: Optional[str] = "model()"):
        super().__init__("NRT_INVALID", 2, message, function)

    def __reduce__(self):
        return (type(self), (self.message, self.function))
