"""The table configuration (``metaData.configuration``) a qbeast write commits.

A write that adds a revision stores it as ``qbeast.revision.<id>``, points
``qbeast.lastRevisionID`` at it and records the write options as qbeast-spark does
(``columnsToIndex``, ``cubeSize``, ``tableFormat``, ``columnStats``, ``delta.*``). An
append keeps the revisions already there; any other write starts the list over (keeping
the other properties of the table it replaces).
"""

from __future__ import annotations

from collections.abc import Mapping

from qbeast_connect.model.revision import Revision
from qbeast_connect.options import WriteOptions
from qbeast_connect.rules.auto_compact import created_configuration

__all__ = ["LAST_REVISION_KEY", "REVISION_PREFIX", "is_revision_key", "write_configuration"]

#: Configuration key prefix of the revisions (``qbeast.revision.<id>`` -> revision JSON).
REVISION_PREFIX = "qbeast.revision."
#: Configuration key of the latest revision's id.
LAST_REVISION_KEY = "qbeast.lastRevisionID"


def is_revision_key(key: str) -> bool:
    """Whether ``key`` belongs to the revision list (dropped when a write starts it over)."""
    return key.startswith("qbeast.revision") or key == LAST_REVISION_KEY


def write_configuration(
    base: Mapping[str, str],
    revision: Revision,
    staging: Revision | None,
    options: WriteOptions,
    appending: bool,
) -> dict[str, str]:
    """The configuration after a write adds ``revision`` (and ``staging`` as revision 0
    when the table has none) to a table configured as ``base`` (empty for a new table).

    Without ``columnsToIndex`` the option records the revision's column names, as
    qbeast-spark does on append.
    """
    config = dict(base)
    if not appending:
        config = {k: v for k, v in config.items() if not is_revision_key(k)}
    if staging is not None and f"{REVISION_PREFIX}0" not in config:
        config[f"{REVISION_PREFIX}0"] = staging.to_json()
    config[f"{REVISION_PREFIX}{revision.revision_id}"] = revision.to_json()
    config[LAST_REVISION_KEY] = str(revision.revision_id)
    if options.columns_to_index is not None:
        config["columnsToIndex"] = options.columns_to_index
    else:
        config["columnsToIndex"] = ",".join(revision.column_names)
    config["cubeSize"] = str(revision.desired_cube_size)
    config["tableFormat"] = "delta"
    config["columnStats"] = options.column_stats or ""
    config.update(options.table_properties)
    if not base:  # a new table: automatic compaction on unless the write turned it off
        config = created_configuration(config)
    return config
