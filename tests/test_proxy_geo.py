"""GEO commands through the proxy beside redis-server 7.0 (redis_and_rampart: the
same commands to both at once, replies compared exactly): GEOADD (NX, XX, CH),
GEOPOS, GEOHASH, GEODIST in every unit, GEOSEARCH and GEOSEARCHSTORE (FROMMEMBER,
FROMLONLAT, BYRADIUS, BYBOX, ASC, DESC, COUNT [ANY], WITHCOORD, WITHDIST,
WITHHASH, STOREDIST), GEORADIUS and GEORADIUSBYMEMBER with their _RO forms, STORE
and STOREDIST; unsorted searches in Redis's own scan order; a set of 4,000
positions spread over pages; positions at the edges of the valid range and
across the antimeridian; GEOPOS under RESP3; every error text; missing keys and
members; WRONGTYPE.
"""
import random
import socket

import pytest

from proxy_helpers import replies_of


def both(clients, *args):
    """The two replies to one command; asserts they are equal and returns it."""
    got = replies_of(clients, *args)
    assert got[0] == got[1], f"{args}: redis {got[0]!r} != rampart {got[1]!r}"
    return got[0]


GEO_COMMANDS = ["GEOADD", "GEOPOS", "GEOHASH", "GEODIST", "GEOSEARCH", "GEOSEARCHSTORE", "GEORADIUS",
                "GEORADIUS_RO", "GEORADIUSBYMEMBER", "GEORADIUSBYMEMBER_RO", "COMMAND"]


@pytest.fixture(scope="module")
def places(redis_and_rampart):
    """Key "geo:places": 4,000 positions around four cities and a few at the
    range's edges; "geo:sicily": Redis's documentation example. redis-py's
    reply parsing is off for the GEO commands (and COMMAND, for its GETKEYS):
    replies compare as sent
    (coordinates and distances as their bytes, not as floats)."""
    for c in redis_and_rampart:
        for name in GEO_COMMANDS:
            c.set_response_callback(name, lambda reply, **_: reply)
    rng = random.Random(20261128)
    centres = [(13.361389, 38.115556), (-0.1276, 51.5072), (139.6917, 35.6895), (179.9, -16.5)]
    args = []
    for n in range(4000):
        lon, lat = centres[n % 4]
        spread = 10 ** rng.uniform(-3, 0.7)  # 100 m .. 5 degrees
        lon = max(-180, min(180, lon + rng.uniform(-spread, spread)))
        lat = max(-85, min(85, lat + rng.uniform(-spread, spread)))
        args += [f"{lon:.6f}", f"{lat:.6f}", f"p{n}"]
    args += ["180", "85.05112878", "ne-corner", "-180", "-85.05112878", "sw-corner", "0", "0", "null-island",
             "-179.99", "-16.5", "west-of-fiji"]
    for i in range(0, len(args), 3000):
        both(redis_and_rampart, "GEOADD", "geo:places", *args[i:i + 3000])
    assert both(redis_and_rampart, "ZCARD", "geo:places") == 4004
    both(redis_and_rampart, "GEOADD", "geo:sicily", "13.361389", "38.115556", "Palermo",
         "15.087269", "37.502669", "Catania")
    return redis_and_rampart


def test_geoadd_options(places):
    c = places
    k = "geo:add"
    assert both(c, "GEOADD", k, "1", "2", "a", "3", "4", "b") == 2
    assert both(c, "GEOADD", k, "NX", "1", "2", "a", "5", "6", "c") == 1
    assert both(c, "GEOADD", k, "XX", "9", "9", "a", "7", "7", "d") == 0
    assert both(c, "GEOADD", k, "XX", "CH", "9", "9", "a", "7", "7", "d") == 0  # a is at 9,9 already
    assert both(c, "GEOADD", k, "CH", "1", "1", "a", "3", "4", "b", "8", "8", "e") == 2
    assert both(c, "GEOADD", k, "ch", "nx", "2", "2", "f", "2", "2", "f") == 1
    both(c, "ZRANGE", k, "0", "-1", "WITHSCORES")
    both(c, "GEOPOS", k, "a", "b", "c", "d", "e", "f", "missing")


