#!/usr/bin/env python3
"""A client of the xqtb gRPC protocol that we did not write: Python stubs generated from
proto/xqtb.proto with grpcio-tools, run against a coordinator that serves KRvKN (and the tables
it depends on, KRvK and KNvK) under the default rule set.

It probes positions whose answers are known, runs a batch probe against the answers of
`xqtb probe --batch`, follows a main line, runs a mate search, streams a shard download and
checks its CRC-32 against the checksums the server reports, and lists the services through server
reflection (grpc.reflection.v1alpha, the only version grpcio-reflection speaks), resolving xqtb's
own service from the descriptors reflection serves.

Usage: xqtb_client.py --server HOST:PORT --proto proto/xqtb.proto --out DIR --expected FILE
(FILE: one JSON line per FEN, from `xqtb probe --batch`). Prints one "ok" line per check and
PASS at the end; exits non-zero at the first failed check. tests/python_client.rs runs it.
"""

import argparse
import importlib
import json
import os
import sys
import zlib

import grpc
from grpc_tools import protoc
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import (
    ProtoReflectionDescriptorDatabase,
)
from google.protobuf.descriptor_pool import DescriptorPool

# Positions with known answers for the side to move: (FEN, category, distance in plies, table).
# The two longest wins of KRvKN and of KNvK are what `xqtb solve` reports for those tables.
KNOWN = [
    ("5k3/9/9/9/9/R8/9/4n4/9/3K5 w", "win", 25, "KRvKN"),
    ("9/9/5k3/9/9/9/9/3K1n3/1R7/9 b", "win", 17, "KRvKN"),
    ("9/4k4/9/9/9/9/9/9/9/N2K5 w", "win", 13, "KNvK"),
    ("4k4/9/9/9/9/9/9/9/4R4/3K5 b", "loss", 2, "KRvK"),
    # Neither side has an attacking piece: a draw that needs no table.
    ("4k4/9/9/9/9/9/9/9/9/3K5 w", "draw", None, ""),
]
# A cannon's table is not generated on this server.
MISSING = ("4k4/9/9/9/9/9/9/9/9/C2K5 w", "KCvK")
# The kings face each other on an open file.
ILLEGAL = "4k4/9/9/9/9/9/9/9/9/R3K4 w"
# The values proto/xqtb.proto documents for these fields.
CATEGORIES = {"win", "draw", "loss"}
ENDINGS = {"mate", "stalemate", "draw", "perpetual-check", "perpetual-chase"}
RULE_SETS = {"asian", "cycles-are-draws"}
JOB_STATES = {"waiting", "ready", "leased", "finished", "failed"}
SHARD_MAGIC = b"XQTBSHRD"


def check(condition, what):
    """Fails the run with `what` unless `condition` holds."""
    if not condition:
        raise AssertionError(what)


def ok(what):
    print(f"ok: {what}", flush=True)


def generate(proto, out):
    """Generates the message and stub modules from the .proto into `out` and imports them."""
    os.makedirs(out, exist_ok=True)
    include = os.path.dirname(os.path.abspath(proto))
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{include}",
            f"--python_out={out}",
            f"--grpc_python_out={out}",
            os.path.abspath(proto),
        ]
    )
    check(rc == 0, f"grpc_tools.protoc failed on {proto} (exit {rc})")
    sys.path.insert(0, out)
    pb = importlib.import_module("xqtb_pb2")
    stubs = importlib.import_module("xqtb_pb2_grpc")
    ok(f"generated xqtb_pb2 and xqtb_pb2_grpc from {proto}")
    return pb, stubs


def probe_known(pb, tablebase):
    for fen, category, dtm, table in KNOWN:
        r = tablebase.Probe(pb.ProbeRequest(fen=fen))
        got = (r.category, r.dtm_plies if r.HasField("dtm_plies") else None, r.table)
        check(got == (category, dtm, table), f"probe {fen}: {got}, want {(category, dtm, table)}")
        check(r.rules == "asian", f"probe {fen}: rules {r.rules!r}, want the default 'asian'")
        side = "red" if fen.endswith(" w") else "black"
        check(r.side_to_move == side, f"probe {fen}: side {r.side_to_move!r}")
        check(r.fen.startswith(fen.split(" ")[0]), f"probe {fen}: normalised to {r.fen}")
        check(len(r.moves) > 0, f"probe {fen}: no moves")
        for m in r.moves:
            check(m.category in CATEGORIES, f"probe {fen}: move category {m.category!r}")
            check(len(m.iccs) == 4 and m.chinese and m.wxf, f"probe {fen}: move names {m}")
        if category == "win":
            # The best move leads to a loss one ply shorter for the other side.
            best = r.moves[0]
            check(
                (best.category, best.dtm_plies) == ("loss", dtm - 1),
                f"probe {fen}: best move {best.iccs} is {best.category} {best.dtm_plies}",
            )
    ok(f"{len(KNOWN)} probes equal their known answers")

    for fen, code, words in [
        (ILLEGAL, grpc.StatusCode.INVALID_ARGUMENT, "kings"),
        ("not a fen", grpc.StatusCode.INVALID_ARGUMENT, "FEN"),
        (MISSING[0], grpc.StatusCode.NOT_FOUND, MISSING[1]),
    ]:
        try:
            tablebase.Probe(pb.ProbeRequest(fen=fen))
        except grpc.RpcError as e:
            check(e.code() == code, f"probe {fen!r}: status {e.code()}, want {code}")
            check(words in e.details(), f"probe {fen!r}: message {e.details()!r} lacks {words!r}")
        else:
            raise AssertionError(f"probe {fen!r} succeeded; want {code}")
    ok("a bad FEN is INVALID_ARGUMENT and a table not generated is NOT_FOUND, naming it")


