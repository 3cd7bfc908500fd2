"""The cache of compiled regimes: data only, in a private folder, verified before use.

What it keeps: the library's vocabulary (:func:`vramsym.options.interface_of`) and each
compiled regime (:func:`vramsym.compiled.compile_regime`), as JSON. What keys them: the
content of every file of the installed package and of the formula files (bundled and
``--formulas``), vramsym's version and Python's, so any change to anything that can
change an answer misses the cache. How it is trusted: the folder must be a directory
owned by the user with no access for anyone else (created 0700; otherwise a warning and
no cache), and every entry carries an HMAC-SHA256 under a random secret kept in that
folder (0600); an entry that fails the check, or that does not parse, is rebuilt.
At most KEEP keys are kept: the oldest go when a new key is first written.

``VRAMSYM_NO_CACHE=1`` turns it off; ``VRAMSYM_CACHE_DIR`` moves it (``~`` expanded).
"""
from __future__ import annotations

import hashlib
import hmac
import json
import os
import stat
import sys
from pathlib import Path

from . import __version__

_warned = set()


def _warn(msg: str) -> None:
    if msg not in _warned:
        _warned.add(msg)
        print(f"vramsym: warning: {msg}; running without the cache", file=sys.stderr)


def cache_dir() -> Path:
    env = os.environ.get("VRAMSYM_CACHE_DIR")
    if env:
        return Path(os.path.expanduser(env))
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.path.expanduser(base)) / "vramsym"


def _private(path: Path, kind) -> bool:
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
        d.mkdir(mode=0o700, parents=True, exist_ok=True)
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


def _secret(d: Path):
    p = d / "secret"
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
        key = p.read_bytes()
    except OSError:
        return None
    return key if len(key) == 32 else None


def _files(root: Path, suffixes):
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(n for n in dirnames if n != "__pycache__")
        for f in sorted(filenames):
            if f.endswith(suffixes):
                out.append(os.path.join(dirpath, f))
    return out


def code_key(extra=()) -> str:
    """Hash of everything that can change an answer: the package's files (code, grammar,
    bundled formulas), the formula files, ``extra`` formula files, and both versions."""
    from .paths import formulas_dir
    here = Path(__file__).resolve().parent
    h = hashlib.sha256(f"vramsym {__version__} | python {sys.version} | {sys.implementation.cache_tag}".encode())
    files = _files(here, (".py", ".lark", ".vram", ".txt", ".json"))
    fdir = formulas_dir()
    if here not in fdir.parents:
        files += _files(fdir, (".vram", ".txt", ".json"))
    for e in extra:
        p = Path(e)
        files += _files(p, (".vram", ".txt", ".json")) if p.is_dir() else [str(p)]
    for f in files:
        h.update(f.encode("utf-8", "surrogateescape") + b"\0")
        try:
            with open(f, "rb") as fh:
                h.update(hashlib.sha256(fh.read()).digest())
        except OSError:
            h.update(b"<unreadable>")
    return h.hexdigest()[:40]


def entry_name(*parts) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:32]


def get(key: str, name: str):
    """The verified payload of entry ``name`` under ``key``, or None (missing, corrupt, tampered)."""
    d = _folder()
    secret = d and _secret(d)
    if not secret:
        return None
    p = d / key / f"{name}.json"
    try:
        with open(p, "rb") as fh:
            mac, _, payload = fh.read().partition(b"\n")
    except OSError:
        return None
    if not hmac.compare_digest(mac, hmac.new(secret, payload, hashlib.sha256).hexdigest().encode()):
        return None
    try:
        return json.loads(payload)
    except ValueError:
        return None


def put(key: str, name: str, payload) -> None:
    """Store ``payload`` (JSON data) as entry ``name`` under ``key``; failures only cost speed."""
    d = _folder()
    secret = d and _secret(d)
    if not secret:
        return
    folder = d / key
    try:
        if not folder.is_dir():
            _prune(d, keep=key)
            folder.mkdir(mode=0o700, exist_ok=True)
        body = json.dumps(payload, separators=(",", ":")).encode()
        mac = hmac.new(secret, body, hashlib.sha256).hexdigest().encode()
        tmp = folder / f".{name}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as fh:
            fh.write(mac + b"\n" + body)
        os.replace(tmp, folder / f"{name}.json")
    except OSError:
        pass


KEEP = 8


def _prune(d: Path, keep: str) -> None:
    """Keep the entries of the most recently used keys (other versions of vramsym or of the
    formulas, other ``--formulas`` sets), at most KEEP with the new one; remove the rest."""
    import shutil
    dirs = []
    for child in d.iterdir():
        if child.is_symlink():
            continue
        if child.is_dir() and child.name != keep:
            dirs.append((child.stat().st_mtime, child))
        elif child.suffix in (".pickle", ".py", ".tmp") and child.is_file():   # earlier layouts
            try:
                child.unlink()
            except OSError:
                pass
    for _, child in sorted(dirs, reverse=True)[KEEP - 1:]:
        shutil.rmtree(child, ignore_errors=True)