def test_positions_hashes_distances(places):
    c = places
    for members in (["Palermo", "Catania", "nobody"], ["Catania"]):
        both(c, "GEOPOS", "geo:sicily", *members)
        both(c, "GEOHASH", "geo:sicily", *members)
    both(c, "GEOPOS", "geo:places", *[f"p{n}" for n in range(0, 4000, 37)],
         "ne-corner", "sw-corner", "null-island", "west-of-fiji")
    both(c, "GEOHASH", "geo:places", *[f"p{n}" for n in range(1, 4000, 41)],
         "ne-corner", "sw-corner", "null-island")
    for unit in ([], ["m"], ["KM"], ["ft"], ["mi"]):
        assert both(c, "GEODIST", "geo:sicily", "Palermo", "Catania", *unit) is not None
        both(c, "GEODIST", "geo:places", "p7", "p11", *unit)  # across the world
        both(c, "GEODIST", "geo:places", "p3", "west-of-fiji", *unit)  # across the antimeridian
    assert both(c, "GEODIST", "geo:sicily", "Palermo", "Palermo") == b"0.0000"
    assert both(c, "GEODIST", "geo:sicily", "Palermo", "Catania", "km") == b"166.2742"
    assert both(c, "GEODIST", "geo:sicily", "Palermo", "nobody") is None
    assert both(c, "GEODIST", "geo:nothing", "a", "b") is None
    assert both(c, "GEOPOS", "geo:nothing", "a", "b") == [None, None]
    assert both(c, "GEOHASH", "geo:nothing", "a") == [None]
    assert both(c, "GEOHASH", "geo:sicily") == []
    assert both(c, "GEOPOS", "geo:sicily") == []


SHAPES = [
    ["BYRADIUS", "200", "km"], ["BYRADIUS", "0.5", "km"], ["BYRADIUS", "1500", "mi"],
    ["BYRADIUS", "30000", "ft"], ["BYRADIUS", "0", "m"], ["BYRADIUS", "9000", "km"],
    ["BYBOX", "400", "200", "km"], ["BYBOX", "2", "50", "km"], ["BYBOX", "5000", "5000", "km"],
    ["BYBOX", "100000", "20000", "ft"],
]
ORIGINS = [
    ["FROMLONLAT", "13.361389", "38.115556"], ["FROMLONLAT", "-0.1276", "51.5072"],
    ["FROMMEMBER", "p2"], ["FROMMEMBER", "p3"], ["FROMLONLAT", "179.99", "-16.5"],
    ["FROMLONLAT", "0", "0"], ["FROMLONLAT", "139.7", "35.7"], ["FROMMEMBER", "ne-corner"],
]


@pytest.mark.parametrize("origin", ORIGINS, ids=lambda o: "-".join(o[:2]))
def test_geosearch_like_redis(places, origin):
    """Every origin x shape x option set: the same members in the same order
    (unsorted searches too: Redis's scan order), distances, hashes and
    coordinates."""
    c = places
    options = [[], ["WITHDIST"], ["ASC", "WITHCOORD", "WITHDIST", "WITHHASH"], ["DESC", "WITHDIST"],
               ["COUNT", "7"], ["COUNT", "3", "DESC", "WITHDIST"], ["COUNT", "5", "ANY", "WITHHASH"],
               ["COUNT", "5", "ANY", "ASC", "WITHDIST"]]
    found = 0
    for shape in SHAPES:
        for opts in options:
            found += len(both(c, "GEOSEARCH", "geo:places", *origin, *shape, *opts))
    assert found > 100  # the searches found something to compare


def test_georadius_forms(places):
    c = places
    for extra in ([], ["WITHDIST", "WITHCOORD"], ["COUNT", "10", "ASC"], ["COUNT", "4", "ANY"], ["DESC"]):
        both(c, "GEORADIUS", "geo:places", "13.4", "38.1", "150", "km", *extra)
        both(c, "GEORADIUS_RO", "geo:places", "139.7", "35.7", "80", "mi", *extra)
        both(c, "GEORADIUSBYMEMBER", "geo:places", "p1", "300", "km", *extra)
        both(c, "GEORADIUSBYMEMBER_RO", "geo:sicily", "Palermo", "200", "km", *extra)
    assert both(c, "GEORADIUS", "geo:nothing", "1", "2", "3", "km") == []
    assert both(c, "GEORADIUSBYMEMBER", "geo:nothing", "a", "x", "y") == []  # nothing else checked


def test_stores(places):
    c = places
    assert both(c, "GEOSEARCHSTORE", "geo:dst", "geo:places", "FROMMEMBER", "p0", "BYRADIUS", "50", "km",
                "COUNT", "20") == 20
    both(c, "ZRANGE", "geo:dst", "0", "-1", "WITHSCORES")
    both(c, "GEOSEARCHSTORE", "geo:dst2", "geo:places", "FROMLONLAT", "-0.1", "51.5", "BYBOX", "30", "30",
         "km", "STOREDIST")
    both(c, "ZRANGE", "geo:dst2", "0", "-1", "WITHSCORES")
    both(c, "GEORADIUS", "geo:places", "139.7", "35.7", "20", "km", "STORE", "geo:dst3")
    both(c, "ZRANGE", "geo:dst3", "0", "-1", "WITHSCORES")
    both(c, "GEORADIUSBYMEMBER", "geo:places", "p2", "20", "km", "COUNT", "5", "STOREDIST", "geo:dst4")
    both(c, "ZRANGE", "geo:dst4", "0", "-1", "WITHSCORES")
    # Nothing found, or no source: the destination is deleted, 0 answered.
    assert both(c, "GEOSEARCHSTORE", "geo:dst", "geo:places", "FROMLONLAT", "-100", "-60", "BYRADIUS", "1",
                "km") == 0
    assert both(c, "EXISTS", "geo:dst") == 0
    assert both(c, "GEOSEARCHSTORE", "geo:dst2", "geo:nothing", "FROMMEMBER", "x", "BYRADIUS", "1", "km") == 0
    assert both(c, "EXISTS", "geo:dst2") == 0
    assert both(c, "GEORADIUS", "geo:nothing", "1", "2", "3", "km", "STORE", "geo:dst3") == 0
    assert both(c, "EXISTS", "geo:dst3") == 0


