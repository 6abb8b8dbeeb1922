"""The report job's artifact folder is untrusted: only `**/sweep/**/*.json` below it, no symlink (refused, named),
nothing outside it, each file size-capped and validated as a RunResult of this schema version."""

from __future__ import annotations

import json
import os

import pytest

from bot.base.errors import SqlcanaryError
from bot.base.results import RunMeta, RunResult, RunSetting, summarize, write_run
from bot.base.untrusted import FolderLimits
from bot.sweep import files
from bot.sweep.files import find_runs, read_artifact_runs, read_untrusted_run


def leg(name: str = "a") -> RunResult:
    meta = RunMeta(suite="s", suite_hash="h", setting=RunSetting(name=name, index=1))
    return RunResult(meta=meta, summary=summarize(()), cases=())


@pytest.fixture
def artifacts(tmp_path):
    root = tmp_path / "artifacts"
    write_run(root / "sqlcanary-sweep-a-1" / "sweep" / "a" / "shard-1-of-1.json", leg())
    (root / "sqlcanary-sweep-a-1" / "report.html").write_text("<p>not a run</p>")
    (root / "other" / "run.json").parent.mkdir(parents=True)
    (root / "other" / "run.json").write_text("{}")  # not under a sweep/ folder: not read
    return root


def test_only_sweep_runs_are_read(artifacts):
    runs = read_artifact_runs(artifacts)
    assert [p for p, _ in runs] == ["sqlcanary-sweep-a-1/sweep/a/shard-1-of-1.json"]
    assert runs[0][1].meta.setting == RunSetting(name="a", index=1)


def test_a_symlink_anywhere_is_refused_and_named(artifacts, tmp_path):
    secret = tmp_path / "secret.json"
    write_run(secret, leg("b"))
    os.symlink(secret, artifacts / "sqlcanary-sweep-a-1" / "sweep" / "a" / "shard-2-of-2.json")
    with pytest.raises(SqlcanaryError, match=r"shard-2-of-2\.json.*a symbolic link") as err:
        read_artifact_runs(artifacts)
    assert err.value.exit_code == 2
    os.remove(artifacts / "sqlcanary-sweep-a-1" / "sweep" / "a" / "shard-2-of-2.json")
    os.symlink(tmp_path, artifacts / "elsewhere")  # a linked folder: never walked into
    with pytest.raises(SqlcanaryError, match="elsewhere.*a symbolic link"):
        find_runs(artifacts)


def test_a_file_outside_the_folder_is_refused(artifacts, tmp_path):
    outside = tmp_path / "outside" / "sweep" / "x.json"
    write_run(outside, leg())
    with pytest.raises(SqlcanaryError, match="outside the artifact folder"):
        read_untrusted_run(artifacts / ".." / "outside" / "sweep" / "x.json", artifacts)


@pytest.mark.parametrize(
    "content,words",
    [
        (lambda d: {**d, "schema_version": 99}, "schema_version 99 is not 1"),
        (lambda d: {**d, "schema_version": "<b>1</b>"}, "schema_version 'str' is not 1"),
        (
            lambda d: {**d, "meta": {**d["meta"], "\n::warning::x": 1}},
            "not a valid RunResult: meta. ::warning::x",
        ),
        (lambda d: {**d, "cases": [{"id": "x"}]}, "not a valid RunResult: cases.0.status"),
    ],
)
def test_a_tampered_run_is_refused(artifacts, content, words):
    path = artifacts / "sqlcanary-sweep-a-1" / "sweep" / "a" / "shard-1-of-1.json"
    path.write_text(json.dumps(content(json.loads(path.read_text()))))
    with pytest.raises(SqlcanaryError) as err:
        read_artifact_runs(artifacts)
    assert words in str(err.value) and "sweep/a/shard-1-of-1.json" in str(err.value)
    assert "\n" not in str(err.value)


def test_an_oversize_file_is_refused_before_it_is_parsed(artifacts, monkeypatch):
    monkeypatch.setattr(files, "LIMITS", FolderLimits(file_bytes=100))
    with pytest.raises(SqlcanaryError, match="over the 100 bytes allowed per file"):
        read_artifact_runs(artifacts)


def test_a_missing_or_empty_folder_is_refused(tmp_path):
    with pytest.raises(SqlcanaryError, match="not a folder"):
        read_artifact_runs(tmp_path / "nothing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(SqlcanaryError, match="no sweep run"):
        read_artifact_runs(tmp_path / "empty")
