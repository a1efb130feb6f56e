"""Checks request bodies against the official `anthropic` SDK's request types.

Reads a JSON array of `POST /v1/messages` bodies on stdin and checks each against
`anthropic.types.MessageCreateParamsStreaming` by walking the SDK's `TypedDict`s: every key must
be one the type has, every required key must be there, and every value must be of its type (a
literal among its values, a union's value one of its members). pydantic cannot do it: it leaves
`Iterable` fields (the messages, their content) unchecked and ignores unknown keys. Prints each
problem and exits 1 when there is one; exits 0 when every body is one the SDK could have sent.
"""

import collections.abc
import json
import sys

import pydantic
import typing_extensions as t
from anthropic.types.message_create_params import MessageCreateParamsStreaming

WRAPPERS = (t.Required, t.NotRequired, t.Annotated)
SEQUENCES = (list, collections.abc.Iterable, collections.abc.Sequence)


def problems(hint, value, path):
    """What is wrong with `value` (at `path`) as a `hint`; nothing when it fits."""
    origin = t.get_origin(hint)
    if origin in WRAPPERS:
        return problems(t.get_args(hint)[0], value, path)
    if t.is_typeddict(hint):
        return typed_dict_problems(hint, value, path)
    if origin is t.Literal:
        return [] if value in t.get_args(hint) else [f"{path}: {value!r} is not one of {t.get_args(hint)}"]
    if origin is t.Union or str(origin) == "<class 'types.UnionType'>":
        tried = [problems(member, value, path) for member in t.get_args(hint)]
        if any(not found for found in tried):
            return []
        # The member it was meant to be: the one the walk got furthest into, of the right kind.
        return max(tried, key=lambda f: (len(f[0].split(": ")[0]), "another kind" not in f[0]))
    if origin in SEQUENCES or getattr(origin, "__name__", "") == "SequenceNotStr":
        if not isinstance(value, list):
            return [f"{path}: not a list"]
        (item,) = t.get_args(hint)[:1] or (object,)
        return [p for i, v in enumerate(value) for p in problems(item, v, f"{path}[{i}]")]
    if origin is dict or hint in (dict, object, t.Any):
        return [] if hint is not dict or isinstance(value, dict) else [f"{path}: not an object"]
    if hint is float:
        return [] if isinstance(value, (int, float)) and not isinstance(value, bool) else [f"{path}: not a number"]
    if isinstance(hint, type):
        # A plain type, or one of the SDK's response models (a union's members, never sent).
        fits = isinstance(value, hint) and not issubclass(hint, pydantic.BaseModel)
        fits = fits and not (hint is int and isinstance(value, bool))
        return [] if fits else [f"{path}: not a {hint.__name__}"]
    return []


def typed_dict_problems(hint, value, path):
    if not isinstance(value, dict):
        return [f"{path}: not an object"]
    fields = t.get_type_hints(hint, include_extras=True)
    for key, field in fields.items():
        literal = field
        while t.get_origin(literal) in WRAPPERS:
            literal = t.get_args(literal)[0]
        if t.get_origin(literal) is t.Literal and key in value and value[key] not in t.get_args(literal):
            return [f"{path}: {hint.__name__} is another kind"]
    found = [f"{path}.{key}: {hint.__name__} has no such field" for key in value if key not in fields]
    # `__required_keys__` misses `Required[...]` in a module with postponed annotations, as the
    # SDK's are: the hints say it.
    required = {key for key, field in fields.items() if t.get_origin(field) is t.Required}
    required |= hint.__required_keys__
    found += [f"{path}: {hint.__name__} needs {key!r}" for key in sorted(required - value.keys())]
    for key, inner in value.items():
        if key in fields:
            found += problems(fields[key], inner, f"{path}.{key}")
    return found


failed = False
for number, body in enumerate(json.load(sys.stdin), start=1):
    for problem in problems(MessageCreateParamsStreaming, body, "body"):
        failed = True
        print(f"request {number} does not fit the SDK's MessageCreateParams: {problem}")
sys.exit(1 if failed else 0)
