"""Times llm-wasm-sandbox (PyPI) running snippets, for airlock-bench's code-tools rows.

Usage: llm_wasm_sandbox.py CALLS SNIPPET...  Prints a JSON list: each snippet's median, in ms,
over CALLS runs after one to warm up, through the package's own API (`create_sandbox` and
`execute`, its default policy), as a user of it would call it.
"""

import json
import logging
import statistics
import sys
import time

from sandbox import RuntimeType, create_sandbox

logging.disable(logging.CRITICAL)
calls = int(sys.argv[1])
box = create_sandbox(runtime=RuntimeType.PYTHON)
medians = []
for snippet in sys.argv[2:]:
    result = box.execute(snippet)
    if not result.success:
        sys.exit(f"{snippet!r} failed: {result.stderr}")
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        box.execute(snippet)
        times.append((time.perf_counter() - started) * 1000)
    medians.append(statistics.median(times))
print(json.dumps(medians))
