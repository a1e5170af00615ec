"""The linking service under load: `python -m spacy_biosyn serve` in its
own process on 127.0.0.1, and 1, 8 and 32 clients (threads of this
process) sending NCBI Disease's dev abstracts, each client one request at
a time, each abstract once. Requests/s, latency percentiles and the
server's peak RSS; then the same abstracts through `nlp.pipe` in one
process for the ratio. Each row starts a fresh server and the in-process
pass a fresh pipeline, so no side answers from a cache the other lacks
(the linker remembers the mentions it ranked).

    python -m benchmarks.service [--text-pipeline DIR] [--linker DIR] [--repeat N] [--clients 1 8 32]

--text-pipeline (NER + linker) is sent each abstract's text at /link;
--linker (a gold-span linker) each abstract's gold mentions at
/link/mentions. --repeat sends the abstracts N times a row, for the
server's memory over many requests (repeats find the linker's cache
warm, as a service's do); the server's RSS is read after each tenth of
a row's requests, so growth over them shows beside the peak. The clients share the server's 2 cores: what
they cost is in the figures, as it is for any client on the same machine.
"""
import os
import socket
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from benchmarks.common import RAW_ABSTRACTS, cpu_description, memory_gib, parser, print_table, progress

CONCURRENCY = (1, 8, 32)


def abstracts(data: Path):
    from spacy_biosyn.corpora.readers import read_pubtator

    return read_pubtator(data / RAW_ABSTRACTS["ncbi-disease"]["dev"])


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_server(pipeline: str):
    import httpx

    port = free_port()
    server = subprocess.Popen([sys.executable, "-m", "spacy_biosyn", "serve", pipeline, "--port", str(port)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline and server.poll() is None:
        try:
            if httpx.get(url + "/health", timeout=1).status_code == 200:
                return server, url
        except httpx.HTTPError:
            time.sleep(0.3)
    server.kill()
    raise SystemExit(f"the server of {pipeline} did not start")


def load(url: str, path: str, bodies: list, clients: int):
    """Latencies of a request per body from `clients` clients, and the seconds they took."""
    import httpx

    def client(number: int):
        latencies = []
        with httpx.Client(timeout=300) as session:
            for body in bodies[number::clients]:
                started = time.perf_counter()
                answer = session.post(url + path, json=body)
                latencies.append(time.perf_counter() - started)
                if answer.status_code != 200:
                    raise SystemExit(f"{path}: {answer.status_code} {answer.text[:200]}")
        return latencies

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        latencies = [latency for part in pool.map(client, range(clients)) for latency in part]
    return latencies, time.perf_counter() - started


def in_process_rate(pipeline: str, bodies: list, mentions: bool) -> float:
    """Bodies per second through the pipeline in this process, from a fresh
    load warmed as the server is (its own warm-up, then WARM_UP): all texts
    in one nlp.pipe, or all mentions in one call of the engine, opened
    alone where the save allows, as mention strings need no Doc."""
    from spacy_biosyn.linking.rows import mention_rows
    from spacy_biosyn.pipeline.saved_engine import has_saved_engine, open_saved_engine
    from spacy_biosyn.service.linkers import EngineLinker, PipelineLinker

    if mentions and has_saved_engine(Path(pipeline)):
        linker = EngineLinker(open_saved_engine(Path(pipeline)))
    else:  # texts, or a pipeline saved before engines named their parts
        import spacy

        linker = PipelineLinker(spacy.load(pipeline))
    linker.warm_up()
    mention_rows(linker.engine, [WARM_UP]) if mentions else linker.nlp(WARM_UP)
    started = time.perf_counter()
    if mentions:  # every body's mentions in one call, as the best a single process given them all can do
        mention_rows(linker.engine, [mention for body in bodies for mention in body["mentions"]])
    else:
        list(linker.nlp.pipe(body["text"] for body in bodies))
    return len(bodies) / (time.perf_counter() - started)


# One request before the timed ones: a first call opens lazily loaded parts.
WARM_UP = "hereditary cancer"


def measure(name: str, pipeline: str, path: str, bodies: list, concurrency=CONCURRENCY):
    rows, growth = [], []
    for clients in concurrency:
        server, url = start_server(pipeline)
        try:
            load(url, path, [{"text": WARM_UP} if path == "/link" else {"mentions": [WARM_UP]}], 1)
            latencies, seconds, rss = [], 0.0, []
            tenth = -(-len(bodies) // 10)
            for start in range(0, len(bodies), tenth):
                part, part_seconds = load(url, path, bodies[start : start + tenth], clients)
                latencies += part
                seconds += part_seconds
                rss.append(f"{memory_gib('VmRSS', str(server.pid)):.2f}")
            peak = memory_gib("VmHWM", str(server.pid))
        finally:
            server.terminate()
            server.wait(timeout=60)
        q = statistics.quantiles(latencies, n=100)
        rows.append([name, clients, len(bodies), f"{len(bodies) / seconds:.1f}", f"{1000 * statistics.median(latencies):.0f}",
                     f"{1000 * q[94]:.0f}", f"{1000 * q[98]:.0f}", f"{peak:.2f}"])
        progress(rows[-1])
        growth.append([name, clients, len(bodies), " ".join(rss)])
    rate = in_process_rate(pipeline, bodies, mentions=path.endswith("mentions"))
    best = max(float(row[3]) for row in rows)
    return rows, growth, [name, f"{rate:.1f}", f"{best:.1f}", f"{best / rate:.2f}"]


def main() -> None:
    p = parser(__doc__.splitlines()[0])
    p.add_argument("--text-pipeline", default=None, help="NER + linker, sent abstracts at /link")
    p.add_argument("--linker", default=None, help="a gold-span linker, sent each abstract's mentions at /link/mentions")
    p.add_argument("--repeat", type=int, default=1, help="send the abstracts this many times a row")
    p.add_argument("--clients", type=int, nargs="+", default=list(CONCURRENCY), help="a row for each number of clients")
    args = p.parse_args()
    if not (args.text_pipeline or args.linker):
        raise SystemExit("give --text-pipeline, --linker or both")
    documents = abstracts(args.data) * args.repeat
    print(f"CPU: {cpu_description()}; server: python -m spacy_biosyn serve, 1 worker, on 127.0.0.1; "
          f"NCBI Disease dev, {len(documents) // args.repeat} abstracts, each sent {args.repeat} time(s) per row\n")
    rows, growths, ratios = [], [], []
    if args.text_pipeline:
        bodies = [{"text": d.text} for d in documents]
        found, growth, ratio = measure(f"text pipeline, /link ({Path(args.text_pipeline).name})", args.text_pipeline,
                                       "/link", bodies, args.clients)
        rows, growths, ratios = rows + found, growths + growth, ratios + [ratio]
    if args.linker:
        bodies = [{"mentions": [a.text for a in d.annotations]} for d in documents if d.annotations]
        found, growth, ratio = measure(f"gold spans, /link/mentions ({Path(args.linker).name})", args.linker,
                                       "/link/mentions", bodies, args.clients)
        rows, growths, ratios = rows + found, growths + growth, ratios + [ratio]
    print_table(["pipeline", "clients", "requests", "requests/s", "p50 ms", "p95 ms", "p99 ms", "server peak RSS GiB"], rows)
    print()
    print_table(["pipeline", "clients", "requests", "server RSS GiB after each tenth of them"], growths)
    print()
    print_table(["pipeline", "nlp.pipe in one process, abstracts/s", "service, best requests/s", "service / nlp.pipe"], ratios)


if __name__ == "__main__":
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    main()
