"""``qbeast-connect``: run a Connect server with the plugin; inspect and maintain tables.

::

    qbeast-connect server start [--port 15002] [--host 127.0.0.1] [--master local[*]] [--delta]
        [--sql-extension auto|on|off]
    qbeast-connect server status | stop
    qbeast-connect describe PATH
    qbeast-connect metrics PATH [--revision N] [--json]
    qbeast-connect history PATH [--limit N]
    qbeast-connect optimize PATH [--revision N] [--fraction F]
    qbeast-connect vacuum PATH [--retention-hours H] [--dry-run]
    qbeast-connect convert PATH --columns a,b [--cube-size N] [--source-format parquet|delta]
    qbeast-connect viz PATH -o index.png [--fraction F] [--where SQL]

Table commands connect to ``--remote sc://host:port``, else to ``SPARK_REMOTE``, else they
start an embedded server for the duration of the command. ``server start`` runs a server in
the background (a supervisor process owning the Spark JVM) and records it in a state file
under ``~/.qbeast-connect`` (``--state-dir``), which ``status`` and ``stop`` read;
``--foreground`` runs it in the current process instead (containers).

Errors of qbeast-connect print ``error: <message>`` and exit with status 2; a server that
cannot be reached (``ServerUnavailableError``, after ``QBEAST_CONNECT_TIMEOUT`` seconds, 30
by default) and other failures (a Spark error) exit with status 1. Set
``QBEAST_CONNECT_DEBUG=1`` for tracebacks.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from qbeast_connect.exceptions import InvalidOptionError, QbeastError, ServerUnavailableError

DEFAULT_PORT = 15002
STATE_FILE = "server.json"
_MARKER = "qbeast_connect.cli"


# --------------------------------------------------------------------------------------
# server
# --------------------------------------------------------------------------------------


def default_state_dir() -> Path:
    """``~/.qbeast-connect``."""
    return Path.home() / ".qbeast-connect"


def _state_path(args: argparse.Namespace) -> Path:
    return Path(args.state_dir).expanduser() / STATE_FILE


def read_state(path: Path) -> dict[str, Any] | None:
    """The recorded server, or None when there is none (or the file is unreadable)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and isinstance(data.get("pid"), int) else None


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    cmdline = Path(f"/proc/{pid}/cmdline")
    if cmdline.exists():  # make sure a recycled pid is not taken for our supervisor
        try:
            text = cmdline.read_bytes().replace(b"\x00", b" ").decode(errors="replace")
        except OSError:
            return True
        return "qbeast_connect" in text or "qbeast-connect" in text
    return True


