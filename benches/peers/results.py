"""The peer scripts' JSON lines -> one table of medians and ratios to rillet, in the terminal
(rich), in docs/benchmarks.md (Markdown between marker comments), and as PNG plots.

A result line whose counts differ from the expected ones (``"ok": false``) did not do the work
it was timed for: it is shown as FAILED with the counts, never as a time, and takes no ratio.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

WORKLOADS = ("react", "workflow", "approval", "import", "construct", "concurrent", "http")
# workloads run only when asked (--workloads eval), by the frameworks that have them
EXTRA_WORKLOADS = ("eval",)
# what a result line may carry besides its time, shown as a row of its own
MEMORY = {"bytes_per_agent": "B/agent", "bytes_per_run": "B/run"}
BEGIN, END = "<!-- peers:begin -->", "<!-- peers:end -->"
SECTION = "## rillet and its peers, one command"


@dataclass
class Outcome:
    """One framework's run: its versions, the lines its script printed, and what went wrong
    (not installed, timed out, exited with an error), if anything."""

    name: str
    versions: dict[str, str] = field(default_factory=dict)
    lines: list[dict[str, Any]] = field(default_factory=list)
    problem: str = ""


@dataclass(frozen=True)
class Cell:
    """One framework's entry for one row: a median, or why there is none."""

    value: float | None = None
    failed: str = ""  # FAILED counts, an error, or a skip reason

    @property
    def loud(self) -> bool:
        return self.failed.startswith(("FAILED", "error"))


Row = tuple[str, str, str]  # workload, variant, unit


def parse_lines(text: str) -> list[dict[str, Any]]:
    """The JSON objects of a script's stdout, one per line; anything else is dropped."""
    found = []
    for line in text.splitlines():
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict) and "workload" in obj:
            found.append(obj)
    return found


def cells(lines: list[dict[str, Any]]) -> dict[Row, Cell]:
    """Each line -> its row's cell (memory figures get rows of their own)."""
    out: dict[Row, Cell] = {}
    for line in lines:
        workload, variant = str(line["workload"]), str(line.get("variant", "-"))
        if "error" in line:
            out[workload, variant, ""] = Cell(failed=f"error: {line['error']}")
            continue
        if "skipped" in line:
            out[workload, variant, ""] = Cell(failed=f"skipped: {line['skipped']}")
            continue
        unit = str(line.get("unit", ""))
        if not line.get("ok", False):
            failed = f"FAILED: expected {line.get('expected')}, saw {line.get('seen')}"
            out[workload, variant, unit] = Cell(failed=failed)
            for key, mem_unit in MEMORY.items():
                if key in line:
                    out[workload, variant, mem_unit] = Cell(failed=failed)
            continue
        median = line.get("median")
        out[workload, variant, unit] = Cell(value=float(median) if median is not None else None)
        for key, mem_unit in MEMORY.items():
            if key in line:
                out[workload, variant, mem_unit] = Cell(value=float(line[key]))
    return out


@dataclass
class Table:
    """Rows (workload, variant, unit) by framework; rillet first, then the peers as given."""

    frameworks: list[str]
    rows: list[Row]
    grid: dict[tuple[Row, str], Cell]

    def ratio(self, row: Row, name: str) -> float | None:
        """``name``'s median over rillet's (time or bytes): above 1, rillet is faster or smaller."""
        mine, base = self.grid.get((row, name)), self.grid.get((row, "rillet"))
        if mine is None or base is None or mine.value is None or base.value is None or base.value <= 0:
            return None
        return mine.value / base.value

    def failures(self) -> list[str]:
        return [f"{name} {row[0]}/{row[1]}: {c.failed}" for (row, name), c in self.grid.items() if c.loud]


def _find(grid: dict[tuple[Row, str], Cell], row: Row, name: str) -> Cell | None:
    """A cell, also under the unit-less key errors and skips are filed under."""
    return grid.get((row, name)) or grid.get(((row[0], row[1], ""), name))


def build(outcomes: list[Outcome]) -> Table:
    ran = [o for o in outcomes if not o.problem or o.lines]
    grid: dict[tuple[Row, str], Cell] = {}
    seen: list[Row] = []
    for o in ran:
        for row, cell in cells(o.lines).items():
            grid[row, o.name] = cell
            if row not in seen:
                seen.append(row)

    # an error or skip has no unit: show it on the rows the other frameworks measured
    def covers(timed: Row, row: Row) -> bool:
        return bool(timed[2]) and timed[0] == row[0] and row[1] in ("-", timed[1])

    rows = [r for r in seen if r[2] or not any(covers(s, r) for s in seen)]
    for (row, name), cell in list(grid.items()):
        for r in rows:
            if not row[2] and covers(r, row) and (r, name) not in grid:
                grid[r, name] = cell
    order = {w: i for i, w in enumerate(WORKLOADS + EXTRA_WORKLOADS)}
    rows.sort(key=lambda r: (order.get(r[0], len(order)), seen.index(r)))
    names = sorted((o.name for o in ran), key=lambda n: (n != "rillet", n))
    return Table(names, rows, {k: v for k, v in grid.items() if k[0] in rows})


