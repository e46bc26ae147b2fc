"""Reading the deploy files as their programs do: the Procfile (honcho), the systemd units and the
env file (systemd's ``EnvironmentFile=``), enough to compare them and to run a unit's command the
way systemd would (``tests/system/test_walkthrough.py``)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
PROCFILE = DEPLOY / "Procfile"
UNITS = DEPLOY / "systemd"
ENV_EXAMPLE = DEPLOY / "mastra.env.example"
NGINX = DEPLOY / "nginx" / "mastra.conf"
#: the Procfile's process types and their units
UNIT_OF = {"web": "mastra-web@.service", "worker": "mastra-worker.service", "beat": "mastra-beat.service"}
#: where the units expect things (docs/deployment.md)
HOME = "/srv/mastra"
ENV_FILE = "/etc/mastra/mastra.env"
STATE = "/var/lib/mastra"


def procfile(path: Path = PROCFILE) -> dict[str, str]:
    """``{process type: command}``."""
    found = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, command = line.partition(":")
            found[name.strip()] = command.strip()
    return found


@dataclass
class Unit:
    """A service unit's ``[Service]`` settings (a key given twice keeps every value, in order)."""

    name: str
    sections: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    def get(self, key: str, section: str = "Service") -> list[str]:
        return self.sections.get(section, {}).get(key, [])

    def one(self, key: str, section: str = "Service") -> str:
        values = self.get(key, section)
        assert len(values) == 1, f"{self.name}: {key}= is {values!r}"
        return values[0]

    def environment(self) -> dict[str, str]:
        """The ``Environment=`` assignments, in order."""
        env = {}
        for value in self.get("Environment"):
            for word in shlex.split(value):
                key, _, val = word.partition("=")
                env[key] = val
        return env


def unit(path: Path) -> Unit:
    parsed = Unit(path.name)
    section = None
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = parsed.sections.setdefault(line[1:-1], {})
            continue
        key, _, value = line.partition("=")
        section.setdefault(key.strip(), []).append(value.strip())
    return parsed


def units() -> dict[str, Unit]:
    return {path.name: unit(path) for path in sorted(UNITS.glob("*.service"))}


def env_file(path: Path) -> dict[str, str]:
    """``KEY=value`` lines as systemd reads them (``#`` and ``;`` start comments; our files use no quotes)."""
    env = {}
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line[0] in "#;":
            continue
        key, sep, value = line.partition("=")
        assert sep and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key), f"{path}: not KEY=value: {line!r}"
        env[key] = value
    return env


def exec_start(unit: Unit, env: dict[str, str], instance: str = "") -> list[str]:
    """The unit's ``ExecStart=`` as systemd runs it: ``%i`` is the instance, ``${VAR}`` one word of
    the unit's environment (``$VAR`` alone is not used by our units)."""
    words = []
    for word in shlex.split(unit.one("ExecStart")):
        word = word.replace("%i", instance)
        word = re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", lambda m: env[m.group(1)], word)
        words.append(word)
    return words


def procfile_as_unit_command(command: str) -> list[str]:
    """A Procfile command written as its unit writes it: ``${PORT:-8000}`` is the instance ``%i``,
    ``${NAME:-default}`` is ``${NAME}`` (the unit's ``Environment=`` holds the default)."""
    command = command.replace("${PORT:-8000}", "%i")
    return shlex.split(re.sub(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-[^}]*\}", r"${\1}", command))


def procfile_defaults(command: str) -> dict[str, str]:
    """``{NAME: default}`` of the command's ``${NAME:-default}``."""
    return dict(re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*):-([^}]*)\}", command))