ERRORS = [
    ["GEOADD", "geo:e", "200", "100", "m"], ["GEOADD", "geo:e", "1", "2", "m", "3"],
    ["GEOADD", "geo:e", "NX", "XX", "1", "2", "m"], ["GEOADD", "geo:e", "x", "2", "m"],
    ["GEOADD", "geo:e", "1", "-85.06", "m"], ["GEOADD", "geo:e", "ch", "ch", "ch"],
    ["GEOADD", "geo:e", "1", "2"],
    ["GEODIST", "geo:sicily", "Palermo", "Catania", "yd"],
    ["GEODIST", "geo:sicily", "Palermo", "Catania", "km", "x"],
    ["GEOSEARCH", "geo:sicily", "BYRADIUS", "10", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMMEMBER", "Palermo"],
    ["GEOSEARCH", "geo:sicily", "FROMMEMBER", "Palermo", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMMEMBER", "nobody", "BYRADIUS", "1", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "-1", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "x", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYBOX", "1", "x", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYBOX", "-1", "1", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "BYBOX", "1", "1", "km"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "parsec"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "COUNT", "0"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "COUNT", "x"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "ANY"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STORE", "x"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "STOREDIST"],
    ["GEOSEARCH", "geo:sicily", "FROMLONLAT", "200", "2", "BYRADIUS", "1", "km"],
    ["GEOSEARCHSTORE", "geo:x", "geo:sicily", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km", "WITHDIST"],
    ["GEORADIUS", "geo:sicily", "1", "2", "3", "km", "STORE", "geo:x", "WITHCOORD"],
    ["GEORADIUS_RO", "geo:sicily", "1", "2", "3", "km", "STORE", "geo:x"],
    ["GEORADIUS", "geo:sicily", "1", "2", "3", "km", "FROMLONLAT", "1", "2"],
    ["GEORADIUS", "geo:sicily", "1", "2", "-3", "km"],
    ["GEORADIUSBYMEMBER", "geo:sicily", "nobody", "3", "km"],
    ["GEORADIUSBYMEMBER", "geo:sicily", "Palermo", "3", "lightyears"],
    ["GEOPOS"], ["GEOSEARCH", "geo:sicily", "FROMMEMBER", "Palermo", "BYRADIUS", "1"],
]


def test_errors_like_redis(places):
    c = places
    for cmd in ERRORS:
        got = both(c, *cmd)
        assert isinstance(got, tuple) and got[0] == "error", (cmd, got)
    both(c, "SET", "geo:string", "x")
    for cmd in (["GEOADD", "geo:string", "1", "2", "m"], ["GEOPOS", "geo:string", "m"],
                ["GEOHASH", "geo:string", "m"], ["GEODIST", "geo:string", "a", "b"],
                ["GEOSEARCH", "geo:string", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"],
                ["GEORADIUSBYMEMBER", "geo:string", "a", "1", "km"],
                ["GEOSEARCHSTORE", "geo:x", "geo:string", "FROMLONLAT", "1", "2", "BYRADIUS", "1", "km"]):
        got = both(c, *cmd)
        assert got[0] == "error" and got[1].startswith("WRONGTYPE"), (cmd, got)


def test_scores_geoadd_never_writes(places):
    """Members ZADD gave negative, infinite or huge scores decode as
    redis-server (x86-64) decodes them: positions, hashes, searches."""
    c = places
    both(c, "ZADD", "geo:odd", "-5", "neg", "-inf", "ninf", "inf", "pinf", "1e300", "huge", "-1e300", "nhuge",
         "4503599627370495.5", "top")
    members = ["neg", "ninf", "pinf", "huge", "nhuge", "top"]
    both(c, "GEOPOS", "geo:odd", *members)
    both(c, "GEOHASH", "geo:odd", *members)
    for m in members:
        both(c, "GEODIST", "geo:odd", m, "neg", "km")
        both(c, "GEOSEARCH", "geo:odd", "FROMMEMBER", m, "BYRADIUS", "100", "km", "WITHDIST", "WITHHASH")


def test_distances_round_as_redis(places):
    """Four decimals of d * 10^4 rounded to an integer, as Redis 7.0.6+ does
    (not printf's rounding of d itself; they differ for this pair)."""
    c = places
    both(c, "GEOADD", "geo:round", "21.949726045131683", "59.87477133371631", "a",
         "-53.55698972940445", "-49.67448307627552", "b", "0", "0", "c", "0.00001", "0", "d")
    for pair in (("a", "b"), ("c", "d"), ("d", "c"), ("a", "c")):
        for unit in ("m", "km", "ft", "mi"):
            both(c, "GEODIST", "geo:round", *pair, unit)
    rng = random.Random(3)
    args = []
    for n in range(300):
        args += [f"{rng.uniform(-180, 180):.9f}", f"{rng.uniform(-85, 85):.9f}", f"r{n}"]
    both(c, "GEOADD", "geo:round", *args)
    for n in range(0, 300, 2):
        both(c, "GEODIST", "geo:round", f"r{n}", f"r{n + 1}", "km")
    both(c, "GEOSEARCH", "geo:round", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "WITHDIST")


def test_any_and_keys(places):
    """ANY over most of the world stops at COUNT with the members Redis
    returns; COMMAND GETKEYS of GEORADIUS … STORE names the key written."""
    c = places
    for count in ("1", "3", "300", "5000"):
        both(c, "GEOSEARCH", "geo:places", "FROMLONLAT", "0", "0", "BYRADIUS", "20000", "km", "ANY", "COUNT", count)
        both(c, "GEOSEARCH", "geo:places", "FROMLONLAT", "13", "38", "BYBOX", "40000", "20000", "km", "ANY",
             "COUNT", count, "WITHDIST", "ASC")
    # STORE given twice: the second is written; Redis names the first only, rampart both.
    twice = ["COMMAND", "GETKEYS", "GEORADIUS", "s", "0", "0", "1", "km", "STORE", "a", "STORE", "b"]
    assert replies_of(c, *twice) == [[b"s", b"a"], [b"s", b"a", b"b"]]
    for cmd in (["GEORADIUS", "s", "0", "0", "1", "km", "STOREDIST", "a", "COUNT", "3"],
                ["GEORADIUSBYMEMBER", "s", "m", "1", "km", "STORE", "a"],
                ["GEOSEARCHSTORE", "d", "s", "FROMMEMBER", "m", "BYRADIUS", "1", "km"]):
        both(c, "COMMAND", "GETKEYS", *cmd)


def test_ties_under_count(places):
    """Members at one point: all of them in Redis's order; fewer (COUNT)
    the same members — their order is where rampart knowingly differs
    (docs/proxy.md: Redis's partial quicksort reorders ties)."""
    c = places
    both(c, "GEOADD", "geo:ties", *[x for m in "abcdefgh" for x in ("0", "0", m)])
    both(c, "GEOSEARCH", "geo:ties", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "COUNT", "8")
    both(c, "GEOSEARCH", "geo:ties", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km")
    got = replies_of(c, "GEOSEARCH", "geo:ties", "FROMLONLAT", "0", "0", "BYRADIUS", "1", "km", "COUNT", "3")
    assert all(len(g) == 3 for g in got), got


def raw_exchange(client, payload):
    """Sends payload on a fresh socket to client's server; the bytes answered
    within a second of the last."""
    kw = client.connection_pool.connection_kwargs
    with socket.create_connection((kw["host"], kw["port"]), timeout=5) as s:
        s.sendall(payload)
        s.settimeout(1)
        out = b""
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                out += chunk
        except socket.timeout:
            pass
        return out


def test_resp3_coordinates(places):
    """GEOPOS and WITHCOORD answer RESP3 doubles in Redis's long double form."""
    payload = (b"*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n"
               b"*4\r\n$6\r\nGEOPOS\r\n$10\r\ngeo:sicily\r\n$7\r\nPalermo\r\n$3\r\nnot\r\n"
               b"*7\r\n$9\r\nGEOSEARCH\r\n$10\r\ngeo:sicily\r\n$10\r\nFROMMEMBER\r\n$7\r\nCatania\r\n"
               b"$8\r\nBYRADIUS\r\n$2\r\n10\r\n$2\r\nkm\r\n")
    redis_bytes, rampart_bytes = (raw_exchange(c, payload) for c in places)
    # Past HELLO's map (server, version, ... differ): the two replies.
    tail = b"*2\r\n*2\r\n,13.36138933897018433\r\n,38.11555639549629859\r\n_\r\n*1\r\n$7\r\nCatania\r\n"
    assert redis_bytes.endswith(tail), redis_bytes
    assert rampart_bytes.endswith(tail), rampart_bytes