def fmt(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.1f}" if value >= 10 else f"{value:.2f}"


def text(table: Table, row: Row, name: str) -> str:
    """A cell as text: ``median (ratio x)``, or its failure."""
    cell = _find(table.grid, row, name)
    if cell is None:
        return "-"
    if cell.value is None:
        return cell.failed or "-"
    ratio = table.ratio(row, name)
    return fmt(cell.value) + (f" ({ratio:.2f}x)" if ratio is not None and name != "rillet" else "")


def markdown(table: Table, outcomes: list[Outcome]) -> str:
    """The table in Markdown, then each framework's status line (versions, or what went wrong)."""
    head = ["workload", "variant", "unit", *table.frameworks]
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table.rows:
        cells = [text(table, row, n).replace("|", "\\|") for n in table.frameworks]
        out.append("| " + " | ".join([*row, *cells]) + " |")
    out += ["", "| framework | versions | status |", "|---|---|---|"]
    for o in sorted(outcomes, key=lambda o: (o.name != "rillet", o.name)):
        versions = ", ".join(f"{k} {v}" for k, v in o.versions.items()) or "-"
        out.append(f"| {o.name} | {versions} | " + (f"**{o.problem}**" if o.problem else "ran") + " |")
    return "\n".join(out)


def render(table: Table, outcomes: list[Outcome]) -> Any:
    """The table for the terminal (a rich renderable); failures in bold red."""
    from rich.console import Group  # rich is a runtime dependency, loaded only by the CLI
    from rich.table import Table as RichTable
    from rich.text import Text

    grid = RichTable(title="medians (peer / rillet in brackets: above 1, rillet is faster or smaller)")
    for col in ("workload", "variant", "unit", *table.frameworks):
        # a narrow terminal folds a cell onto more lines rather than cutting its digits
        grid.add_column(col, justify="right" if col in table.frameworks else "left", overflow="fold")
    for row in table.rows:
        shown = []
        for name in table.frameworks:
            cell = _find(table.grid, row, name)
            shown.append(Text(text(table, row, name), style="bold red" if cell is not None and cell.loud else ""))
        grid.add_row(*row, *shown)
    status = RichTable(title="frameworks")
    for col in ("framework", "versions", "status"):
        status.add_column(col)
    for o in sorted(outcomes, key=lambda o: (o.name != "rillet", o.name)):
        versions = ", ".join(f"{k} {v}" for k, v in o.versions.items()) or "-"
        status.add_row(o.name, versions, Text(o.problem or "ran", style="bold red" if o.problem else ""))
    failed = [Text(f, style="bold red") for f in table.failures()]
    return Group(status, grid, *failed)


def write_section(path: Path, body: str) -> None:
    """Replaces what is between the marker comments of ``path`` with ``body``; a page without
    them gets the section, markers and all, at its end."""
    page = path.read_text(encoding="utf-8")
    block = f"{BEGIN}\n{body.strip()}\n{END}"
    pattern = re.compile(re.escape(BEGIN) + ".*?" + re.escape(END), re.DOTALL)
    if pattern.search(page):
        page = pattern.sub(lambda _: block, page, count=1)
    else:
        page = page.rstrip("\n") + f"\n\n{SECTION}\n\n{block}\n"
    path.write_text(page, encoding="utf-8")


def plot(table: Table, folder: Path) -> list[Path]:
    """PNGs: per-step time of the react variants, and memory per concurrent run, by framework."""
    import matplotlib  # the bench extra's plotting library, needed only for --plots

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # after choosing the file-only backend

    folder.mkdir(parents=True, exist_ok=True)
    made = []
    charts = [
        (
            "react-per-step.png",
            "ReAct step time (µs, log scale)",
            [r for r in table.rows if r[0] == "react" and r[2] == "us/step"],
            True,
        ),
        (
            "concurrent-memory.png",
            "memory per waiting run (bytes)",
            [r for r in table.rows if r[0] == "concurrent" and r[2] == "B/run"],
            False,
        ),
    ]
    for filename, title, rows, log in charts:
        if not rows:
            continue
        fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(rows) * len(table.frameworks) / 3), 4))
        width = 0.8 / len(table.frameworks)
        for j, name in enumerate(table.frameworks):
            values = [
                (c.value if (c := table.grid.get((r, name))) is not None and c.value is not None else 0.0) for r in rows
            ]
            ax.bar([i + j * width for i in range(len(rows))], values, width, label=name)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(rows))], [r[1] for r in rows], rotation=20, ha="right")
        ax.set_title(title)
        if log:
            ax.set_yscale("log")
        ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.0, 1.0))  # beside the bars, not over them
        fig.tight_layout()
        fig.savefig(folder / filename, dpi=100)
        plt.close(fig)
        made.append(folder / filename)
    return made
