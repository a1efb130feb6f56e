"""The README's "Add it to your app": an app whose virtualenv has the wheel and its dependencies,
as pip installed them (`test.sh` makes it), runs the README's example as written."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from _gateway import Gateway

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_readme_example_runs_in_an_app_that_installed_the_wheel(
    gateway: Gateway, tmp_path: Path
) -> None:
    python = os.environ.get("AIRLOCK_APP_PYTHON")
    if not python:
        pytest.fail(
            "AIRLOCK_APP_PYTHON is not set: run the tests with clients/python/test.sh, which "
            "installs the wheel into an app's virtualenv"
        )
    found = re.search(r"```python\n(.*?)```", README.read_text(), re.S)
    assert found, "the README has a Python example"
    example = found.group(1)
    assert 'Airlock("http://127.0.0.1:7700")' in example
    app = tmp_path / "app.py"
    app.write_text(example.replace("http://127.0.0.1:7700", gateway.url))
    out = subprocess.run(
        [python, str(app)], cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )
    assert out.returncode == 0, out.stderr
    answer, *events = out.stdout.splitlines()
    assert answer.startswith('You said: "hello". I am the demo model'), answer
    assert events[0].startswith("0 agent/inbox/spliced"), events
    assert re.fullmatch(r"\d+ turn/end .*", events[-1]), events
    assert [int(line.split(" ")[0]) for line in events] == list(range(len(events)))
