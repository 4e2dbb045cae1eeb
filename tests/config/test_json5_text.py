"""JSON5 files read with the standard JSON parser first: the same values either way, ``json5``
imported only for what plain JSON does not allow, and errors as ``ValueError``."""

from __future__ import annotations

import json

import json5
import pytest

from homarus.config import json5_text
from tests.conftest import python_output

SAMPLES = [
    '{"a": 1, "b": [true, null, 2.5e3], "c": {"d": "é\\u00e9"}}',
    '{"dup": 1, "dup": 2}',
    '{"big": 123456789012345678901234567890, "neg": -0.0}',
    "{\n  // a comment\n  a: 'single', trailing: [1, 2,],\n}",
    "[NaN, Infinity, -Infinity]",
]


@pytest.mark.parametrize("text", SAMPLES)
def test_the_same_values_as_json5(text: str) -> None:
    assert json.dumps(json5_text.loads(text)) == json.dumps(json5.loads(text))


@pytest.mark.parametrize("text", ["{", "{a: }", "[1, 2", "\ufeff{}x"])
def test_bad_text_is_a_value_error(text: str) -> None:
    with pytest.raises(ValueError):
        json5_text.loads(text)


def test_plain_json_does_not_import_json5() -> None:
    script = (
        "import sys\nfrom homarus.config import json5_text\n"
        "json5_text.loads('{\"a\": [1, 2]}')\nplain = 'json5' in sys.modules\n"
        "json5_text.loads('{a: 1}')\nprint(plain, 'json5' in sys.modules)\n"
    )
    assert python_output(script).split() == ["False", "True"]
