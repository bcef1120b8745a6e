"""A supervisor-style team: a front-desk agent transfers to a billing and a tech-support agent.

The customer has two problems. The supervisor hands the conversation to ``billing``, which
refunds a duplicate charge and transfers back; the supervisor then hands it to
``tech_support``, which finds the cause of the sign-outs and answers. ``tech_support`` is made
with :func:`rillet.with_disallow_transfer_to_parent`, so it gets no transfer tool at all.

Each agent that takes over rebuilds its input from the user's question and everything the
team recorded so far: its own messages as they were, other agents' messages rewritten as user
messages starting ``For context:``. The transcript ends with what ``tech_support``'s model
was sent, so you can see that rewriting.

Run it: ``rillet demo team`` or ``python -m rillet.examples.team`` (``--fast``, ``--no-color``).
"""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from rillet._native import Message
from rillet.examples import call, run_example, scripted

if TYPE_CHECKING:
    from rich.console import Console

    from rillet.chatmodel import ChatModelAgent
    from rillet.examples.demo import Renderer
    from rillet.flow import FlowAgent

__all__ = ["QUESTION", "build_team", "main"]

QUESTION = "I was charged twice for invoice INV-1042, and since yesterday the app signs me out every few minutes."


def lookup_invoice(invoice_id: str) -> str:
    """The charges made for an invoice.

    Args:
        invoice_id: the invoice's number, e.g. "INV-1042".
    """
    if invoice_id != "INV-1042":
        raise ValueError(f"no invoice {invoice_id!r}")
    return "INV-1042: 49.00 EUR charged twice (card ending 4242), 1 refundable"


def refund_charge(invoice_id: str, amount: float) -> str:
    """Refunds one charge of an invoice to the card it was made with.

    Args:
        invoice_id: the invoice's number.
        amount: how much to refund, in the invoice's currency.
    """
    return f"refunded {amount:.2f} EUR on {invoice_id}; arrives in 3-5 business days"


def recent_sign_outs(hours: int) -> str:
    """The account's recent sign-outs and why each happened.

    Args:
        hours: how far back to look.
    """
    return f"14 sign-outs in {hours} h, all 'token expired'; device clock 9 min behind"


def _transfer(to: str, i: int) -> Message:
    return Message.assistant("", [call(0, "transfer_to_agent", json.dumps({"agent_name": to}), f"call_t{i}")])


def build_team(delay: float = 0.0) -> tuple[FlowAgent, ChatModelAgent]:
    """The team's root (the supervisor's flow wrapper, what a Runner runs) and the
    ``tech_support`` agent, whose model records what it was sent."""
    from rillet.chatmodel import ChatModelAgent
    from rillet.flow import set_sub_agents, with_disallow_transfer_to_parent
    from rillet.tools import tool

    supervisor = ChatModelAgent(
        name="supervisor",
        description="The front desk: routes each request to the right specialist.",
        instruction="You are the front desk of Acme Cloud support. Route every part of a request.",
        model=scripted([_transfer("billing", 1), _transfer("tech_support", 2)], delay),
    )
    billing = ChatModelAgent(
        name="billing",
        description="Invoices, charges and refunds.",
        instruction="You handle billing. Fix what you can, then hand back anything else.",
        model=scripted(
            [
                Message.assistant("", [call(0, "lookup_invoice", '{"invoice_id": "INV-1042"}')]),
                Message.assistant("", [call(0, "refund_charge", '{"invoice_id": "INV-1042", "amount": 49.0}')]),
                Message.assistant(
                    "Done: the duplicate 49.00 EUR charge on INV-1042 is refunded (3-5 business days)",
                    [call(0, "transfer_to_agent", '{"agent_name": "supervisor"}', "call_t3")],
                ),
            ],
            delay,
        ),
        tools=[tool(lookup_invoice), tool(refund_charge)],
    )
    tech_support = ChatModelAgent(
        name="tech_support",
        description="Sign-in problems, app errors and outages.",
        instruction="You solve technical problems. Check the account before answering.",
        model=scripted(
            [
                Message.assistant("", [call(0, "recent_sign_outs", '{"hours": 24}')]),
                "The sign-outs come from your phone's clock, 9 minutes behind: sign-in "
                "tokens look expired as soon as they arrive. Turn on automatic date and "
                "time, sign in once more, and it stops. Your refund is on its way too.",
            ],
            delay,
        ),
        tools=[tool(recent_sign_outs)],
    )
    root = set_sub_agents(supervisor, [billing, with_disallow_transfer_to_parent(tech_support)])
    return root, tech_support


def main(*, delay: float = 0.02, streaming: bool = True, color: bool | None = None) -> int:
    """Runs the team on the customer's question and prints the transcript."""
    from rillet.examples.demo import Wrapped

    root, tech_support = build_team(delay)

    def epilogue(console: Console, r: Renderer) -> None:
        calls = tech_support.model.calls  # type: ignore[attr-defined]
        if not calls:
            return
        console.print("\n[bold]What tech_support's model was sent[/] [dim](system prompt left out)[/]")
        for m in calls[0].messages:
            if m.role == "system":
                continue
            out = Wrapped(console, "    ", "")
            console.print(f"  [dim]{m.role}:[/]")
            out.write(m.content)
            out.end()

    title = "[bold]rillet demo team[/]: a supervisor transfers to specialists (offline)"
    return run_example(title, QUESTION, root, delay=delay, streaming=streaming, color=color, epilogue=epilogue)


if __name__ == "__main__":
    from rillet.cli import main as cli

    raise SystemExit(cli(["demo", "team", *sys.argv[1:]]))
