"""A worker process that holds one libnrt session for a Device in another process.

The parent starts ``python -c "…serve_fds(READ_FD, WRITE_FD)"`` with the environment the
session needs (for the device shim, ``LD_PRELOAD`` must be set before the process starts), then
sends ``(method, args)`` requests; each is answered by ``("ok", result)`` or ``("err",
exception)``. :class:`RemoteSession` is the parent's side: it has the methods of
:class:`~nrt_emu._session.LocalSession`.
"""

import os
import subprocess
import sys
import threading
from multiprocessing.connection import Connection
from typing import Mapping, Optional

_BOOT = "import sys; from nrt_emu._worker import serve_fds; serve_fds(int(sys.argv[1]), int(sys.argv[2]))"

_METHODS = ("info", "close", "memory_stats", "load", "unload", "run", "profile", "benchmark")


def _serve(inbox: Connection, outbox: Connection) -> None:
    from ._session import LocalSession

    session = None
    while True:
        try:
            method, args = inbox.recv()
        except EOFError:
            break
        if method == "exit":
            break
        try:
            if method == "open":
                session = LocalSession(*args)
                result = None
            elif method in _METHODS and session is not None:
                result = getattr(session, method)(*args)
            else:
                raise RuntimeError(f"worker: no session method {method!r}")
            reply = ("ok", result)
        except Exception as e:  # every failure goes back to the caller
            reply = ("err", e)
        try:
            outbox.send(reply)
        except Exception as e:  # an exception that does not pickle
            outbox.send(("err", RuntimeError(f"{type(reply[1]).__name__}: {reply[1]} ({e})")))
    if session is not None:
        session.close()


class RemoteSession:
    """A LocalSession in a worker process started with ``process_env`` over this process's
    environment (``None`` removes a variable)."""

    def __init__(
        self,
        process_env: Mapping[str, Optional[str]],
        session_env: Mapping[str, Optional[str]],
        mirror_log: bool = True,
    ):
        to_child_r, to_child_w = os.pipe()
        from_child_r, from_child_w = os.pipe()
        env = dict(os.environ)
        for k, v in process_env.items():
            if v is None:
                env.pop(k, None)
            else:
                env[k] = v
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-c", _BOOT, str(to_child_r), str(from_child_w)],
                pass_fds=(to_child_r, from_child_w),
                env=env,
                stdin=subprocess.DEVNULL,
            )
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self._send = Connection(to_child_w, readable=False)
        self._recv = Connection(from_child_r, writable=False)
        self._lock = threading.Lock()
        self.closed = False
        try:
            self._call("open", dict(session_env), mirror_log)
        except BaseException:
            self._stop()
            raise

    def _call(self, method: str, *args):
        with self._lock:
            if self.closed:
                raise RuntimeError("the Device is closed")
            try:
                self._send.send((method, args))
                kind, value = self._recv.recv()
            except (EOFError, OSError) as e:
                code = self._proc.wait()
                self.closed = True
                raise RuntimeError(f"the nrt-emu worker process ended (exit status {code}) during {method}") from e
        if kind == "ok":
            return value
        raise value

    def _stop(self) -> None:
        self.closed = True
        try:
            self._send.send(("exit", ()))
        except OSError:
            pass
        self._send.close()
        self._recv.close()
        try:
            self._proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()

    def close(self) -> None:
        if self.closed:
            return
        try:
            self._call("close")
        finally:
            self._stop()

    def __getattr__(self, name: str):
        if name in _METHODS:
            return lambda *args: self._call(name, *args)
        raise AttributeError(name)


def serve_fds(read_fd: int, write_fd: int) -> None:
    """The worker's main: serves requests from ``read_fd``, answers on ``write_fd``."""
    _serve(Connection(read_fd, writable=False), Connection(write_fd, readable=False))
