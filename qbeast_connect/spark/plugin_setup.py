"""Makes the server plugin available on a session: finds it on the server, or ships it.

A probe (one Python UDF over one row, pickled by value so that it needs nothing but
pyspark on the server) reports what the server's Python workers can import: the version
and file of an installed ``server_plugin``, or the module that is missing. Then:

* the plugin is installed in the client's version: nothing is shipped;
* the plugin is missing: the client's own plugin is shipped as a session artifact (see
  :mod:`qbeast_connect.spark.bundle`) and the probe runs again, which must find exactly
  the shipped bundle;
* the server has an installed plugin of another version: ``PluginVersionMismatchError``.
  The client never ships over it: an installed plugin is also what Spark's own lookup of
  ``format("qbeast")`` registers for the server's other clients, and a shipped copy would
  only shadow it for some workers' imports. A client and a plugin of different versions
  never write a table.

Spark settings the plugin relies on that a session may change are set on the session
(:data:`SESSION_CONF`); what only a server restart can change (the Python version of the
workers) is named in the error.
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from qbeast_connect.exceptions import (
    PluginUnavailableError,
    PluginVersionMismatchError,
    ServerUnavailableError,
)
from qbeast_connect.spark.bundle import BUNDLE_PREFIX
from qbeast_connect.spark.server import PLAN_CACHE_CONF

if TYPE_CHECKING:
    from pyspark.sql.connect.session import SparkSession

#: Session settings the plugin relies on, set on every session it is registered on.
SESSION_CONF: Mapping[str, str] = {
    # Python Data Source readers receive pushed filters only with this on (pruning)
    "spark.sql.python.filterPushdown.enabled": "true",
    # Spark 4.2's plan cache would reuse a stale filter pushdown of format("qbeast")
    PLAN_CACHE_CONF: "false",
}

#: Partitions of the probe's one-row query (each starts a Python worker of its own).
PROBE_PARTITIONS = 1

#: The modules whose absence means "the plugin is not installed" (as opposed to broken).
PLUGIN_PACKAGES = ("server_plugin", "qbeast_connect")

#: The probe. It is compiled outside any importable module, so cloudpickle sends it by
#: value and the server needs nothing but pyspark to run it.
_PROBE_SOURCE = """
def qbeast_plugin_probe(_):
    import json
    import sys

    answer = {"python": "%d.%d.%d" % tuple(sys.version_info[:3])}
    try:
        import server_plugin
        from server_plugin.datasource import PLUGIN_VERSION

        answer["version"] = PLUGIN_VERSION
        answer["origin"] = str(server_plugin.__file__)
    except ImportError as exc:
        answer["missing"] = str(exc.name or "")
        answer["error"] = "%s: %s" % (type(exc).__name__, exc)
    except Exception as exc:
        answer["error"] = "%s: %s" % (type(exc).__name__, exc)
    return json.dumps(answer)
"""


@dataclass(frozen=True)
class ProbeAnswer:
    """What the server's Python workers reported."""

    python: str
    version: str | None = None
    origin: str | None = None
    missing: str | None = None
    error: str | None = None

    @classmethod
    def from_json(cls, text: str) -> ProbeAnswer:
        raw = json.loads(text)
        return cls(
            python=str(raw.get("python", "")),
            version=raw.get("version"),
            origin=raw.get("origin"),
            missing=raw.get("missing"),
            error=raw.get("error"),
        )


def _probe_function() -> Callable[[Any], str]:
    namespace: dict[str, Any] = {"__name__": "qbeast_connect_plugin_probe"}
    exec(compile(_PROBE_SOURCE, "<qbeast plugin probe>", "exec"), namespace)
    probe: Callable[[Any], str] = namespace["qbeast_plugin_probe"]
    return probe


def probe_server(spark: SparkSession) -> ProbeAnswer:
    """Ask the server's Python workers which plugin they can import.

    Raises:
        PluginUnavailableError: the workers cannot run the probe (their Python is not the
            client's version: that needs a server restart).
    """
    # the Connect functions themselves: they need no SparkContext, whatever the mode
    from pyspark.sql.connect.functions import col, udf
    from pyspark.sql.types import StringType

    make_udf: Any = udf
    answer: Any = make_udf(_probe_function(), StringType())(col("id"))
    try:
        # one partition: one task, so one Python worker starts (with the default of one
        # partition per core, every core started a worker for an empty partition)
        rows = spark.range(0, 1, 1, PROBE_PARTITIONS).select(answer.alias("answer")).collect()
    except Exception as exc:
        text = str(exc)
        client = "{}.{}".format(*sys.version_info[:2])
        if "PYTHON_VERSION_MISMATCH" in text or "different minor versions" in text:
            raise PluginUnavailableError(
                f"the Spark Connect server's Python workers run another Python version than "
                f"this client ({client}); Python UDFs and data sources need the same minor "
                "version on both sides. Restart the server with spark.pyspark.python (and "
                f"spark.pyspark.driver.python) pointing to a Python {client}, or run the "
                f"client on the server's version. Server said: {text.splitlines()[0]}"
            ) from exc
        raise PluginUnavailableError(
            "the Spark Connect server cannot run a Python UDF, which the qbeast plugin "
            f"needs (is its Python set up?). Server said: {text.splitlines()[0]}"
        ) from exc
    return ProbeAnswer.from_json(str(rows[0]["answer"]))