def _port_open(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    except OSError:
        return False
    return True


def _client_url(host: str, port: int) -> str:
    if host in ("", "0.0.0.0", "::", "127.0.0.1", "localhost"):
        return f"sc://localhost:{port}"
    return f"sc://{host}:{port}"


def _parse_conf(pairs: Sequence[str]) -> dict[str, str]:
    conf: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidOptionError(f"--conf takes KEY=VALUE, got {pair!r}")
        conf[key.strip()] = value
    return conf


def _server_status(path: Path) -> tuple[dict[str, Any] | None, bool]:
    state = read_state(path)
    if state is None:
        return None, False
    return state, _pid_alive(int(state["pid"]))


def cmd_server_start(args: argparse.Namespace) -> int:
    path = _state_path(args)
    state, alive = _server_status(path)
    # a restarted container can give this process the pid its previous run recorded
    if alive and state is not None and state["pid"] != os.getpid():
        raise QbeastError(
            f"a server is already running at {state['url']} (pid {state['pid']}); "
            "stop it with 'qbeast-connect server stop' or use another --state-dir"
        )
    _parse_conf(args.conf)  # fail early on a malformed setting
    if args.catalog:
        from qbeast_connect.spark.server import persistent_catalog

        persistent_catalog(args.catalog)  # and on a catalog directory Derby cannot open
    if args.delta:
        from qbeast_connect.spark.delta_jvm import delta_jars

        delta_jars()  # fetched here, where a failure is reported, not in the child
    if args.sql_extension != "off":
        from qbeast_connect.spark.sql_extension import server_conf

        server_conf({}, args.sql_extension == "on" or None)  # built here, like Delta's jars
    if args.foreground:
        return _run_foreground(args, path)
    if _port_open(args.port):
        raise QbeastError(f"port {args.port} is already in use: pick another with --port")
    path.parent.mkdir(parents=True, exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    log_file = args.log_file or str(path.parent / "server.log")
    argv = [
        sys.executable,
        "-m",
        _MARKER,
        "server",
        "start",
        "--foreground",
        "--port",
        str(args.port),
        "--host",
        args.host,
        "--log-file",
        log_file,
        "--state-dir",
        str(path.parent),
    ]
    if args.master:
        argv += ["--master", args.master]
    if args.delta:
        argv.append("--delta")
    argv += ["--sql-extension", args.sql_extension]
    if args.catalog:
        argv += ["--catalog", str(Path(args.catalog).expanduser().resolve())]
    for pair in args.conf:
        argv += ["--conf", pair]
    with open(Path(path.parent) / "supervisor.log", "ab") as out:
        child = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    deadline = time.monotonic() + args.timeout
    while time.monotonic() < deadline:
        if child.poll() is not None:
            raise QbeastError(
                f"the server did not start (exit code {child.returncode}); see {log_file} "
                f"and {path.parent / 'supervisor.log'}"
            )
        state = read_state(path)
        if state is not None and state.get("pid") == child.pid:
            print(state["url"])
            return 0
        time.sleep(0.2)
    _terminate(child.pid, None, timeout=30)
    raise QbeastError(f"the server did not start within {args.timeout:.0f} s; see {log_file}")


def _run_foreground(args: argparse.Namespace, path: Path) -> int:
    from qbeast_connect.spark.server import LocalConnectServer

    log_file = args.log_file or str(path.parent / "server.log")
    path.parent.mkdir(parents=True, exist_ok=True)
    conf = _parse_conf(args.conf)
    if args.catalog:
        from qbeast_connect.spark.server import with_persistent_catalog

        conf = with_persistent_catalog(conf, args.catalog)
    if args.delta:
        from qbeast_connect.spark.delta_jvm import with_delta

        conf = with_delta(conf)
    server = LocalConnectServer(
        master=args.master,
        port=args.port,
        host=args.host,
        conf=conf,
        log_path=log_file,
        sql_extension={"on": True, "off": False}.get(args.sql_extension),
    )

    def _stop(signum: int, frame: Any) -> None:
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    try:
        server.start(timeout=args.timeout)
        state = {
            "pid": os.getpid(),
            "server_pid": server.pid,
            "port": server.port,
            "host": args.host,
            "url": _client_url(args.host, server.port),
            "log_file": log_file,
            "started": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
        }
        tmp = path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state, indent=2))
        os.replace(tmp, path)
        print(f"qbeast-connect server listening on {state['url']} (log: {log_file})", flush=True)
        while server.is_running():
            time.sleep(0.5)
        print("the Spark Connect server exited", file=sys.stderr, flush=True)
        return 1
    finally:
        server.stop()
        recorded = read_state(path)
        if recorded is not None and recorded.get("pid") == os.getpid():
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _terminate(pid: int, server_pid: int | None, timeout: float) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not _pid_alive(pid):
            return
        time.sleep(0.2)
    # the supervisor did not stop in time: kill it, and the server's process group
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGKILL)
    if server_pid:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(server_pid), signal.SIGKILL)


def cmd_server_stop(args: argparse.Namespace) -> int:
    path = _state_path(args)
    state, alive = _server_status(path)
    if state is None or not alive:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        print("not running")
        return 0
    _terminate(int(state["pid"]), state.get("server_pid"), timeout=args.timeout)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    print(f"stopped the server at {state['url']}")
    return 0


def cmd_server_status(args: argparse.Namespace) -> int:
    path = _state_path(args)
    state, alive = _server_status(path)
    if state is None:
        print("not running")
        return 1
    if not alive:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        print("not running (removed a stale state file)")
        return 1
    up = _port_open(int(state["port"]))
    print(
        f"{'running' if up else 'starting or unresponsive'}: {state['url']} "
        f"(pid {state['pid']}, since {state.get('started')}, log {state.get('log_file')})"
    )
    return 0 if up else 1


# --------------------------------------------------------------------------------------
# table commands
# --------------------------------------------------------------------------------------


def _session(args: argparse.Namespace) -> Any:
    import qbeast_connect as qc

    remote = args.remote or os.environ.get("SPARK_REMOTE")
    if not remote:
        print(
            "starting an embedded Spark Connect server (use --remote or SPARK_REMOTE to use "
            "a running one)...",
            file=sys.stderr,
            flush=True,
        )
    return qc.session(remote)


def _target(args: argparse.Namespace) -> tuple[Any, str]:
    """The session and the table location: the path given, or where the server's catalog
    keeps the table ``--table`` names."""
    from qbeast_connect.exceptions import InvalidOptionError

    if (args.path is None) == (args.table is None):
        raise InvalidOptionError(
            "give the table's location or --table NAME (a table in the server's catalog), "
            "exactly one of them"
        )
    spark = _session(args)
    if args.table is None:
        return spark, str(args.path)
    from qbeast_connect.spark.location import catalog_table_location

    return spark, catalog_table_location(spark, args.table)


