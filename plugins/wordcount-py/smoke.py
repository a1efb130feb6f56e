"""Smoke test for wordcount-py.wasm with the PyPI `wasmtime` package (run by build.sh --check).

Lists the component's imports and exports, then instantiates it the way the gateway does
(WASI p2 with nothing granted, plus a `log` import) and calls `describe` and `call`.
Usage: smoke.py path/to/wordcount-py.wasm
The memory and fuel limits are those of the plugin.toml next to the component.
"""

import json
import os
import sys
import time
import tomllib

from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, ComponentInstanceType, FuncType, Linker, Variant

path = sys.argv[1]
with open(os.path.join(os.path.dirname(os.path.abspath(path)), "plugin.toml"), "rb") as f:
    limits = tomllib.load(f).get("limits", {})
memory_mb = limits.get("memory_mb")
fuel = limits.get("fuel")
print(f"limits: memory_mb={memory_mb} fuel={fuel}")

config = Config()
config.cache = True
config.consume_fuel = fuel is not None
engine = Engine(config)
t0 = time.monotonic()
component = Component.from_file(engine, path)
print(f"compiled in {time.monotonic() - t0:.1f}s")

ty = component.type


def show(title, items):
    print(f"{title}:")
    for name, item in items.items():
        if isinstance(item, ComponentInstanceType):
            print(f"  {name}: {', '.join(item.exports(engine))}")
        else:
            print(f"  {name}: {type(item).__name__}")


show("imports", ty.imports(engine))
# What the gateway's sandbox links for every plugin (crates/sandbox/src/plugins: ALWAYS_GRANTED).
GRANTED = ("wasi:cli/", "wasi:io/", "wasi:clocks/", "wasi:random/", "wasi:filesystem/",
           "airlock:plugin/log", "airlock:plugin/types")
beyond = [n for n in ty.imports(engine) if not n.startswith(GRANTED)]
print("imports beyond the sandbox's always-granted set:", ", ".join(beyond) or "none")
show("exports", ty.exports(engine))

logged = []


def log(_store, level, message):
    logged.append((level, message))


linker = Linker(engine)
linker.add_wasip2()
with linker.root() as root:
    with root.add_instance("airlock:plugin/log@0.1.0") as inst:
        inst.add_func("log", log)

store = Store(engine)
store.set_wasi(WasiConfig())  # no args, no env, no preopens, no stdio inheritance
if memory_mb is not None:
    store.set_limits(memory_size=memory_mb * 1024 * 1024)
if fuel is not None:
    store.set_fuel(fuel)
t0 = time.monotonic()
instance = linker.instantiate(store, component)
print(f"instantiated in {time.monotonic() - t0:.3f}s")

describe = instance.get_func(store, "describe")
call = instance.get_func(store, "call")


def invoke(func, *args):
    if fuel is not None:
        store.set_fuel(fuel)  # a budget per call
    out = func(store, *args)
    func.post_return(store)
    return out


specs = invoke(describe)
print("describe ->", [vars(s) for s in specs])
assert len(specs) == 1
spec = specs[0]
assert spec.name == "wordcount" and getattr(spec, "parallel-safe") is True, vars(spec)
assert json.loads(spec.parameters) == {
    "type": "object",
    "properties": {"text": {"type": "string"}},
    "required": ["text"],
}


def check(name, arguments, want_tag, want=None):
    t0 = time.monotonic()
    out = invoke(call, name, arguments)
    ms = (time.monotonic() - t0) * 1000
    print(f"call({name!r}, {arguments!r}) -> {out!r}  [{ms:.1f} ms]")
    if want_tag == "ok":
        assert isinstance(out, str), out
        if want is not None:
            assert json.loads(out) == want, out
    else:
        assert isinstance(out, Variant) and out.tag == want_tag, out
        assert isinstance(out.payload, str) and out.payload, out


# A result<string, tool-error>: wasmtime-py gives the `ok` string itself or the error variant.
check("wordcount", '{"text":"hello big world"}', "ok", {"words": 3, "characters": 15})
check("wordcount", '{"text":"  héllo\\n wörld\\t"}', "ok", {"words": 2, "characters": 15})
check("wordcount", '{"text":""}', "ok", {"words": 0, "characters": 0})
check("wordcount", "{}", "bad-arguments")
check("wordcount", '{"text": 3}', "bad-arguments")
check("wordcount", "[1,2]", "bad-arguments")
check("wordcount", "not json", "bad-arguments")
check("nope", '{"text":"x"}', "failed")
big = "word " * (1 << 18)  # 1.25 MiB of text, within the manifest's memory and fuel
out = invoke(call, "wordcount", json.dumps({"text": big}))
assert json.loads(out) == {"words": 1 << 18, "characters": len(big)}, out
print(f"call('wordcount', <{len(big)} characters>) -> {out!r}")
print("log ->", logged)
assert len(logged) == 9 and all(l == "info" for l, _ in logged), logged
print("smoke test passed")
