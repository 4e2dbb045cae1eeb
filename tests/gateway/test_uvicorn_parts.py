"""uvicorn's Config and Server without its command line: the package's own ``__init__`` runs only
when something else is asked of it, and then the package is whole."""

from __future__ import annotations

import json

from tests.conftest import python_output

PROBE = """
import json, sys
from homarus.gateway.uvicorn_parts import uvicorn_config_and_server
Config, Server = uvicorn_config_and_server()
light = sorted(m for m in ("click", "watchfiles", "multiprocessing", "uvicorn.main") if m in sys.modules)
import uvicorn
from uvicorn.lifespan.on import LifespanOn  # does `from uvicorn import Config`
still_light = "uvicorn.main" not in sys.modules
whole = callable(uvicorn.run) and isinstance(uvicorn.__version__, str) and "uvicorn.main" in sys.modules
print(json.dumps({
    "light": light, "still_light": still_light, "whole": whole,
    "same": uvicorn.Config is Config and uvicorn.Server is Server,
    "missing": type(getattr(uvicorn, "nope", None)).__name__,
}))
"""


def test_the_package_init_is_deferred_until_asked() -> None:
    report = json.loads(python_output(PROBE).strip().splitlines()[-1])
    assert report == {"light": [], "still_light": True, "whole": True, "same": True, "missing": "NoneType"}


def test_an_imported_package_is_used_as_it_stands() -> None:
    script = (
        "import uvicorn, sys\n"
        "from homarus.gateway.uvicorn_parts import uvicorn_config_and_server\n"
        "Config, Server = uvicorn_config_and_server()\n"
        "assert Config is uvicorn.Config and 'uvicorn.main' in sys.modules\n"
    )
    python_output(script)
