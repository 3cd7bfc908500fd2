"""The cache of compiled regimes: data only, in a private folder, verified before use.

What it keeps: the library's vocabulary (:func:`vramsym.engine.options.interface_of`), its digest
and the definitions compiled on this machine (:mod:`vramsym.engine.units`), and each compiled
regime (:func:`vramsym.engine.assemble.assemble`), as JSON. What keys them: the
content of every file of the installed package and of the formula files (bundled and
``--formulas``), vramsym's version and Python's, so any change to anything that can
change an answer misses the cache. How it is trusted: the folder must be a directory
owned by the user with no access for anyone else (created 0700; otherwise a warning and
no cache), and every entry carries a MAC (keyed BLAKE2b, RFC 7693's keyed mode) under a
random 32-byte secret kept in that folder (0600); an entry that fails the check, or that
does not parse, is rebuilt.
At most KEEP keys are kept: the oldest go when a new key is first written.

The digest and the compiled definitions shipped inside the package (:func:`shipped`) are a
second, read-only source, used when the user's cache has no entry.

``VRAMSYM_NO_CACHE=1`` turns both off; ``VRAMSYM_CACHE_DIR`` moves it (``~`` expanded).
"""
from __future__ import annotations

import json
import os
import stat
import sys

try:                     # the builtin modules: no OpenSSL load at start-up
    from _blake2 import blake2b
    from _operator import _compare_digest as compare_digest
except ImportError:      # pragma: no cover - other Python implementations
    from hashlib import blake2b
    from hmac import compare_digest

from ..catalog.paths import formulas_path
from ..version import __version__

_warned = set()


def _warn(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        print(f"vramsym: warning: {msg}; running without the cache", file=sys.stderr)


def cache_dir() -> str:
    env = os.environ.get("VRAMSYM_CACHE_DIR")
    if env:
        return os.path.expanduser(env)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.expanduser(base), "vramsym")


def _mac(secret: bytes, body: bytes) -> bytes:
    return blake2b(body, key=secret, digest_size=32).hexdigest().encode()


