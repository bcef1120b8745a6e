"""Artifact services (memory and files) and the Runner's RunConfig: streaming mode, input blobs
saved as artifacts (run and run_live)."""

from __future__ import annotations

import asyncio
import base64
import os
from pathlib import Path
from typing import Any

import pytest
from rillet import ChatModelAgent, ContentPart, Message, RunConfig, Runner, ScriptedModel
from rillet.errors import ArtifactError
from rillet.live import Blob, LiveRequestQueue, ScriptedLiveModel
from rillet.runner.artifacts import ArtifactService, BlobSavingSource, FileArtifactService, InMemoryArtifactService


def services(tmp_path: Path) -> list[ArtifactService]:
    return [InMemoryArtifactService(), FileArtifactService(tmp_path / "artifacts")]


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "files"])
def test_versions_load_list_delete(tmp_path: Path, kind: int) -> None:
    svc = services(tmp_path)[kind]

    async def main() -> None:
        assert await svc.load("s1", "photo.png") is None
        assert await svc.save("s1", "photo.png", Blob(b"v0", "image/png")) == 0
        assert await svc.save("s1", "photo.png", Blob(b"v1", "image/png")) == 1
        assert await svc.save("s1", "notes.txt", Blob(b"n", "text/plain")) == 0
        assert await svc.save("s2", "photo.png", Blob(b"other", "image/png")) == 0
        assert await svc.load("s1", "photo.png") == Blob(b"v1", "image/png")
        assert await svc.load("s1", "photo.png", 0) == Blob(b"v0", "image/png")
        assert await svc.load("s1", "photo.png", 7) is None
        assert await svc.versions("s1", "photo.png") == [0, 1]
        assert await svc.list_names("s1") == ["notes.txt", "photo.png"]
        await svc.delete("s1", "photo.png")
        await svc.delete("s1", "never.saved")
        assert await svc.list_names("s1") == ["notes.txt"]
        assert await svc.versions("s1", "photo.png") == []
        assert await svc.load("s2", "photo.png") == Blob(b"other", "image/png")
        assert await svc.list_names("nobody") == []

    asyncio.run(main())
    assert isinstance(svc, ArtifactService)


@pytest.mark.parametrize("kind", [0, 1], ids=["memory", "files"])
@pytest.mark.parametrize(
    "session_id,name",
    [
        ("s", "../escape"),
        ("s", "a/b"),
        ("s", "a\\b"),
        ("s", ".."),
        ("s", "."),
        ("s", ""),
        ("..", "x"),
        ("s/t", "x"),
        ("s", "bell\x07"),
        ("s", "x" * 256),
    ],
)
def test_names_that_are_not_plain_file_names_are_refused(tmp_path: Path, kind: int, session_id: str, name: str) -> None:
    svc = services(tmp_path)[kind]
    with pytest.raises(ArtifactError, match="not a plain file name|non-empty str"):
        asyncio.run(svc.save(session_id, name, Blob(b"x", "text/plain")))
    assert not (tmp_path / "escape").exists()


def test_files_survive_the_service_and_stay_under_root(tmp_path: Path) -> None:
    root = tmp_path / "artifacts"
    asyncio.run(FileArtifactService(root).save("s", "a.bin", Blob(b"\x00\xff", "application/octet-stream")))
    again = FileArtifactService(root)
    assert asyncio.run(again.load("s", "a.bin")) == Blob(b"\x00\xff", "application/octet-stream")
    assert sorted(p.name for p in (root / "s" / "a.bin").iterdir()) == ["0.bin", "0.json"]
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "s" / "link")
    with pytest.raises(ArtifactError, match="leads outside"):
        asyncio.run(again.save("s", "link", Blob(b"x", "text/plain")))
    assert list(outside.iterdir()) == []


def test_a_version_half_written_is_not_seen(tmp_path: Path) -> None:
    svc = FileArtifactService(tmp_path)
    asyncio.run(svc.save("s", "a", Blob(b"whole", "text/plain")))
    (tmp_path / "s" / "a" / "1.bin").write_bytes(b"half")  # a writer died before its .json
    assert asyncio.run(svc.versions("s", "a")) == [0]
    assert asyncio.run(svc.load("s", "a")) == Blob(b"whole", "text/plain")
    assert asyncio.run(svc.save("s", "a", Blob(b"next", "text/plain"))) == 2  # 1 stays claimed