def probe_batch(pb, tablebase, expected_file):
    with open(expected_file, encoding="utf-8") as f:
        expected = [json.loads(line) for line in f if line.strip()]
    check(len(expected) >= 10, f"only {len(expected)} expected answers in {expected_file}")
    fens = [e["fen"] for e in expected] + [ILLEGAL, MISSING[0]]
    r = tablebase.ProbeBatch(pb.ProbeBatchRequest(fens=fens))
    check(len(r.results) == len(fens), f"batch: {len(r.results)} results for {len(fens)} FENs")
    errors = 0
    for want, got in zip(expected, r.results):
        if "error" in want:
            # The batch's error text is what the command line says for the same position.
            errors += 1
            check(got.WhichOneof("result") == "error", f"batch {want['fen']}: {got}")
            check(got.error == want["error"], f"batch {want['fen']}: {got.error!r}, want {want['error']!r}")
            continue
        check(got.WhichOneof("result") == "ok", f"batch {want['fen']}: {got}")
        g = got.ok
        check(g.fen == want["fen"], f"batch: fen {g.fen}, want {want['fen']}")
        for field in ["category", "side_to_move", "table", "rules"]:
            check(
                getattr(g, field) == (want[field] or ""),
                f"batch {want['fen']}: {field} {getattr(g, field)!r}, want {want[field]!r}",
            )
        dtm = g.dtm_plies if g.HasField("dtm_plies") else None
        check(dtm == want["dtm_plies"], f"batch {want['fen']}: dtm {dtm}, want {want['dtm_plies']}")
        moves = [(m.iccs, m.category, m.dtm_plies if m.HasField("dtm_plies") else None) for m in g.moves]
        want_moves = [(m["iccs"], m["category"], m["dtm_plies"]) for m in want["moves"]]
        check(moves == want_moves, f"batch {want['fen']}: moves {moves}, want {want_moves}")
    bad, missing = r.results[-2], r.results[-1]
    check(bad.WhichOneof("result") == "error" and "kings" in bad.error, f"batch: {bad}")
    check(missing.WhichOneof("result") == "error" and MISSING[1] in missing.error, f"batch: {missing}")
    ok(f"a batch of {len(fens)} probes equals `xqtb probe --batch` ({errors + 2} errors in place)")


def mainline(pb, tablebase):
    fen, _, dtm, _ = KNOWN[0]
    r = tablebase.Mainline(pb.MainlineRequest(fen=fen))
    check(r.category == "win" and r.dtm_plies == dtm, f"mainline: {r.category} {r.dtm_plies}")
    check(len(r.moves) == dtm, f"mainline: {len(r.moves)} moves, want {dtm}")
    check(r.ending in {"mate", "stalemate"}, f"mainline: ending {r.ending!r}")
    check(all(m.fen for m in r.moves), "mainline: a move without its position")
    last = r.moves[-1]
    check((last.category, last.dtm_plies) == ("loss", 0), f"mainline: last move {last}")
    ending = r.ending
    r = tablebase.Mainline(pb.MainlineRequest(fen=KNOWN[-1][0]))
    check((r.ending, len(r.moves)) == ("draw", 0), f"mainline of a draw: {r.ending} {len(r.moves)}")
    check(ending in ENDINGS and r.ending in ENDINGS, "mainline: an ending xqtb.proto omits")
    ok(f"the main line of {fen} is {dtm} plies to {ending}; a drawn start has none")


def search(pb, tablebase):
    # A mate in 3 plies with two rooks, beyond the tables; greedy limits are capped.
    r = tablebase.Search(pb.SearchRequest(fen="4k4/9/9/9/9/9/9/9/R8/1R1K5 w", threads=100))
    check((r.result, r.dtm_plies, r.source) == ("win", 3, "search"), f"search: {r}")
    check(r.end in {"mate", "stalemate"}, f"search: end {r.end!r}")
    line = [m.iccs for m in r.line]
    check(len(line) == 3 and r.best_move == line[0], f"search: line {line}, best move {r.best_move}")
    check(r.limits.threads == 2 and r.limits.time_ms == 10000, f"search: limits {r.limits}")
    check(r.stopped == "", f"search: stopped {r.stopped!r}")
    try:
        tablebase.Search(pb.SearchRequest(fen="4k4/9/9 w"))
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.INVALID_ARGUMENT and "rows" in e.details(),
              f"search of a bad FEN: {e.code()} {e.details()}")
    else:
        raise AssertionError("a search of a bad FEN succeeded")
    ok(f"a search finds the mate in {r.dtm_plies} plies ({' '.join(line)}) with threads capped at 2; "
       "a bad FEN is INVALID_ARGUMENT")


