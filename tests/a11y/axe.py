"""axe-core (pinned in tests/a11y/package.json and its package-lock.json) in the browser tests:
``npm ci`` once per test session, then :func:`serious_violations` injects ``axe.min.js`` into a
Playwright page and runs it on the page as it stands (WCAG 2.0/2.1 A and AA rules and axe's best
practices)."""

from __future__ import annotations

import shutil
import subprocess
import threading
from pathlib import Path

from tests.conftest import require_service

HERE = Path(__file__).resolve().parent
AXE = HERE / "node_modules" / "axe-core" / "axe.min.js"
_installed = threading.Lock()
_done: list[Path] = []


def axe_script() -> Path:
    """The path of ``axe.min.js``, installed by ``npm ci`` from the lock file (once per session)."""
    with _installed:
        if not _done:
            npm = require_service("npm (tests/a11y: axe-core)", shutil.which("npm"))
            run = subprocess.run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], cwd=HERE,
                                 capture_output=True, text=True, timeout=600)
            assert run.returncode == 0, run.stdout + run.stderr
            assert AXE.is_file(), f"npm ci did not install {AXE}"
            _done.append(AXE)
        return _done[0]


RUN_AXE = """async () => {
  const result = await axe.run(document, {resultTypes: ["violations"]});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => n.target.join(" ") + " :: " + n.failureSummary.replace(/\\s+/g, " ").slice(0, 300))}));
}"""


def violations(page) -> list[dict]:
    """Every axe violation on ``page`` now: ``[{"id", "impact", "help", "nodes"}]``."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(axe_script()))
    return page.evaluate(RUN_AXE)


def serious_violations(page) -> list[dict]:
    """The violations whose impact is ``serious`` or ``critical`` (the ones a page may not have)."""
    return [v for v in violations(page) if v["impact"] in ("serious", "critical")]


def assert_accessible(page, where: str) -> None:
    found = serious_violations(page)
    assert found == [], f"{where}: axe found serious or critical violations:\n" + "\n".join(
        f"- {v['id']} ({v['impact']}): {v['help']}\n    " + "\n    ".join(v["nodes"][:6]) for v in found)
