"""docs/deployment.md as a script: its marked shell blocks, the places they use, and the site's
processes started from the systemd units the way systemd starts them.

A block is marked by the HTML comment on the line before its fence:

- ``<!-- walkthrough: variables -->``: the ``export`` lines of the places (``VARIABLES``); the test
  gives them its own values instead of running the block.
- ``<!-- walkthrough -->``: run as it is, by ``bash`` with ``set -euo pipefail``; consecutive run
  blocks share one shell (its directory, its variables).
- ``<!-- walkthrough: processes -->``: the systemd step; the test starts the units' commands itself
  (:func:`unit_processes`) and the blocks after it run in a new shell.

Anything else (a marker without an ``sh`` block after it, another kind, ``sudo`` in a run block, a
variable the test does not know) fails with a message saying what changed.
"""

from __future__ import annotations

import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.deploy.units import ENV_FILE, HOME, STATE, UNIT_OF, env_file, exec_start, units

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deployment.md"
#: the places the doc's steps use (docs/deployment.md, "The places")
VARIABLES = ("MASTRA_HOME", "MASTRA_ENV_FILE", "MASTRA_HOST", "MASTRA_WEB_PORTS")
KINDS = ("variables", "run", "processes")

MARKER = re.compile(r"^<!-- walkthrough(?::[ ]*([a-z]+))? -->[ \t]*$", re.M)
FENCE = re.compile(r"```sh\n(.*?)^```\s*$", re.S | re.M)


class WalkthroughDrift(AssertionError):
    """The doc's marked blocks changed in a way the walkthrough cannot run."""


@dataclass(frozen=True)
class Block:
    kind: str
    text: str
    line: int  # of the marker, 1-based


def blocks(doc: str | None = None) -> list[Block]:
    """The marked blocks of the doc, in order."""
    doc = DOC.read_text() if doc is None else doc
    found = []
    for marker in MARKER.finditer(doc):
        line = doc.count("\n", 0, marker.start()) + 1
        kind = marker.group(1) or "run"
        if kind not in KINDS:
            raise WalkthroughDrift(f"docs/deployment.md:{line}: unknown walkthrough kind {kind!r} (one of {KINDS})")
        fence = FENCE.match(doc, marker.end() + 1)
        if fence is None:
            raise WalkthroughDrift(f"docs/deployment.md:{line}: the walkthrough marker is not followed by a ```sh block")
        found.append(Block(kind, fence.group(1), line))
    kinds = [block.kind for block in found]
    if kinds.count("variables") != 1 or kinds.count("processes") != 1 or kinds[0] != "variables":
        raise WalkthroughDrift(f"docs/deployment.md: expected one variables block first and one processes block, "
                               f"found {kinds}")
    return found


def doc_variables(block: Block) -> dict[str, str]:
    """``{name: value}`` of the variables block's ``export NAME=value`` lines (comments dropped)."""
    values = {}
    for line in block.text.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "export" or len(words) != 2 or "=" not in words[1]:
            raise WalkthroughDrift(f"docs/deployment.md:{block.line}: the variables block has {line!r}, "
                                   "not one `export NAME=value`")
        name, _, value = words[1].partition("=")
        values[name] = value
    if tuple(values) != VARIABLES:
        raise WalkthroughDrift(f"docs/deployment.md:{block.line}: the places are {tuple(values)}, the walkthrough "
                               f"knows {VARIABLES}: teach tests/system/walkthrough.py the new ones")
    return values


def segments(found: list[Block]) -> tuple[str, str]:
    """The run blocks before the processes block and those after it, each as one script."""
    before, after, seen = [], [], False
    for block in found:
        if block.kind == "processes":
            seen = True
            for unit_name in UNIT_OF.values():  # the step starts every unit
                if unit_name.removesuffix(".service") not in block.text:
                    raise WalkthroughDrift(f"docs/deployment.md:{block.line}: the systemd step does not start "
                                           f"{unit_name}")
        elif block.kind == "run":
            if re.search(r"\bsudo\b", block.text):
                raise WalkthroughDrift(f"docs/deployment.md:{block.line}: a walkthrough block uses sudo; its steps "
                                       "run as the site user (move the root step out of the marked block)")
            (after if seen else before).append(f"# docs/deployment.md:{block.line}\n{block.text}")
    if not before or not after:
        raise WalkthroughDrift("docs/deployment.md: expected run blocks before and after the processes block")
    return "\n".join(before), "\n".join(after)


def run_script(script: str, env: dict[str, str], cwd: Path, timeout: float = 120) -> str:
    """Run ``script`` with bash (``set -euo pipefail``); its output, or an AssertionError with it."""
    proc = subprocess.run(["bash", "-c", "set -euo pipefail\n" + script], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise AssertionError(f"the walkthrough's shell steps failed ({proc.returncode}):\n{script}\n--- output\n{output}")
    return output


@dataclass(frozen=True)
class UnitProcess:
    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path


def unit_processes(*, home: Path, env_path: Path, state: Path, ports: list[str],
                   base_env: dict[str, str]) -> list[UnitProcess]:
    """What systemd would start for ``mastra-web@<port>`` (each port), ``mastra-worker`` and
    ``mastra-beat``: the unit's ``Environment=`` then its ``EnvironmentFile=`` (which wins), its
    ``WorkingDirectory=`` and ``ExecStart=`` with ``%i`` and ``${VAR}`` expanded, the units'
    paths (``/srv/mastra``, ``/etc/mastra/mastra.env``, ``/var/lib/mastra``) moved to ``home``,
    ``env_path`` and ``state``."""

    def moved(value: str) -> str:
        return value.replace(ENV_FILE, str(env_path)).replace(HOME, str(home)).replace(STATE, str(state))

    found = []
    all_units = units()
    for process, unit_name in UNIT_OF.items():
        unit = all_units[unit_name]
        if moved(unit.one("EnvironmentFile")) != str(env_path):
            raise WalkthroughDrift(f"{unit_name}: EnvironmentFile is not {ENV_FILE}")
        env = {**base_env, **{k: moved(v) for k, v in unit.environment().items()}, **env_file(env_path)}
        for instance in (ports if process == "web" else [""]):
            argv = [moved(word) for word in exec_start(unit, env, instance)]
            found.append(UnitProcess(unit_name.replace("@", f"@{instance}"), argv, env,
                                     Path(moved(unit.one("WorkingDirectory")))))
    return found
