"""Skills: folders with a ``SKILL.md`` that teach the agent a procedure without code.

The system prompt lists each usable skill by name, one-line description and the location of its
``SKILL.md``; the model reads the file on demand with the ``read`` tool. Modules:

- :mod:`.model`: front matter (YAML, validated with pydantic) and the parsed :class:`Skill`;
- :mod:`.discovery`: sources and precedence (workspace > installed > plugins > extra dirs > bundled);
- :mod:`.gating`: requirements (binaries, env, config keys, OS) and config switches;
- :mod:`.catalog`: one resolved view (discovery + gating) for an agent, and its status rows;
- :mod:`.prompt`: the bounded ``<available_skills>`` block and the directories ``read`` may open;
- :mod:`.archive`, :mod:`.scan`, :mod:`.install`: the install pipeline, which never executes
  anything it installs.
"""

from __future__ import annotations
