"""Where the bundled data lives: inside the wheel, or beside the package in a checkout.

Plain strings and ``os.path`` (pathlib costs a start-up import the warm path avoids)."""
from __future__ import annotations

import os
import stat

from ..errors import InputError

_HERE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))   # the package folder


_FORMULAS: list = []


def formulas_path() -> str:
    """The bundled formulas folder: inside the package when installed as a wheel, else beside it
    (a checkout). Found once per process (the package does not move under a running process;
    every evaluation asks for it)."""
    if not _FORMULAS:
        installed = os.path.join(_HERE, "formulas")
        _FORMULAS.append(installed if os.path.isdir(installed) else os.path.join(os.path.dirname(_HERE), "formulas"))
    return _FORMULAS[0]


def read_text(path: str) -> str:
    with open(path, encoding="utf-8") as fh:
        return fh.read()


# ---- files a user gives (config.json, checkpoint headers, GGUF, the Hub cache's refs) ----

def _kind(mode) -> str:
    if stat.S_ISDIR(mode):
        return "a folder"
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a plain file"


def inside(path, root) -> bool:
    """Whether ``path``'s real path (symlinks resolved) is ``root``'s real path or below it."""
    real, top = os.path.realpath(path), os.path.realpath(root)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def open_member(path, root=None, what="file"):
    """``path`` opened for reading in binary, and its size: ``(file, size)``.

    Refused with an :class:`~vramsym.errors.InputError` naming ``path`` (never opened, never
    read) when its real path is outside ``root`` (a symlink out of the folder the user gave),
    when it does not exist or is a dangling symlink, and when it is not a regular file (a FIFO,
    a device, a socket, a folder). It is opened non-blocking (a FIFO swapped in after the check
    cannot hang the open) and checked again on the open descriptor."""
    path = os.fspath(path)
    if root is not None and not inside(path, root):
        raise InputError(f"{what} '{path}' is a symbolic link to a file outside '{root}': refused "
                         f"(vramsym reads only files inside the folder it is given; copy the file in)")
    try:
        st = os.stat(path)
    except FileNotFoundError:
        if os.path.islink(path):
            raise InputError(f"{what} '{path}' is a dangling symbolic link (its target does not exist): "
                             f"not a regular file (an incomplete download?)") from None
        raise InputError(f"{what} '{path}' does not exist") from None
    except OSError as e:
        raise InputError(f"cannot read {what} '{path}': {e.strerror or type(e).__name__}") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"{what} '{path}' is {_kind(st.st_mode)}, not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    real = os.path.realpath(path)
    try:
        fd = os.open(real, flags | getattr(os, "O_NOFOLLOW", 0))
    except OSError as e:
        raise InputError(f"cannot read {what} '{path}': {e.strerror or type(e).__name__} "
                         f"(did it change while it was read?)") from None
    try:
        fst = os.fstat(fd)
        if not stat.S_ISREG(fst.st_mode):
            raise InputError(f"{what} '{path}' is {_kind(fst.st_mode)}, not a regular file")
        if (fst.st_dev, fst.st_ino) != (st.st_dev, st.st_ino):
            raise InputError(f"{what} '{path}' changed while it was read: refused")
        return os.fdopen(fd, "rb"), fst.st_size
    except BaseException:
        os.close(fd)
        raise


def read_bounded(path, max_bytes, root=None, what="file", size_hint="") -> bytes:
    """The bytes of ``path`` (checked as :func:`open_member` does), at most ``max_bytes`` of them:
    a larger file (or one that grows while it is read) is an :class:`~vramsym.errors.InputError`."""
    f, size = open_member(path, root, what)
    too_big = InputError(f"{what} '{os.fspath(path)}' is larger than {max_bytes:,} bytes{size_hint}")
    with f:
        if size > max_bytes:
            raise too_big
        try:
            data = f.read(max_bytes + 1)
        except OSError as e:
            raise InputError(f"cannot read {what} '{os.fspath(path)}': {e.strerror or type(e).__name__}") from None
    if len(data) > max_bytes:
        raise too_big
    return data
