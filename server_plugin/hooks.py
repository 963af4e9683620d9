"""Pre-commit hooks: small functions whose string map output becomes ``commitInfo.tags``.

qbeast-spark loads a hook from a class name given in the write options. Loading arbitrary
classes named by a client would let any client run any code on the server, so here a hook
is named by an *id* that the server allows: a built-in hook, or an entry point that the
server's Python environment declares in the group ``qbeast_connect.pre_commit_hooks``.

Write options: ``qbeastPreCommitHook.<name>=<hook id>`` and optionally
``qbeastPreCommitHook.<name>.arg=<text>``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from typing import Any, Protocol

from qbeast_connect.exceptions import InvalidOptionError, QbeastError

ENTRY_POINT_GROUP = "qbeast_connect.pre_commit_hooks"


class PreCommitHook(Protocol):
    """A hook: ``run(actions)`` returns tags for the commit."""

    def run(self, actions: Sequence[Any]) -> Mapping[str, str]:
        """Return string tags computed from the commit's actions."""
        ...


class CommitSummaryHook:
    """Built-in hook ``commitSummary``: counts of added/removed files and rows."""

    def __init__(self, arg: str | None = None) -> None:
        self.prefix = arg or "summary"

    def run(self, actions: Sequence[Any]) -> Mapping[str, str]:
        from server_plugin.delta.actions import AddFile, RemoveFile

        adds = [a for a in actions if isinstance(a, AddFile)]
        removes = [a for a in actions if isinstance(a, RemoveFile)]
        rows = 0
        for add in adds:
            if add.stats:
                rows += int(json.loads(add.stats).get("numRecords", 0))
        return {
            f"{self.prefix}.addedFiles": str(len(adds)),
            f"{self.prefix}.removedFiles": str(len(removes)),
            f"{self.prefix}.addedRows": str(rows),
        }


BUILTIN_HOOKS: Mapping[str, Callable[[str | None], PreCommitHook]] = {
    "commitSummary": CommitSummaryHook,
}


def available_hooks() -> dict[str, Callable[[str | None], PreCommitHook]]:
    """Hook ids the server allows: the built-ins plus the entry points of the group."""
    found: dict[str, Callable[[str | None], PreCommitHook]] = dict(BUILTIN_HOOKS)
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        found.setdefault(ep.name, _lazy(ep))
    return found


def _lazy(ep: Any) -> Callable[[str | None], PreCommitHook]:
    def make(arg: str | None) -> PreCommitHook:
        factory = ep.load()
        return factory(arg)  # type: ignore[no-any-return]

    return make


def parse_hooks(options: Mapping[str, str]) -> list[tuple[str, str, str | None]]:
    """Validate hook options; return ``(name, hook id, arg)`` in name order.

    Raises:
        InvalidOptionError: a hook id the server does not allow, or an argument without hook.
    """
    allowed = available_hooks()
    names = sorted(k for k in options if not k.endswith(".arg"))
    orphans = [k for k in options if k.endswith(".arg") and k[: -len(".arg")] not in options]
    if orphans:
        raise InvalidOptionError(
            f"hook arguments without a hook: {orphans}; set qbeastPreCommitHook.<name> too"
        )
    out: list[tuple[str, str, str | None]] = []
    for name in names:
        hook_id = options[name]
        if hook_id not in allowed:
            raise InvalidOptionError(
                f"pre-commit hook {name!r} asks for {hook_id!r}, which this server does not "
                f"allow; allowed hooks: {sorted(allowed)} (add one through the "
                f"'{ENTRY_POINT_GROUP}' entry point group of the server's environment)"
            )
        out.append((name, hook_id, options.get(f"{name}.arg")))
    return out


def run_hooks(options: Mapping[str, str], actions: Sequence[Any]) -> dict[str, str]:
    """Run the configured hooks over the commit's actions and merge their tags."""
    tags: dict[str, str] = {}
    allowed = available_hooks()
    for name, hook_id, arg in parse_hooks(options):
        try:
            output = allowed[hook_id](arg).run(actions)
        except QbeastError:
            raise
        except Exception as exc:
            raise InvalidOptionError(f"pre-commit hook {name!r} ({hook_id}) failed: {exc}") from exc
        for key, value in output.items():
            tags[str(key)] = str(value)
    return tags
