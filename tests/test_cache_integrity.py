"""Stored answers carry a checksum: a byte changed inside one is a miss (asked again) with a warning naming the cache,
and a cache file written before checksums is migrated in place."""
import multiprocessing as mp
import re
import sqlite3
import warnings

import pytest

from mmresearch.cache import CacheIntegrityWarning, CachedModel, ResponseCache, cache_key
from mmresearch.core import Request, Response, user
from mmresearch.fakeserver import FakeChatServer
from mmresearch.models import OpenAIChatModel

REQS = [Request([user(f"question {i}")]) for i in range(20)]


def _flip(db, old: bytes, new: bytes) -> None:
    "Replace the one occurrence of `old` in the database file by `new` (same length), as a disk fault or hand edit would."
    raw = db.read_bytes()
    assert len(old) == len(new) and raw.count(old) == 1, raw.count(old)
    db.write_bytes(raw.replace(old, new))


@pytest.mark.parametrize("new", [b'"echo[0 images]: question 9"', b'"echo[0 images]: question \xff"'])
def test_a_changed_byte_in_a_stored_answer_is_a_miss_with_a_warning(tmp_path, new):
    db = tmp_path/"responses.sqlite"
    with FakeChatServer() as srv:
        model = OpenAIChatModel("fake", base_url=srv.base_url, api_key_env=None)
        first = CachedModel(model, ResponseCache(db))
        texts = [o.text for o in first.generate(REQS)]
        first.cache.close()                                  # the last connection checkpoints the WAL into the file
        _flip(db, b'"echo[0 images]: question 7"', new)
        again = CachedModel(model, ResponseCache(db))
        with pytest.warns(CacheIntegrityWarning, match=re.escape(str(db))):
            second = again.generate(REQS)
        assert [o.text for o in second] == texts             # "question 9" was not served for question 7
        assert (again.stats.hits, again.stats.calls, srv.calls) == (19, 1, 21)
        third = CachedModel(model, ResponseCache(db))
        with warnings.catch_warnings():
            warnings.simplefilter("error")                   # the recomputed row is whole again
            assert [o.text for o in third.generate(REQS)] == texts
        assert third.stats.hits == 20 and srv.calls == 21


OLD_SCHEMA = """
CREATE TABLE responses (key TEXT PRIMARY KEY, model TEXT NOT NULL, request TEXT NOT NULL,
                        response TEXT NOT NULL, created REAL NOT NULL);
CREATE TABLE errors (id INTEGER PRIMARY KEY AUTOINCREMENT, key TEXT NOT NULL, model TEXT NOT NULL,
                     request TEXT NOT NULL, kind TEXT NOT NULL, message TEXT NOT NULL, created REAL NOT NULL);
"""


def _old_cache(db, n: int) -> None:
    "A cache file as mmresearch wrote it before checksums (the schema and row format of that version)."
    conn = sqlite3.connect(db)
    conn.executescript(OLD_SCHEMA)
    conn.executemany("INSERT INTO responses VALUES (?,?,?,?,?)",
                     [(cache_key("m", f"r{i}"), "m", f"r{i}",
                       f'{{"text":"old {i}","prompt_tokens":null,"completion_tokens":null,"latency_s":0.0,"finish_reason":null,"error":null}}', 0.0)
                      for i in range(n)])
    conn.commit(); conn.close()


def _open_and_read(db: str, n: int) -> int:
    return len(ResponseCache(db).get_many(cache_key("m", f"r{i}") for i in range(n)))


def test_a_cache_without_checksums_is_migrated_once_even_by_many_processes(tmp_path):
    db = tmp_path/"old.sqlite"
    _old_cache(db, 500)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with mp.get_context("fork").Pool(4) as pool:            # four processes open the old file at once
            assert pool.starmap(_open_and_read, [(str(db), 500)] * 4) == [500] * 4   # rows trusted once, all served
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT COUNT(*) FROM responses WHERE digest IS NULL").fetchone()[0] == 0
    conn.close()
    _flip(db, b'"text":"old 42"', b'"text":"old 24"')           # from now on, migrated rows are checked too
    with pytest.warns(CacheIntegrityWarning, match=re.escape(str(db))):
        found = ResponseCache(db).get_many([cache_key("m", "r42"), cache_key("m", "r24")])
    assert [r.text for r in found.values()] == ["old 24"]


def test_a_row_written_without_a_digest_after_migration_is_a_miss(tmp_path):
    cache = ResponseCache(tmp_path/"c.sqlite")
    cache.put_many([("k1", "m", "r1", Response("checked"))])
    cache._db().execute("INSERT INTO responses (key, model, request, response, created) VALUES ('k2', 'm', 'r2', ?, 0)",
                        ('{"text":"unchecked","error":null}',))
    with pytest.warns(CacheIntegrityWarning):
        assert list(cache.get_many(["k1", "k2"])) == ["k1"]