def _table(args: argparse.Namespace) -> Any:
    from qbeast_connect.table import QbeastTable

    spark, location = _target(args)
    return QbeastTable.forPath(spark, location)


def _print_json(data: Any) -> None:
    print(json.dumps(data, indent=2, default=str, sort_keys=False))


def cmd_describe(args: argparse.Namespace) -> int:
    table = _table(args)
    summary = table.summary()
    if table.snapshot.is_qbeast:
        summary["last revision"] = table.lastRevisionID()
    properties = dict(table.properties())
    if args.json:
        _print_json({**summary, "properties": properties})
        return 0
    width = max(len(k) for k in summary)
    for key, value in summary.items():
        text = ", ".join(str(v) for v in value) if isinstance(value, list) else value
        print(f"{key:<{width}}  {text}")
    for key, value in sorted(properties.items()):
        print(f"{'property':<{width}}  {key}={value}")
    return 0


def cmd_metrics(args: argparse.Namespace) -> int:
    metrics = _table(args).getIndexMetrics(args.revision)
    if args.json:
        _print_json(metrics.to_dict())
    else:
        print(metrics)
    return 0


def _timestamp(ms: Any) -> str:
    try:
        return dt.datetime.fromtimestamp(int(ms) / 1000, dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
    except (TypeError, ValueError, OverflowError):
        return "?"


def cmd_history(args: argparse.Namespace) -> int:
    from qbeast_connect.spark.snapshot import load_history

    spark, location = _target(args)
    entries = load_history(spark, location, args.limit)
    if not entries:
        from qbeast_connect.exceptions import TableNotFoundError

        raise TableNotFoundError(f"no table at {location}")
    if args.json:
        _print_json(entries)
        return 0
    print(f"{'version':>7}  {'timestamp (UTC)':<19}  {'operation':<18}  metrics")
    for entry in entries:
        metrics = entry.get("operationMetrics") or {}
        shown = ", ".join(f"{k}={v}" for k, v in sorted(metrics.items()))
        print(
            f"{entry.get('version', '?'):>7}  {_timestamp(entry.get('timestamp')):<19}  "
            f"{entry.get('operation', '')!s:<18}  {shown}"
        )
    return 0


def cmd_optimize(args: argparse.Namespace) -> int:
    result = _table(args).optimize(args.revision, args.fraction)
    if result.version is None:
        print(f"nothing to optimize in revision {result.revision_id}")
    else:
        print(
            f"optimized revision {result.revision_id}: replaced {result.removed_files} files "
            f"with {result.added_files} ({result.rows:,} rows), version {result.version}"
        )
    return 0


def cmd_vacuum(args: argparse.Namespace) -> int:
    files = _table(args).vacuum(args.retention_hours, args.dry_run)
    for name in files:
        print(name)
    verb = "would delete" if args.dry_run else "deleted"
    print(f"{verb} {len(files)} files", file=sys.stderr)
    return 0


def cmd_convert(args: argparse.Namespace) -> int:
    import qbeast_connect as qc

    spark, location = _target(args)
    version = qc.convertToQbeast(spark, location, args.columns, args.cube_size, args.source_format)
    print(f"{location} is a qbeast table indexed on {args.columns} (version {version})")
    return 0


def cmd_viz(args: argparse.Namespace) -> int:
    table = _table(args)
    table.plot(
        args.revision,
        fraction=args.fraction,
        where=args.where,
        path=args.output,
        color_by=args.color_by,
    )
    print(f"wrote {args.output}")
    return 0


# --------------------------------------------------------------------------------------
# parser
# --------------------------------------------------------------------------------------


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be positive, got {text}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``qbeast-connect``."""
    from qbeast_connect import __version__

    parser = argparse.ArgumentParser(
        prog="qbeast-connect",
        description="Qbeast tables over Spark Connect: run a server with the plugin, "
        "inspect and maintain tables.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    server = commands.add_parser("server", help="run a Spark Connect server with the plugin")
    server_commands = server.add_subparsers(dest="action", required=True, metavar="ACTION")
    state = argparse.ArgumentParser(add_help=False)
    state.add_argument(
        "--state-dir",
        default=str(default_state_dir()),
        help="where the server's state file lives (default: %(default)s)",
    )
    state.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        help="seconds to wait for the server (default: %(default)s)",
    )
    start = server_commands.add_parser("start", parents=[state], help="start a server")
    start.add_argument("--port", type=_positive_int, default=DEFAULT_PORT)
    start.add_argument(
        "--host", default="127.0.0.1", help="address to listen on; 0.0.0.0 for every interface"
    )
    start.add_argument("--master", default=None, help="Spark master (default: local[<cpus>])")
    start.add_argument(
        "--log-file", default=None, help="server log (default: <state-dir>/server.log)"
    )
    start.add_argument(
        "--conf",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Spark setting for the server (repeatable)",
    )
    start.add_argument(
        "--catalog",
        default=None,
        metavar="DIR",
        help="keep the server's catalog (a local metastore) in DIR, so that table names "
        "made with CREATE TABLE outlive restarts (default: in memory)",
    )
    start.add_argument(
        "--delta",
        action="store_true",
        help="also run Delta Lake's engine (jars fetched with Maven on first use): "
        "format('delta'), DESCRIBE HISTORY, DELETE/MERGE/OPTIMIZE on delta.`path`",
    )
    start.add_argument(
        "--sql-extension",
        choices=("auto", "on", "off"),
        default="auto",
        help="run qbeast-connect's SQL extension, which pushes TABLESAMPLE and "
        "DataFrame.sample of qbeast tables to the index (compiled with javac on first use): "
        "auto (the default) when this machine has javac, on (an error without it), off",
    )
    start.add_argument(
        "--foreground", action="store_true", help="run in this process until stopped (containers)"
    )
    start.set_defaults(func=cmd_server_start)
    server_commands.add_parser("stop", parents=[state], help="stop the server").set_defaults(
        func=cmd_server_stop
    )
    server_commands.add_parser(
        "status", parents=[state], help="whether the server is up (exit 0) or not (exit 1)"
    ).set_defaults(func=cmd_server_status)

    remote = argparse.ArgumentParser(add_help=False)
    remote.add_argument(
        "path", nargs="?", default=None, help="table location, as the server sees it"
    )
    remote.add_argument(
        "--table",
        default=None,
        metavar="NAME",
        help="a table in the server's catalog (CREATE TABLE ... USING qbeast), instead of a path",
    )
    remote.add_argument(
        "--remote",
        default=None,
        metavar="sc://HOST:PORT",
        help="Connect server (default: SPARK_REMOTE, else an embedded one)",
    )

    describe = commands.add_parser("describe", parents=[remote], help="summary of a table")
    describe.add_argument("--json", action="store_true")
    describe.set_defaults(func=cmd_describe)

    metrics = commands.add_parser("metrics", parents=[remote], help="index metrics")
    metrics.add_argument("--revision", type=int, default=None)
    metrics.add_argument("--json", action="store_true")
    metrics.set_defaults(func=cmd_metrics)

    history = commands.add_parser("history", parents=[remote], help="commits, newest first")
    history.add_argument("--limit", type=_positive_int, default=None)
    history.add_argument("--json", action="store_true")
    history.set_defaults(func=cmd_history)

    optimize = commands.add_parser("optimize", parents=[remote], help="rewrite files by index")
    optimize.add_argument(
        "--revision",
        type=int,
        default=None,
        help="revision to optimize (0: the staging area; default: latest)",
    )
    optimize.add_argument("--fraction", type=_fraction, default=1.0)
    optimize.set_defaults(func=cmd_optimize)

    vacuum = commands.add_parser("vacuum", parents=[remote], help="delete unreferenced files")
    vacuum.add_argument("--retention-hours", type=float, default=168.0)
    vacuum.add_argument("--dry-run", action="store_true")
    vacuum.set_defaults(func=cmd_vacuum)

    convert = commands.add_parser(
        "convert", parents=[remote], help="make a parquet directory or Delta table a qbeast table"
    )
    convert.add_argument("--columns", required=True, help="columns to index, e.g. a,b")
    convert.add_argument("--cube-size", type=_positive_int, default=5_000_000)
    convert.add_argument("--source-format", choices=("parquet", "delta"), default="parquet")
    convert.set_defaults(func=cmd_convert)

    viz = commands.add_parser("viz", parents=[remote], help="draw the index as a PNG")
    viz.add_argument("-o", "--output", required=True, help="PNG file to write")
    viz.add_argument("--revision", type=int, default=None)
    viz.add_argument(
        "--fraction",
        type=_fraction,
        default=None,
        help="highlight the cubes a sample of this fraction reads",
    )
    viz.add_argument("--where", default=None, help="highlight the cubes this filter reads")
    viz.add_argument("--color-by", choices=("max_weight", "element_count"), default="max_weight")
    viz.set_defaults(func=cmd_viz)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args))
    except QbeastError as exc:
        if os.environ.get("QBEAST_CONNECT_DEBUG"):
            raise
        print(f"error: {exc.message}", file=sys.stderr)
        return 1 if isinstance(exc, ServerUnavailableError) else 2
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("QBEAST_CONNECT_DEBUG"):
            raise
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        print(f"error: {first}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