def test_run_config_is_checked() -> None:
    with pytest.raises(ValueError, match="'none' or 'sse'"):
        RunConfig(streaming_mode="bidi")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a bool"):
        RunConfig(save_input_blobs_as_artifacts="yes")  # type: ignore[arg-type]
    agent = ChatModelAgent("a", model=ScriptedModel(["hi"]))
    with pytest.raises(ValueError, match="no artifact_service.*InMemoryArtifactService"):
        Runner(agent).query("x", run_config=RunConfig(save_input_blobs_as_artifacts=True))
    with pytest.raises(TypeError, match="rillet.RunConfig"):
        Runner(agent).query("x", run_config={"streaming_mode": "sse"})  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "runner_streams,mode,streamed", [(False, "sse", True), (True, "none", False), (True, None, True)]
)
def test_streaming_mode_overrides_the_runner(runner_streams: bool, mode: Any, streamed: bool) -> None:
    agent = ChatModelAgent("a", model=ScriptedModel(["hello there"]))
    (ev,) = list(Runner(agent, streaming=runner_streams).query("x", run_config=RunConfig(streaming_mode=mode)))
    assert ev.message_output is not None and ev.message_output.is_streaming is streamed
    assert ev.message_output.get_message().content == "hello there"


def test_input_blobs_of_a_run_are_saved_and_named_to_the_model() -> None:
    svc = InMemoryArtifactService()
    model = ScriptedModel(["got it"])
    png = base64.b64encode(b"\x89PNG").decode()
    msg = Message.user(
        ["look:", ContentPart(image_url=f"data:image/png;base64,{png}"), ContentPart(image_url="https://x/y.png")]
    )
    runner = Runner(ChatModelAgent("a", model=model), artifact_service=svc)
    events = list(runner.run([msg], session_id=None, run_config=RunConfig(save_input_blobs_as_artifacts=True)))
    assert [e.error for e in events] == [None]
    sent = model.calls[0].messages[-1].user_input_multi_content
    assert sent[0].text == "look:" and sent[2].url == "https://x/y.png"  # a link is not a blob
    name = sent[1].text.removeprefix("Uploaded file: ").removesuffix(". It is saved into artifacts")
    assert name.startswith("input_") and name.endswith("_0")
    (scope,) = {s for s, _ in svc._data}
    assert asyncio.run(svc.load(scope, name)) == Blob(b"\x89PNG", "image/png")
    assert msg.user_input_multi_content[1].url == f"data:image/png;base64,{png}"  # the caller's message is untouched


def test_a_bad_data_url_ends_the_run_with_an_error_event() -> None:
    msg = Message.user([ContentPart(image_url="data:image/png;base64,@@@")])
    runner = Runner(ChatModelAgent("a", model=ScriptedModel(["x"])), artifact_service=InMemoryArtifactService())
    (ev,) = list(runner.run([msg], run_config=RunConfig(save_input_blobs_as_artifacts=True)))
    assert isinstance(ev.error, ArtifactError) and "not valid base64" in str(ev.error)


def test_live_realtime_blobs_are_saved_before_the_model_gets_them(tmp_path: Path) -> None:
    svc = FileArtifactService(tmp_path)
    model = ScriptedLiveModel(["heard you"], chunk_size=100)
    agent = ChatModelAgent("v", model=ScriptedModel([]), live_model=model)
    q = LiveRequestQueue()
    q.send_realtime(Blob(b"one", "audio/pcm"))
    q.send_realtime(Blob(b"two", "audio/pcm"))
    q.send_activity_end()
    q.close()
    run = Runner(agent, artifact_service=svc).run_live(
        queue=q, session_id="call-7", run_config=RunConfig(save_input_blobs_as_artifacts=True)
    )
    assert [e.error for e in run] == [None, None, None]
    names = asyncio.run(svc.list_names("call-7"))
    assert len(names) == 2 and names[0].startswith("live_") and names[0].endswith("_0")
    assert [asyncio.run(svc.load("call-7", n)) for n in names] == [Blob(b"one", "audio/pcm"), Blob(b"two", "audio/pcm")]
    assert [r[0] for r in model.connections[0].received] == ["blob", "blob", "activity_end", "close"]


def test_a_blob_being_saved_when_its_agent_ends_reaches_the_next_one() -> None:
    # a live Sequential cancels the ending agent's sender, maybe while it saves a frame
    inside, release, done = asyncio.Event(), asyncio.Event(), asyncio.Event()

    class Slow(InMemoryArtifactService):
        async def save(self, session_id: str, name: str, blob: Blob) -> int:
            inside.set()
            await release.wait()  # still saving when the taker is cancelled
            n = await super().save(session_id, name, blob)
            done.set()
            return n

    svc = Slow()

    async def main() -> tuple[Any, list[str]]:
        q = LiveRequestQueue()
        source = BlobSavingSource(q, svc, "s", "live_r")
        q.send_realtime(Blob(b"frame", "audio/pcm"))
        taker = asyncio.create_task(source.get())
        await inside.wait()
        taker.cancel()
        await asyncio.gather(taker, return_exceptions=True)
        release.set()
        q.close()
        blob = (await source.get()).blob
        await done.wait()  # the save goes on after its taker was cancelled
        return blob, source.saved

    blob, saved = asyncio.run(asyncio.wait_for(main(), 5))
    assert blob == Blob(b"frame", "audio/pcm") and saved == ["live_r_0"]
    assert asyncio.run(svc.load("s", "live_r_0")) == blob  # saved once all the same
