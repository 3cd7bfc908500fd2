"""Text shown to a person: the one sanitiser every terminal line (and the page) goes through.

Model names, tensor names, file names, ``quant_method`` and GGUF strings come from files a
user was handed; printed as they are, an escape sequence in them can reset the terminal, set
its window title or hide text (``ESC ] 0 ; title BEL``, ``CR``, bidirectional overrides), and a
lone surrogate (a file name that is not UTF-8, ``"\\udc80"`` in JSON) makes the write itself
fail with ``UnicodeEncodeError``. :func:`shown` escapes each such character as a visible
``\\xNN`` / ``\\uNNNN``; :class:`ShownStream` applies it to everything written to a stream,
which is how the command line wraps standard output and standard error. Line feeds and tabs
stay: they are the layout of the output, not data.
"""
from __future__ import annotations

import re

# C0 controls but tab and line feed, DEL, C1 controls, lone surrogates, and the Unicode
# controls that reorder or hide text (bidirectional embeddings / overrides / isolates, the line
# and paragraph separators): "Trojan Source", Boucher and Anderson 2021
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _escape(m: re.Match) -> str:
    c = ord(m.group())
    return f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"


def shown(text) -> str:
    """``text`` with every control character, lone surrogate and bidirectional control escaped."""
    s = text if isinstance(text, str) else str(text)
    return _UNSAFE.sub(_escape, s)


class ShownStream:
    """A text stream that writes :func:`shown` text to the stream it wraps."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, s) -> int:
        return self._stream.write(shown(s))

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):          # flush, isatty, encoding, fileno, ... of the wrapped stream
        return getattr(self._stream, name)
