"""python: runs the Python code the model writes, like a notebook cell, in the plugin sandbox.

It implements the `tool-plugin` world of wit/plugin/world.wit (package airlock:plugin@0.1.0):
one tool, `python`, taking {"code": str, "timeout_ms"?: int}. Build it with plugins/python/build.sh
(componentize-py, with Python's real WASI imports); the component is plugins/python/python.wasm.

Every call runs in a fresh instance of the component, pre-initialized at build time with this
module (and the modules it imports) loaded, so a call pays no interpreter start-up and shares
nothing with the one before: only files in /workspace (the session's workspace, which the
gateway grants read-write per call) last. The gateway bounds time, memory and fuel; this module
bounds what the answer carries: stdout, stderr and the result's text are cut at MAX_TEXT
characters each, with a note saying how much was cut.
"""

import ast
import builtins
import errno
import io
import json
import linecache
import os
import sys
import traceback

# Loaded now, at build time, so the code the model writes imports them for free.
import base64  # noqa: F401
import collections  # noqa: F401
import csv  # noqa: F401
import datetime  # noqa: F401
import decimal  # noqa: F401
import fractions  # noqa: F401
import functools  # noqa: F401
import hashlib  # noqa: F401
import itertools  # noqa: F401
import math  # noqa: F401
import random  # noqa: F401
import re  # noqa: F401
import statistics  # noqa: F401
import string  # noqa: F401
import textwrap  # noqa: F401


def _load_standard_library() -> None:
    """Imports every module of the standard library this build of CPython has (packages with
    their submodules), now, at build time: componentize-py's snapshot keeps what is loaded, and
    nothing else is there at run time."""
    import pkgutil

    skipped = {"antigravity", "this", "idlelib", "tkinter", "turtle", "turtledemo", "test"}

    def wanted(name: str) -> bool:
        parts = name.split(".")
        return not (
            parts[0] in skipped
            or any(p.startswith("_") or p in ("test", "tests", "__main__") for p in parts)
        )

    def load(name: str):
        try:
            return __import__(name, fromlist=["_"])
        except BaseException:  # noqa: BLE001 - not built for WASI (ssl, processes, ...)
            return None

    for name in sorted(filter(wanted, sys.stdlib_module_names)):
        module = load(name)
        for sub in pkgutil.walk_packages(getattr(module, "__path__", []), name + "."):
            if wanted(sub.name):
                load(sub.name)


_load_standard_library()

import wit_world
from componentize_py_types import Err
from wit_world.imports import types

TOOL = "python"
CELL = "<cell>"
WORKSPACE = "/workspace"
# Characters of stdout, of stderr and of the result's repr kept each; of a traceback.
MAX_TEXT = 20_000
MAX_TRACEBACK = 8_000

DESCRIPTION = (
    "Runs Python 3 code (the standard library; no network, no packages to install) and answers "
    'JSON {"stdout", "stderr", "result"?, "error"?: {"type", "message", "traceback"}, "files"?}. '
    "Like a notebook cell: `result` is the repr of the last line when it is an expression. "
    "Each call starts a fresh interpreter (variables do not carry over); files under "
    f"{WORKSPACE} (the working directory) do, and `files` lists those the call wrote. "
    f"Output is cut at {MAX_TEXT} characters per stream. `timeout_ms` may shorten the "
    "call's time limit."
)

PARAMETERS = json.dumps(
    {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python source to run"},
            "timeout_ms": {
                "type": "integer",
                "minimum": 1,
                "description": "a shorter time limit for this call, in milliseconds",
            },
        },
        "required": ["code"],
        "additionalProperties": False,
    }
)

# errno values for "the sandbox does not let you": WASI's ENOTCAPABLE among them.
DENIED_ERRNOS = {errno.EPERM, errno.EACCES, getattr(errno, "ENOTCAPABLE", errno.EPERM)}