def download(pb, tablebase):
    shards = {(s.signature, s.rules): s for s in tablebase.ListShards(pb.ListShardsRequest()).shards}
    for sig in ["KRvK", "KNvK", "KRvKN"]:
        check((sig, "asian") in shards, f"list shards: no {sig} under asian in {sorted(shards)}")
    check(all(rules in RULE_SETS for _, rules in shards), f"list shards: rule sets {shards.keys()}")
    info = shards[("KRvKN", "asian")]
    data = bytearray()
    first = None
    chunks = 0
    # Requests accept any spelling of a signature.
    for chunk in tablebase.DownloadShard(pb.DownloadShardRequest(signature="krkn")):
        if first is None:
            first = chunk
        data.extend(chunk.data)
        chunks += 1
    check(first is not None, "download: no chunk")
    crc = zlib.crc32(bytes(data))
    # The whole file arrived, and its CRC-32 (IEEE, as zlib computes it) is the one the first
    # chunk announces and the one ListShards reports.
    check(
        len(data) == first.total_bytes == info.shard_bytes,
        f"download: {len(data)} bytes, first chunk says {first.total_bytes}, "
        f"ListShards {info.shard_bytes}",
    )
    check(
        crc == first.file_checksum,
        f"download: CRC-32 {crc:#010x}, first chunk says {first.file_checksum:#010x}",
    )
    check(
        crc == info.file_checksum,
        f"download: CRC-32 {crc:#010x}, ListShards says {info.file_checksum:#010x}",
    )
    check(bytes(data[:8]) == SHARD_MAGIC, f"download: starts with {bytes(data[:8])!r}")
    check(list(info.legal) == [174105, 206220], f"list shards: KRvKN legal {list(info.legal)}")
    ok(
        f"downloaded KRvKN: {len(data)} bytes in {chunks} chunk{'s' if chunks > 1 else ''}, "
        f"CRC-32 {crc:#010x} as the server reports"
    )
    try:
        next(iter(tablebase.DownloadShard(pb.DownloadShardRequest(signature=MISSING[1]))))
    except grpc.RpcError as e:
        check(e.code() == grpc.StatusCode.NOT_FOUND, f"download {MISSING[1]}: {e.code()}")
    else:
        raise AssertionError(f"download of {MISSING[1]} succeeded")
    ok(f"a download of {MISSING[1]} is NOT_FOUND")


def status(pb, tablebase):
    s = tablebase.Status(pb.StatusRequest())
    check(all(j.state in JOB_STATES for j in s.jobs), f"status: states {[j.state for j in s.jobs]}")
    check(s.failed == 0, f"status: {s.failed} failed jobs")
    ok(f"status: {len(s.jobs)} jobs, states as documented")


def reflection(pb, channel):
    stub = reflection_pb2_grpc.ServerReflectionStub(channel)
    answers = stub.ServerReflectionInfo(iter([reflection_pb2.ServerReflectionRequest(list_services="")]))
    names = {s.name for a in answers for s in a.list_services_response.service}
    want = {
        "xqtb.v1.Tablebase",
        "xqtb.v1.Jobs",
        "grpc.health.v1.Health",
        "grpc.reflection.v1.ServerReflection",
        "grpc.reflection.v1alpha.ServerReflection",
    }
    check(names == want, f"reflection v1alpha lists {sorted(names)}, want {sorted(want)}")
    ok(f"reflection v1alpha lists {len(names)} services: {', '.join(sorted(names))}")
    # The descriptors reflection serves describe the same service as the .proto we compiled.
    pool = DescriptorPool(ProtoReflectionDescriptorDatabase(channel))
    served = pool.FindServiceByName("xqtb.v1.Tablebase")
    compiled = pb.DESCRIPTOR.services_by_name["Tablebase"]

    def methods(service):
        return sorted(
            (m.name, m.input_type.full_name, m.output_type.full_name) for m in service.methods
        )

    check(methods(served) == methods(compiled), f"reflection: {methods(served)} != {methods(compiled)}")
    ok(f"reflection serves xqtb.v1.Tablebase with the {len(served.methods)} methods of xqtb.proto")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="HOST:PORT of the coordinator")
    parser.add_argument("--proto", required=True, help="path of xqtb.proto")
    parser.add_argument("--out", required=True, help="directory for the generated modules")
    parser.add_argument("--expected", required=True, help="JSON lines of `xqtb probe --batch`")
    args = parser.parse_args()
    pb, stubs = generate(args.proto, args.out)
    with grpc.insecure_channel(args.server) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        tablebase = stubs.TablebaseStub(channel)
        probe_known(pb, tablebase)
        probe_batch(pb, tablebase, args.expected)
        mainline(pb, tablebase)
        search(pb, tablebase)
        download(pb, tablebase)
        status(pb, tablebase)
        reflection(pb, channel)
    print("PASS")


if __name__ == "__main__":
    main()