def decide(answer: ProbeAnswer, client_version: str) -> str:
    """What to do about a first probe: ``"ready"`` (installed, same version) or ``"ship"``.

    Raises:
        PluginVersionMismatchError: an installed plugin has another version.
        PluginUnavailableError: the plugin is installed but cannot be imported.
    """
    if answer.version is not None:
        if answer.version == client_version:
            return "ready"
        if BUNDLE_PREFIX in (answer.origin or ""):
            # nothing is installed on the server: a client joined to this session (a URL
            # with ;session_id=) shipped its own plugin to it before this one came
            raise PluginVersionMismatchError(
                f"this Spark Connect session already runs the qbeast plugin of "
                f"qbeast-connect {answer.version}, shipped to it by another client of the "
                f"session ({answer.origin}); this client is qbeast-connect {client_version}, "
                "and a client and a server plugin of different versions never write a table "
                "(the server has no qbeast-connect installed). Open a session of your own "
                "(the URL without ;session_id=), or join this one with "
                f"qbeast-connect=={answer.version}"
            )
        raise PluginVersionMismatchError(
            f"the Spark Connect server has qbeast-connect {answer.version} installed "
            f"({answer.origin}) and this client is qbeast-connect {client_version}: a client "
            "and a server plugin of different versions never write a table. Install "
            f"qbeast-connect=={client_version} in the server's Python environment (or "
            f"uninstall it there, and this client ships its own plugin to each session), or "
            f"use a client of version {answer.version}"
        )
    if answer.missing in PLUGIN_PACKAGES:
        return "ship"
    raise PluginUnavailableError(
        "the Spark Connect server has the qbeast plugin but its Python workers cannot import "
        f"it: {answer.error}. Install the missing package in the server's Python environment"
    )


def check_shipped(answer: ProbeAnswer, bundle_name: str, client_version: str) -> None:
    """Check that a probe after shipping imports the shipped bundle itself.

    Raises:
        PluginUnavailableError: the workers still cannot import it, or import another copy.
    """
    if answer.version == client_version and bundle_name in (answer.origin or ""):
        return
    raise PluginUnavailableError(
        f"the qbeast plugin was shipped to the Spark Connect session ({bundle_name}), but the "
        f"server's Python workers do not import it: version {answer.version!r} from "
        f"{answer.origin!r}, error {answer.error!r}. Install qbeast-connect=={client_version} "
        "in the server's Python environment instead"
    )


def set_session_conf(spark: SparkSession) -> None:
    """Set :data:`SESSION_CONF` on the session.

    Raises:
        PluginUnavailableError: the server refuses a setting (it then needs a restart with it).
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for key, value in SESSION_CONF.items():
            try:
                spark.conf.set(key, value)
            except ServerUnavailableError:
                raise  # no answer is not a refusal: the caller's timeout error stands
            except Exception as exc:
                if key == PLAN_CACHE_CONF:
                    continue  # a server without the setting has no such cache
                raise PluginUnavailableError(
                    f"the Spark Connect server refuses the session setting {key}={value} the "
                    f"qbeast plugin needs; restart the server with --conf {key}={value}. "
                    f"Server said: {str(exc).splitlines()[0]}"
                ) from exc


def ensure_plugin(spark: SparkSession) -> ProbeAnswer:
    """Make the plugin importable by the session's Python workers, shipping it if needed.

    Returns:
        The probe's answer about the plugin the workers now import.

    Raises:
        PluginVersionMismatchError: the server has another version of the plugin installed.
        PluginUnavailableError: the plugin cannot be made importable.
    """
    from qbeast_connect.spark.bundle import build_bundle
    from server_plugin.datasource import PLUGIN_VERSION

    answer = probe_server(spark)
    if decide(answer, PLUGIN_VERSION) == "ready":
        return answer
    bundle = build_bundle()
    try:
        spark.addArtifacts(str(bundle.path), pyfile=True)
    except Exception as exc:
        raise PluginUnavailableError(
            f"the Spark Connect server did not accept the qbeast plugin as a session artifact "
            f"({bundle.name}); install qbeast-connect=={PLUGIN_VERSION} in the server's Python "
            f"environment instead. Server said: {str(exc).splitlines()[0]}"
        ) from exc
    answer = probe_server(spark)
    check_shipped(answer, bundle.name, PLUGIN_VERSION)
    return answer
