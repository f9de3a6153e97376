"""The README's Python example runs as written and its output is a sentence."""

import contextlib
import io
import re

from conftest import REPO


def test_readme_example_runs():
    text = (REPO / "README.md").read_text()
    block = re.search(r"<!-- readme-example[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert block, "README example block not found"
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block.group(1), "README.md", "exec"), {})
    printed = out.getvalue().strip()
    assert re.fullmatch(r'\{"answer":"(yes|no)","confidence":(100|[1-9]?[0-9])\}', printed), printed
