"""The standalone cluster's ports: the ones its master binds, not the ones it was given.

The cluster chooses free ports, then the master JVM binds them seconds later; another
process may take one in between. Spark's master does not fail then, it binds the next port
(``spark.port.maxRetries``) and says so in its log, so a cluster that kept the port it
chose sent its workers to the wrong address (or to whoever took the port). A stand-in
``spark-class`` plays master and worker here: it binds as Spark does and logs Spark's line.
"""

from __future__ import annotations

import os
import socket
import stat
import sys
from pathlib import Path

import pytest

from qbeast_connect.spark import cluster as cluster_module
from qbeast_connect.spark.cluster import StandaloneCluster, bound_ports
from qbeast_connect.spark.server import free_port

#: Master: binds --port (the next port when taken, as Spark does), logs Spark's line,
#: serves /json/ on --webui-port with one ALIVE worker per connection it accepted.
#: Worker: connects to the master URL it was given and stays (exits 1 when refused).
_SPARK_CLASS = """
import http.server, json, re, socket, sys, threading, time
args = sys.argv[1:]
if args[0].endswith("Master"):
    def bind(port):
        while True:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", port))
                return s, port
            except OSError:
                s.close()
                port += 1
    port = int(args[args.index("--port") + 1])
    ui = int(args[args.index("--webui-port") + 1])
    server, bound = bind(port)
    server.listen()
    print(f"INFO Utils: Successfully started service 'sparkMaster' on port {bound}.", flush=True)
    workers = []
    def accept():
        while True:
            workers.append(server.accept()[0])
    threading.Thread(target=accept, daemon=True).start()
    class Json(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = json.dumps({"workers": [{"state": "ALIVE"} for _ in workers]}).encode()
            self.send_response(200)
            self.end_headers()
            self.wfile.write(body)
        def log_message(self, *a):
            pass
    web = http.server.HTTPServer(("127.0.0.1", ui), Json)
    print(f"INFO Utils: Successfully started service 'MasterUI' on port {ui}.", flush=True)
    web.serve_forever()
else:
    host, port = re.match(r"spark://([^:]+):(\\d+)", args[-1]).groups()
    try:
        link = socket.create_connection((host, int(port)), timeout=5)
    except OSError as error:
        print(f"worker: cannot reach the master at {args[-1]}: {error}", flush=True)
        sys.exit(1)
    time.sleep(600)
"""


@pytest.fixture
def stand_in_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "spark"
    script = home / "bin" / "spark-class"
    script.parent.mkdir(parents=True)
    script.write_text(f"#!{sys.executable}\n{_SPARK_CLASS}")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setattr(cluster_module, "_spark_home", lambda: str(home))


def test_a_master_whose_chosen_port_was_taken_is_reached_where_it_listens(
    tmp_path: Path, stand_in_spark: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as thief:
        thief.bind(("127.0.0.1", 0))  # bound, not listening: a worker sent here is refused
        taken = thief.getsockname()[1]
        ui = free_port()
        monkeypatch.setattr(
            cluster_module, "free_port", iter([taken, ui, free_port(), free_port()]).__next__
        )
        cluster = StandaloneCluster(workers=2, work_dir=str(tmp_path / "work"))
        assert cluster.port == taken
        with cluster:
            assert cluster.port != taken
            assert bound_ports(os.path.join(cluster.work_dir, "master.log")) == {
                "sparkMaster": cluster.port,
                "MasterUI": ui,
            }
            assert cluster.master_url == f"spark://127.0.0.1:{cluster.port}"
            assert len(cluster.alive_workers()) == 2


def test_the_ports_are_read_from_this_launch_of_a_log_only(tmp_path: Path) -> None:
    log = tmp_path / "master.log"
    earlier = "INFO Utils: Successfully started service 'sparkMaster' on port 7077.\n"
    log.write_text(earlier)
    assert bound_ports(str(log)) == {"sparkMaster": 7077}
    assert bound_ports(str(log), offset=len(earlier)) == {}
    with log.open("a") as more:
        more.write("INFO Utils: Successfully started service 'sparkMaster' on port 7078.\n")
        more.write("INFO Utils: Successfully started service 'MasterUI' on port 8080.\n")
    assert bound_ports(str(log), offset=len(earlier)) == {"sparkMaster": 7078, "MasterUI": 8080}
    assert bound_ports(str(tmp_path / "missing.log")) == {}