def _private(path: str, kind) -> bool:
    """``path`` exists, is of ``kind`` (not a link), is ours, and nobody else may touch it."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return kind(st.st_mode) and st.st_uid == os.getuid() and not (st.st_mode & 0o077)


def _folder():
    if os.environ.get("VRAMSYM_NO_CACHE"):
        return None
    d = cache_dir()
    try:
        os.makedirs(d, mode=0o700, exist_ok=True)
    except OSError as e:
        _warn(f"cannot create the cache folder {d}: {e.strerror or e}")
        return None
    try:
        st = os.lstat(d)
        if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and st.st_mode & 0o077:
            os.chmod(d, 0o700)    # our own folder from an earlier version: make it private
    except OSError:
        pass
    if not _private(d, stat.S_ISDIR):
        _warn(f"the cache folder {d} is not a private folder of this user (it must be owned by you, "
              f"mode 0700, not a link)")
        return None
    return d


def _secret(d: str):
    p = os.path.join(d, "secret")
    if not os.path.lexists(p):
        try:
            fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as fh:
                fh.write(os.urandom(32))
        except FileExistsError:
            pass
        except OSError as e:
            _warn(f"cannot write the cache secret {p}: {e.strerror or e}")
            return None
    if not _private(p, stat.S_ISREG):
        _warn(f"the cache secret {p} is not a private file of this user")
        return None
    try:
        with open(p, "rb") as fh:
            key = fh.read()
    except OSError:
        return None
    return key if len(key) == 32 else None


def _files(root: str, suffixes, rel: str = ""):
    """The files under ``root`` whose names end with ``suffixes``, sorted, as (path relative to
    ``root`` with '/', path); ``__pycache__`` and links to folders are skipped."""
    out = []
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return out
    for e in entries:
        if e.is_dir(follow_symlinks=False):
            if e.name != "__pycache__":
                out += _files(e.path, suffixes, rel + e.name + "/")
        elif e.name.endswith(suffixes):
            out.append((rel + e.name, e.path))
    return out


def _labelled():
    """(label, path) of every file that can change a cached entry: the package's code and grammar
    (labelled by their path inside the package) and the bundled formula files (by their path
    inside the formula folder, wherever it lies)."""
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))   # the package folder
    fdir = os.path.realpath(formulas_path())
    inside = fdir.startswith(here + os.sep)
    skip = fdir[len(here) + 1:].replace(os.sep, "/") + "/" if inside else None
    out = [(b"pkg/" + r.encode("utf-8", "surrogateescape"), f)
           for r, f in _files(here, (".py", ".lark", ".vram", "units.txt")) if not (skip and r.startswith(skip))]
    out += [(b"formulas/" + r.encode("utf-8", "surrogateescape"), f) for r, f in _files(fdir, (".vram", "units.txt"))]
    return out


def _content(f: str) -> bytes:
    try:
        with open(f, "rb") as fh:
            return blake2b(fh.read(), digest_size=32).digest()
    except OSError:
        return b"<unreadable>"


def code_key(extra=()) -> str:
    """The user cache's key: every file that can change a cached entry and both versions.

    The package's code and grammar and the bundled formula files count by their path inside the
    package or the formula folder and their content (about 80 files, read and hashed in 1-2 ms),
    so an edit or an upgrade misses the cache while a reinstall of the same files, or the same
    version installed in another environment, keeps it valid (a key made from the files' status
    changed with every reinstall). The ``--formulas`` files (``extra``: ``*.vram`` and
    ``units.txt``), which users edit between runs, count by their path and content. (Model, GPU
    and number-format catalogs are read at run time and never cached.)"""
    h = blake2b(f"vramsym {__version__} | python {sys.version} | {sys.implementation.cache_tag}".encode(),
                digest_size=20)
    for label, f in _labelled():
        h.update(label + b"\0" + _content(f) + b"\n")
    for e in extra:
        e = str(e)
        for f in ([f for _, f in _files(e, (".vram", "units.txt"))] if os.path.isdir(e) else [e]):
            h.update(f.encode("utf-8", "surrogateescape") + b"\0" + _content(f))
    return h.hexdigest()


# What a compiled entry is made from (:func:`vramsym.precompile.write`): the formula files
# and the code that parses, composes and compiles them, as paths inside the package (a folder ends
# with '/'); tests/test_precompiled.py checks that compiling imports no other module of the package.
COMPILE_INPUTS = ("lang/", "engine/compiler.py", "engine/regimes.py", "engine/units.py", "engine/unit_keys.py",
                  "engine/options.py", "records.py", "errors.py", "numbers.py", "version.py",
                  "catalog/paths.py", "__init__.py", "engine/__init__.py", "catalog/__init__.py")


# What a shipped page group is made from besides (:func:`vramsym.printers.calculator.make_group`):
# the printers that print it and what they import; tests/test_precompiled.py checks the imports.
PAGE_INPUTS = ("printers/__init__.py", "printers/codegen.py", "printers/latex.py", "printers/page_files.py",
               "catalog/capacity.py", "engine/results.py", "engine/steps.py")


def shipped_key(page: bool = False) -> str:
    """The key of the compiled regimes shipped inside the package (see :func:`shipped`): the
    content of what they are compiled from (:data:`COMPILE_INPUTS` and the bundled formula
    files, by their paths inside the package and the formula folder, so the same wherever it is
    installed) and vramsym's version; no Python version, since the shipped entries hold source,
    not bytecode. The repository ships them (generated, committed), so a change to the
    package's other code (its printers, its command line) leaves them valid. ``page``: the key of
    the shipped page groups, which also covers the printers that print them (:data:`PAGE_INPUTS`),
    so an edit there makes only those stale."""
    inputs = COMPILE_INPUTS + PAGE_INPUTS if page else COMPILE_INPUTS
    h = blake2b(f"vramsym {__version__} | shipped{' page' if page else ''}".encode(), digest_size=20)
    for label, f in _labelled():
        if label.startswith(b"pkg/") and not label[4:].decode("utf-8", "surrogateescape").startswith(inputs):
            continue
        h.update(label + b"\0" + _content(f))
    return h.hexdigest()


SHIPPED = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "_precompiled")


SHIPPED_PAGE = os.path.join(SHIPPED, "page")     # the shipped page groups, with their own KEY


def shipped(key, name: str, folder: str = None):
    """Entry ``name`` from the compiled regimes that the installed package ships (generated by
    :mod:`vramsym.precompile` and committed, one xz-compressed JSON file each), or None.
    They are package files, trusted like its code, and used only while their key (the content of
    the bundled formulas and of the code that compiles them, :func:`shipped_key`; ``key`` is a
    callable that computes it, once) matches
    the files that are installed now: a stale copy is never read. ``VRAMSYM_NO_CACHE=1`` turns
    them off too (every regime is compiled afresh). The page groups shipped (``folder``
    :data:`SHIPPED_PAGE`) work alike under their own key (``shipped_key(page=True)``)."""
    if not key or os.environ.get("VRAMSYM_NO_CACHE"):
        return None
    folder = folder or SHIPPED
    try:
        with open(os.path.join(folder, "KEY"), encoding="ascii") as fh:
            stored = fh.read().strip()
        if stored != key():
            return None
        with open(os.path.join(folder, name + ".json.xz"), "rb") as fh:
            packed = fh.read()
    except (OSError, ValueError):
        return None
    import lzma     # only on a cold path: the user cache keeps what is read here
    try:
        return json.loads(lzma.decompress(packed))
    except (lzma.LZMAError, ValueError, EOFError):     # a damaged file: compiled afresh
        return None


def entry_name(*parts) -> str:
    return blake2b(json.dumps(parts, sort_keys=True).encode(), digest_size=16).hexdigest()


_TRUSTED: dict = {}


def _trusted():
    """(folder, secret) once per process and folder: the ownership checks and the secret's read
    are not repeated for every entry."""
    k = (os.environ.get("VRAMSYM_NO_CACHE"), cache_dir())
    if k not in _TRUSTED:
        d = _folder()
        _TRUSTED[k] = (d, d and _secret(d))
    return _TRUSTED[k]


def get(key: str, name: str):
    """The verified payload of entry ``name`` under ``key``, or None (missing, corrupt, tampered)."""
    d, secret = _trusted()
    if not secret:
        return None
    p = os.path.join(d, key, name + ".json")
    try:
        with open(p, "rb") as fh:
            mac, _, payload = fh.read().partition(b"\n")
    except OSError:
        return None
    if not compare_digest(mac, _mac(secret, payload)):
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


def put(key: str, name: str, payload) -> None:
    """Store ``payload`` (JSON data) as entry ``name`` under ``key``; failures only cost speed."""
    d, secret = _trusted()
    if not secret:
        return
    folder = os.path.join(d, key)
    try:
        if not os.path.isdir(folder):
            _prune(d, keep=key)
            os.mkdir(folder, 0o700)
        body = json.dumps(payload, separators=(",", ":")).encode()
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(_mac(secret, body) + b"\n" + body)
        os.replace(tmp, os.path.join(folder, name + ".json"))
    except OSError:
        pass


def remembered(key, name: str, make, accept=lambda payload: True):
    """Entry ``name`` under ``key`` if it is there and ``accept`` takes it, else ``make()``, stored
    for the next time; with ``key`` None (no cache), ``make()`` alone."""
    if key is not None:
        hit = get(key, name)
        if hit is not None and accept(hit):
            return hit
    out = make()
    if key is not None:
        put(key, name, out)
    return out


KEEP = 8


def _prune(d: str, keep: str) -> None:
    """Keep the entries of the most recently used keys (other versions of vramsym or of the
    formulas, other ``--formulas`` sets), at most KEEP with the new one; remove the rest."""
    import shutil       # only when a new key is written: not on the warm path
    dirs = []
    for name in os.listdir(d):
        child = os.path.join(d, name)
        if os.path.islink(child):
            continue
        if os.path.isdir(child) and name != keep:
            dirs.append((os.stat(child).st_mtime, child))
        elif name.endswith((".pickle", ".py", ".tmp")) and os.path.isfile(child):   # earlier layouts
            try:
                os.unlink(child)
            except OSError:
                pass
    for _, child in sorted(dirs, reverse=True)[KEEP - 1:]:
        shutil.rmtree(child, ignore_errors=True)