class Capped(io.TextIOBase):
    """A text stream keeping its first MAX_TEXT characters and counting the rest."""

    def __init__(self, name: str):
        self.name = name
        self.parts = []
        self.kept = 0
        self.cut = 0

    def writable(self) -> bool:
        return True

    def write(self, text) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        room = MAX_TEXT - self.kept
        if room > 0:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.cut += max(0, len(text) - max(room, 0))
        return len(text)

    def text(self) -> str:
        return cut_note("".join(self.parts), self.cut)


def cut_note(text: str, cut: int) -> str:
    if cut:
        text += f"\n[output cut: {cut} more characters not shown]"
    return text


def capped(text: str, limit: int) -> str:
    return cut_note(text[:limit], max(0, len(text) - limit))


def bad(message: str) -> Err:
    return Err(types.ToolError_BadArguments(message))


def parse(arguments: str) -> str:
    try:
        args = json.loads(arguments)
    except ValueError as e:
        raise bad(f"arguments are not valid JSON: {e}")
    if not isinstance(args, dict):
        raise bad(f"arguments must be a JSON object, got {type(args).__name__}")
    unknown = sorted(set(args) - {"code", "timeout_ms"})
    if unknown:
        raise bad(f"unknown properties {unknown}; the tool takes `code` and `timeout_ms`")
    code = args.get("code")
    if not isinstance(code, str):
        raise bad('missing property `code` (the Python source, a string): {"code": "1 + 1"}')
    timeout = args.get("timeout_ms")
    if timeout is not None and (type(timeout) is not int or timeout < 1):
        raise bad(f"`timeout_ms` must be a positive integer, got {json.dumps(timeout)[:80]}")
    return code


def error_of(exc: BaseException) -> dict:
    """The exception as the model reads it, with the cell's frames only."""
    shown = traceback.TracebackException.from_exception(exc)
    shown.stack = traceback.StackSummary.from_list(
        [frame for frame in shown.stack if frame.filename == CELL]
    )
    return {
        "type": type(exc).__name__,
        "message": str(exc),
        "traceback": capped("".join(shown.format()), MAX_TRACEBACK),
    }


def denied(exc: BaseException) -> bool:
    return isinstance(exc, PermissionError) or (
        isinstance(exc, OSError) and exc.errno in DENIED_ERRNOS
    )


def run(code: str) -> dict:
    stdout, stderr = Capped("<stdout>"), Capped("<stderr>")
    answer = {}
    linecache.cache[CELL] = (len(code), None, code.splitlines(True), CELL)
    if os.path.isdir(WORKSPACE):
        os.chdir(WORKSPACE)
    sys.stdout, sys.stderr = stdout, stderr
    try:
        tree = ast.parse(code, filename=CELL, mode="exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            last = ast.Expression(tree.body.pop().value)
        namespace = {"__name__": "__main__", "__builtins__": builtins}
        exec(compile(tree, CELL, "exec"), namespace)
        if last is not None:
            value = eval(compile(last, CELL, "eval"), namespace)
            if value is not None:
                answer["result"] = capped(repr(value), MAX_TEXT)
    except BaseException as exc:  # SystemExit and KeyboardInterrupt too: the cell ends, not us.
        answer["error"] = error_of(exc)
        answer["denied"] = denied(exc)
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return {"stdout": stdout.text(), "stderr": stderr.text(), **answer}


class WitWorld(wit_world.WitWorld):
    def describe(self) -> list:
        return [
            types.ToolSpec(
                name=TOOL, description=DESCRIPTION, parameters=PARAMETERS, parallel_safe=True
            )
        ]

    def call(self, name: str, arguments: str) -> str:
        if name != TOOL:
            raise Err(types.ToolError_Failed(f"unknown tool `{name}`; this plugin offers `{TOOL}`"))
        answer = run(parse(arguments))
        was_denied = answer.pop("denied", False)
        text = json.dumps(answer, ensure_ascii=False)
        if "error" not in answer:
            return text
        if was_denied:
            raise Err(types.ToolError_Denied(text))
        raise Err(types.ToolError_Failed(text))
