"""wordcount-py: an Airlock tool plugin written in Python, built with componentize-py.

It implements the `tool-plugin` world of wit/plugin/world.wit (package airlock:plugin@0.1.0):
one tool, `wordcount`, that counts the words and characters of a text. Build it with
plugins/wordcount-py/build.sh; the component is plugins/wordcount-py/wordcount-py.wasm.

Built by default with its WASI imports stubbed out (see build.sh): print(), time and the OS's
randomness trap, so report through the imported `log`. A Python exception other than the
`Err(ToolError)` raised here traps too (the host reports TRAP).
"""

import json

import wit_world
from componentize_py_types import Err
from wit_world.imports import log, types

TOOL = "wordcount"

PARAMETERS = json.dumps(
    {
        "type": "object",
        "properties": {"text": {"type": "string"}},
        "required": ["text"],
    }
)


def _bad(message: str) -> Err:
    return Err(types.ToolError_BadArguments(message))


def _count(arguments: str) -> dict:
    try:
        args = json.loads(arguments)
    except ValueError as e:
        raise _bad(f"arguments are not valid JSON: {e}")
    if not isinstance(args, dict):
        raise _bad(f"arguments must be a JSON object, got {type(args).__name__}")
    if "text" not in args:
        raise _bad("missing required property `text` (a string)")
    text = args["text"]
    if not isinstance(text, str):
        raise _bad(f"property `text` must be a string, got {json.dumps(text)[:80]}")
    # Words are maximal runs of non-whitespace; characters are Unicode code points.
    return {"words": len(text.split()), "characters": len(text)}


class WitWorld(wit_world.WitWorld):
    def describe(self) -> list:
        return [
            types.ToolSpec(
                name=TOOL,
                description=(
                    "Counts the words (runs of non-whitespace) and characters (Unicode code "
                    "points) of `text`; returns JSON {\"words\": N, \"characters\": N}."
                ),
                parameters=PARAMETERS,
                parallel_safe=True,
            )
        ]

    def call(self, name: str, arguments: str) -> str:
        log.log(log.Level.INFO, f"call {name} ({len(arguments)} bytes of arguments)")
        if name != TOOL:
            raise Err(types.ToolError_Failed(f"unknown tool `{name}`; this plugin offers `{TOOL}`"))
        return json.dumps(_count(arguments))
