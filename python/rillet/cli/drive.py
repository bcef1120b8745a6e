"""Running an agent from the command line: its events shown as they arrive (the demo's
renderer, or ``--json`` lines), and its interrupts answered from ``--approve``/``--reject``
or at the prompt (rillet.cli.prompt), then resumed, until the run ends."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from rich.markup import escape

from rillet.cli.jsonout import dumps, event_json
from rillet.cli.prompt import (
    CTRL_C,
    CTRL_C_STATUS,
    NO_ANSWER,
    Decisions,
    Pending,
    announce,
    ask,
    pending_of_checkpoint,
    pending_of_event,
    resume_hint,
    warn_unused,
)

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.data.events import AgentEvent
    from rillet.examples.demo import ToolErrors
    from rillet.run.run_handle import RunIterator
    from rillet.runner import Runner

__all__ = [
    "CTRL_C",
    "CTRL_C_STATUS",
    "NO_ANSWER",
    "Decisions",
    "Driver",
    "Pending",
    "abandon",
    "announce",
    "ask",
    "pending_of_checkpoint",
    "pending_of_event",
    "resume_hint",
    "warn_unused",
]


_ABANDON_WAIT = 5.0  # seconds a run left with Ctrl-C may take to end (its claim released) before the exit


def abandon(*runs: RunIterator[Any], wait: float = _ABANDON_WAIT) -> None:
    """Closes the runs (RunIterators) left with Ctrl-C and waits, ``wait`` seconds at most, for
    them to end before the process exits (rillet.run.run_handle.close_and_wait): a resume
    releases its claim on its checkpoint, a session run its hold on the session."""
    from rillet.run.run_handle import close_and_wait  # the run layer, loaded when a run is left

    close_and_wait(runs, wait)


class Driver:
    """Shows a run (text or JSON lines) and answers its interrupts until it ends."""

    def __init__(
        self,
        command: str,
        runner: Runner,
        console: Console,
        *,
        as_json: bool,
        decisions: Decisions,
        verbose: bool = False,
        tool_errors: ToolErrors | None = None,
    ) -> None:
        """``tool_errors``: the observer given to ``runner``, whose failed tool calls are shown
        (their type and message; with ``verbose``, their tracebacks, on stderr)."""
        from rillet.examples.demo import Renderer

        self.command = command
        self.runner = runner
        self.console = console
        self.as_json = as_json
        self.decisions = decisions
        self.verbose = verbose
        self.renderer = Renderer(console, run_paths=True, tree=True, verbose=verbose, tool_errors=tool_errors)
        self.errors = 0
        self.asked: list[Pending] = []  # every interrupt the run stopped at, for a flag that matched none
        self.ctrl_c = False  # the prompt was left with Ctrl-C: ask nothing more
        self.defer_warnings = False  # a chat: a flag may match a later turn, so warn at its end
        self.warned: set[str] = set()  # the flags already named as matching nothing
        self.answered: list[Pending] = []  # the interrupts of the latest resume (its checkpoint keeps them)

    def show(self, events: RunIterator[Any]) -> list[Pending]:
        """Shows ``events``; the interrupts the run stopped at (empty: it ended). Ctrl-C while
        it runs closes the run (its claim released) before the KeyboardInterrupt goes on."""
        try:
            return self._show(events)
        except KeyboardInterrupt:  # Ctrl-C while it runs (at a prompt, ask() takes it)
            abandon(events)
            if not self.as_json:
                self.console.print()
            raise

    def _show(self, events: Iterable[AgentEvent]) -> list[Pending]:
        pending: list[Pending] = []
        for ev in events:
            if self.as_json:
                print(dumps(event_json(ev)), flush=True)
                if self.verbose and ev.error is not None:  # the line carries its type and message
                    self.renderer.explain(ev.error)
            else:
                self.renderer.event(ev)
                if ev.output is not None and ev.output.customized_output is not None:
                    # an agent's typed result (output_type, a custom agent's output): shown, as --json does
                    self.console.print(
                        f"[cyan]output:[/] {escape(dumps(ev.output.customized_output))}", highlight=False
                    )
            self.errors += ev.error is not None
            if ev.action is not None and ev.action.interrupted is not None:
                pending = pending_of_event(ev.action.interrupted.interrupt_contexts)
        if self.as_json:
            self._json_tool_errors()
        else:
            self.renderer.flush_tool_errors()
        return pending

    def _json_tool_errors(self) -> None:
        """With --json, a failed tool call's traceback (--verbose) on stderr; the JSON line has
        its result, the error text the model was sent."""
        errors = self.renderer.tool_errors
        if errors is None:
            return
        for _, error in list(errors.errors.values()):
            if self.verbose:
                self.renderer.explain(error)
        errors.errors.clear()

    def answer(self, pending: Sequence[Pending], *, prompt: bool = True) -> dict[str, Any]:
        """Each interrupt's answer from the flags, else the prompt (not with --json); an
        interrupt without one is left out."""
        targets: dict[str, Any] = {}
        self.asked.extend(p for p in pending if p not in self.asked)
        for p in pending:
            if not self.as_json:
                announce(self.console, p)
            data = self.decisions.decide(p)
            if data is NO_ANSWER and prompt and not self.as_json and not self.ctrl_c:
                data = ask(self.console, p)
                if data is CTRL_C:
                    self.ctrl_c = True
            if data is not NO_ANSWER and data is not CTRL_C:
                targets[p.id] = data
        return targets

    def follow(self, checkpoint_id: str, pending: list[Pending], stopped: Callable[[list[Pending]], int]) -> int:
        """Answers and resumes until the run ends (0, or 1 if it ended in an error);
        ``stopped(unanswered)`` gives the exit status when an interrupt got no answer."""
        while pending:
            targets = self.answer(pending)
            missing = [p for p in pending if p.id not in targets]
            if missing:
                self.warn_unused(missing)  # a mistyped --approve is why the run stops: say so first
                return stopped(missing)
            if not self.as_json:
                self.console.print(f"\n[dim]resuming checkpoint {escape(checkpoint_id)}[/]")
            self.answered = list(pending)  # what a resume left with Ctrl-C still waits for
            pending = self.show(self.runner.resume(checkpoint_id, targets=targets))
        return self.finish()

    def finish(self) -> int:
        if not self.defer_warnings:
            self.warn_unused([])
        return 1 if self.errors else 0

    def warn_unused(self, waiting: Sequence[Pending]) -> None:
        """Names each flag that matched no interrupt (once), with those that wait (or that the
        run asked)."""
        warn_unused(self.command, self.decisions, waiting, self.asked, self.warned)
