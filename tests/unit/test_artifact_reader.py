"""The untrusted artifact folder `mode: post` reads (bot.github.artifact) and how its legs add up to one check
(bot.modes.leg_merge): every refusal names the file and the reason, before anything could be posted."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.base.errors import ConfigError, ResultFileError
from bot.base.results import CaseResult, RunMeta, RunResult, summarize, write_run
from bot.cases.selection import shard_of
from bot.compare.comparison import compare_runs
from bot.config.gate_settings import GateSettings
from bot.github.artifact import ArtifactLimits, read_artifacts
from bot.github.leg_payload import PAYLOAD_SCHEMA_VERSION, LegFiles, LegPayload, write_leg_payload
from bot.modes.leg_merge import combine_legs

HEAD, BASE = "a" * 40, "b" * 40
IDS = [f"case{i}" for i in range(8)]
BROKEN = {"case1", "case6"}  # pass on base, fail on head


def _run(side: str, ids: list[str], shard: str | None) -> RunResult:
    cases = tuple(
        CaseResult(
            id=i,
            status="failed" if side == "head" and i in BROKEN else "passed",
            category="c",
            source=f"cases/all.yml:{n + 1}",
        )
        for n, i in enumerate(ids)
    )
    meta = RunMeta(suite="tiny", suite_hash="h", shard=shard, git_sha=HEAD if side == "head" else BASE)
    return RunResult(meta=meta, summary=summarize(cases), cases=cases)


def make_leg(
    folder: Path, *, shard: str | None = None, pr: int = 1, sha: str = HEAD, gate=GateSettings()
) -> Path:
    ids = IDS if shard is None else [i for i in IDS if shard_of(i, int(shard[2:])) == int(shard[0])]
    base, head = _run("base", ids, shard), _run("head", ids, shard)
    folder.mkdir(parents=True, exist_ok=True)
    write_run(folder / "head.json", head)
    write_run(folder / "base.json", base)
    (folder / "comparison.json").write_text(compare_runs(base, head, gate=gate).model_dump_json())
    payload = LegPayload(
        schema_version=PAYLOAD_SCHEMA_VERSION,
        kind="sqlcanary-check",
        pr_number=pr,
        head_sha=sha,
        base_sha=BASE,
        shard=shard,
        files=LegFiles(head="head.json", base="base.json", comparison="comparison.json"),
    )
    write_leg_payload(folder, payload)
    return folder


def _edit(path: Path, change) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def _refused(root: Path, match: str, **limits: int) -> ResultFileError:
    with pytest.raises(ResultFileError, match=match) as err:
        read_artifacts(root, ArtifactLimits(**limits))
    return err.value


def test_a_leg_folder_or_one_subfolder_per_leg_is_read_and_validated(tmp_path):
    [leg] = read_artifacts(make_leg(tmp_path / "one"))
    assert leg.name == "." and leg.payload.pr_number == 1 and len(leg.head.cases) == len(IDS)
    make_leg(tmp_path / "many" / "sqlcanary-1", shard="1/2")
    make_leg(tmp_path / "many" / "sqlcanary-2", shard="2/2")
    (tmp_path / "many" / "other-artifact").mkdir()  # not a leg: ignored
    (tmp_path / "many" / "other-artifact" / "report.html").write_text("<p>")
    assert [leg.name for leg in read_artifacts(tmp_path / "many")] == ["sqlcanary-1", "sqlcanary-2"]


def test_a_symlink_anywhere_is_refused_naming_it(tmp_path):
    root = tmp_path / "art"
    make_leg(root / "leg")
    os.symlink("/etc/passwd", root / "leg" / "head2.json")
    err = _refused(root, "symbolic link")
    assert err.path == "leg/head2.json"
    (root / "leg" / "head2.json").unlink()
    (root / "leg" / "head.json").unlink()
    os.symlink(tmp_path / "elsewhere.json", root / "leg" / "head.json")
    _refused(root, "symbolic link")


def test_an_oversize_file_or_folder_is_refused_before_it_is_read(tmp_path):
    root = make_leg(tmp_path / "art")
    with open(root / "huge.json", "wb") as fh:
        fh.truncate(40 * 1024 * 1024)  # sparse: 40 MiB on paper, nothing on disk
    err = _refused(root, "over the 33554432 bytes allowed per file")
    assert err.path == "huge.json"
    (root / "huge.json").unlink()
    _refused(root, "the folder holds over 1000 bytes", total_bytes=1000)
    _refused(root, "more than 2 files", entries=2)


def test_a_wrong_schema_version_or_a_bad_field_is_refused(tmp_path):
    root = make_leg(tmp_path / "art")
    _edit(root / "head.json", lambda d: d.update(schema_version=99))
    assert _refused(root, "schema_version 99 is not 1").path == "head.json"
    root = make_leg(tmp_path / "art2")
    _edit(root / "github-payload.json", lambda d: d.update(schema_version=1))
    assert _refused(root, "schema_version 1 is not 2").path == "github-payload.json"
    root = make_leg(tmp_path / "art3")
    _edit(root / "github-payload.json", lambda d: d.update(head_sha="not a sha"))
    _refused(root, "not a valid LegPayload: head_sha")
    root = make_leg(tmp_path / "art4")
    _edit(root / "comparison.json", lambda d: d.update(verdict="great", run_this="rm -rf /"))
    _refused(root, "not a valid Comparison")
    root = make_leg(tmp_path / "art5")
    (root / "head.json").write_text("[" * 100_000)
    _refused(root, "not JSON")


def test_a_file_named_outside_the_leg_folder_is_refused(tmp_path):
    root = make_leg(tmp_path / "art" / "leg")
    (tmp_path / "art" / "secret.json").write_text("{}")
    for name in ("../secret.json", "/etc/passwd", ".", "head.json/../../secret.json"):
        _edit(root / "github-payload.json", lambda d, n=name: d["files"].update(head=n))
        err = _refused(tmp_path / "art", "a path outside its folder")
        assert err.path == "leg/github-payload.json"


def test_an_artifact_naming_another_pull_request_or_commit_is_refused(tmp_path):
    legs = read_artifacts(make_leg(tmp_path / "a", pr=7))
    with pytest.raises(ResultFileError, match="names pull request #7, this run is for #1"):
        combine_legs(legs, pr_number=1, head_sha=HEAD, out_dir=tmp_path)
    legs = read_artifacts(make_leg(tmp_path / "b", sha="c" * 40))
    with pytest.raises(ResultFileError, match="names commit cccccccccccc"):
        combine_legs(legs, pr_number=1, head_sha=HEAD, out_dir=tmp_path)


def test_two_shards_merge_into_the_unsharded_check(tmp_path):
    whole = combine_legs(
        read_artifacts(make_leg(tmp_path / "whole")), pr_number=1, head_sha=HEAD, out_dir=tmp_path
    )
    make_leg(tmp_path / "art" / "s1", shard="1/2")
    make_leg(tmp_path / "art" / "s2", shard="2/2")
    merged = combine_legs(read_artifacts(tmp_path / "art"), pr_number=1, head_sha=HEAD, out_dir=tmp_path)
    assert {shard_of(i, 2) for i in IDS} == {1, 2}  # both shards hold cases
    assert merged.comparison.verdict == whole.comparison.verdict == "regressions"
    assert merged.comparison.reasons == whole.comparison.reasons
    assert [(c.id, c.transition) for c in merged.comparison.cases] == [
        (c.id, c.transition) for c in whole.comparison.cases
    ]
    assert merged.head.meta.shard is None and len(merged.head.cases) == len(IDS)


def test_a_missing_or_duplicate_shard_or_disagreeing_gates_are_named(tmp_path):
    make_leg(tmp_path / "a" / "s1", shard="1/2")
    with pytest.raises(ConfigError, match=r"shard\(s\) 2 of 2 are missing"):
        combine_legs(read_artifacts(tmp_path / "a"), pr_number=1, head_sha=HEAD, out_dir=tmp_path)
    make_leg(tmp_path / "b" / "s1", shard="1/2")
    make_leg(tmp_path / "b" / "s1-again", shard="1/2")
    with pytest.raises(ResultFileError, match="shard 1/2 is also in s1/head.json"):
        combine_legs(read_artifacts(tmp_path / "b"), pr_number=1, head_sha=HEAD, out_dir=tmp_path)
    make_leg(tmp_path / "c" / "s1", shard="1/2")
    make_leg(tmp_path / "c" / "s2", shard="2/2", gate=GateSettings(max_regressions=5))
    with pytest.raises(ResultFileError, match="gate settings differ") as err:
        combine_legs(read_artifacts(tmp_path / "c"), pr_number=1, head_sha=HEAD, out_dir=tmp_path)
    assert err.value.path == "s2/comparison.json"
